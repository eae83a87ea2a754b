#!/usr/bin/env bash
# Effectiveness of every method × first stage (issue: quality), reproducible
# from a clean checkout. Usage:
#   bash benchmarks/quality/run.sh [work-dir]        # default work dir: /tmp/gleaner-quality
# It imports and indexes the shared datasets (../shared/datasets), builds the
# graphs, then writes one table per run under benchmarks/quality/results/.
#
# Declared dev data (used for every choice of default; never reported as a
# result): SciFact's train queries and the first 200 2Wiki questions.
# Reported: SciFact test (300) and 2Wiki questions 201–1,000 (--skip 200).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
W=${1:-/tmp/gleaner-quality}
D=${GLEANER_DATASETS:-$ROOT/../shared/datasets}
G=$ROOT/bin/gleaner
OUT=$ROOT/benchmarks/quality/results
[ -d "$D" ] || { echo "datasets not found at $D (set GLEANER_DATASETS)"; exit 1; }
make -s build
mkdir -p "$W" "$OUT"
q() { "$G" --log-level error "$@"; }

prepare() { # name format src [import flags] ; graph kind
  local name=$1 fmt=$2 src=$3 kind=$4; shift 4
  [ -f "$W/$name/nodes.jsonl" ] || q import "$fmt" "$src" -o "$W/$name" "$@"
  if [ ! -f "$W/$name.idx/manifest.json" ]; then
    q index "$W/$name" -o "$W/$name.idx"
    q graph build --kind "$kind" --index "$W/$name.idx"
  fi
}
prepare 2wiki 2wiki "$D/hipporag_2wikimultihopqa" mentions
prepare scifact beir "$D/beir_scifact" knn
[ -f "$W/scifact-train/queries.jsonl" ] || q import beir "$D/beir_scifact" --split train -o "$W/scifact-train"
prepare ketrag_musique ketrag "$D/ketrag_musique" knn
prepare ketrag_2wiki ketrag "$D/ketrag_2wikimultihopqa" knn
prepare medical graphrag-bench "$D/graphrag_bench_medical" knn

E() { local out=$1; shift; echo "== $out: gleaner eval $*"; q eval "$@" | tee "$OUT/$out.txt"; }
RANK="--cutoffs 2,5,10 --columns recall@2,recall@5,recall@10,ndcg@10,tr@10"

# --- dev: the choices (hybrid fusion and weight; PPR seeds, weights and damping; default first stage)
DEV2="--index $W/2wiki.idx --graph-kind mentions --limit 200 $RANK"
DEVS="--index $W/scifact.idx --queries $W/scifact-train/queries.jsonl $RANK"
for f in "--hybrid-fusion rrf" "--hybrid-weight 0.5" "--hybrid-weight 0.7" "--hybrid-weight 0.8" "--hybrid-weight 0.9"; do
  tag=$(echo "$f" | tr -d ' -' | sed 's/hybrid//g')
  E "dev-2wiki-hybrid-$tag" $DEV2 --method hybrid $f
  E "dev-scifact-hybrid-$tag" $DEVS --method hybrid $f
done
for d in 0.5 0.85; do for w in score rank; do for n in 3 5 10; do
  E "dev-2wiki-ppr-d$d-$w-$n" $DEV2 --method ppr --first-stage bm25 --damping $d --ppr-seed-weight $w --ppr-seeds $n
  E "dev-scifact-ppr-d$d-$w-$n" $DEVS --method ppr --first-stage bm25 --damping $d --ppr-seed-weight $w --ppr-seeds $n
done; done; done
for s in bm25 vector hybrid; do
  E "dev-2wiki-stage-$s" $DEV2 --method fastinsight,gar,re2,ppr --first-stage $s
  E "dev-scifact-stage-$s" $DEVS --method fastinsight,gar,re2,ppr --first-stage $s
done

# --- reported: every method × first stage
T2="--index $W/2wiki.idx --graph-kind mentions --skip 200"
TS="--index $W/scifact.idx $RANK"
for s in bm25 vector hybrid; do
  E "test-2wiki-stage-$s" $T2 $RANK --method fastinsight,gar,re2,ppr --first-stage $s
  E "test-scifact-stage-$s" $TS --method fastinsight,gar,re2,ppr --first-stage $s
done
E test-2wiki-baselines $T2 $RANK --method bm25,vector,hybrid,ppr-bm25,re2-vector
E test-scifact-baselines $TS --method bm25,vector,hybrid,ppr-bm25,re2-vector
for d in 0.5 0.85; do
  E "test-2wiki-ppr-d$d" $T2 $RANK --method ppr --damping $d
  E "test-2wiki-pprdense-d$d" $T2 $RANK --method ppr --ppr-reset dense --damping $d
  E "test-scifact-ppr-d$d" $TS --method ppr --damping $d
  E "test-scifact-pprdense-d$d" $TS --method ppr --ppr-reset dense --damping $d
done

# --- answer recall on the answer-only sets (defaults: first stage bm25)
for set in ketrag_musique ketrag_2wiki medical; do
  E "answers-$set" --index "$W/$set.idx" --queries "$W/$set/queries.jsonl" --method bm25,ppr,fastinsight,gar --cutoffs 5,10 --columns answer_recall@5,answer_recall@10
done
E answers-2wiki-test $T2 --method bm25,ppr,fastinsight,gar --cutoffs 5,10 --columns answer_recall@5,answer_recall@10
