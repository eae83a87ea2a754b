#!/usr/bin/env bash
# NexusRAG and LinearRAG (issue: Tri-Graph methods), reproducible from a
# clean checkout. Usage:
#   bash benchmarks/trigraph/run.sh [work-dir]      # default work dir: /tmp/gleaner-trigraph
# Imports and indexes the shared datasets (../shared/datasets), builds the
# Tri-Graphs (timed, with peak memory), then writes one table per run under
# benchmarks/trigraph/results/.
#
# Declared dev data (every choice: the NER default, δ for the tests; never
# reported as a result): the first 200 2Wiki questions. Reported: 2Wiki
# questions 201–1,000 (--skip 200), ketrag_musique and graphrag_bench_medical.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
W=${1:-/tmp/gleaner-trigraph}
D=${GLEANER_DATASETS:-$ROOT/../shared/datasets}
G=$ROOT/bin/gleaner
OUT=$ROOT/benchmarks/trigraph/results
[ -d "$D" ] || { echo "datasets not found at $D (set GLEANER_DATASETS)"; exit 1; }
make -s build
mkdir -p "$W" "$OUT"
q() { "$G" --log-level error "$@"; }
timed() { # out-file label command… : wall seconds and peak RSS of one command
  local out=$1 label=$2; shift 2
  /usr/bin/time -f "$label: %e s wall, %M KB peak RSS" -a -o "$out" "$@" >/dev/null
}
BUILD=$OUT/build.txt
{ echo "# $(date -u +%F) $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"; } > "$BUILD"

prepare() { # name format src graph-kind [import flags]
  local name=$1 fmt=$2 src=$3 kind=$4; shift 4
  [ -f "$W/$name/nodes.jsonl" ] || q import "$fmt" "$src" -o "$W/$name" "$@"
  rm -rf "$W/$name.idx"
  timed "$BUILD" "$name: gleaner index ($(wc -l < "$W/$name/nodes.jsonl") passages)" "$G" --log-level error index "$W/$name" -o "$W/$name.idx"
  timed "$BUILD" "$name: gleaner graph build --kind $kind" "$G" --log-level error graph build --kind "$kind" --index "$W/$name.idx"
  timed "$BUILD" "$name: gleaner graph build --kind trigraph (--ner both)" "$G" --log-level error graph build --kind trigraph --index "$W/$name.idx"
}
prepare 2wiki 2wiki "$D/hipporag_2wikimultihopqa" mentions
prepare ketrag_musique ketrag "$D/ketrag_musique" knn
prepare medical graphrag-bench "$D/graphrag_bench_medical" knn
cat "$BUILD"

E() { local out=$1; shift; echo "== $out: gleaner eval $*"; q eval "$@" | tee "$OUT/$out.txt"; }
S() { local out=$1; shift; echo "== $out: gleaner graph stats $*"; q graph stats "$@" | tee "$OUT/$out.txt"; }
RANK="--cutoffs 2,5,10 --columns recall@2,recall@5,recall@10,ndcg@10"
Q2=$W/2wiki/queries.jsonl

# --- dev: the entity extractor (prose, titles, both) on the first 200 questions
for n in prose titles both; do
  rm -rf "$W/2wiki-$n.idx"; cp -r "$W/2wiki.idx" "$W/2wiki-$n.idx"
  timed "$BUILD" "2wiki: gleaner graph build --kind trigraph --ner $n" "$G" --log-level error graph build --kind trigraph --ner "$n" --index "$W/2wiki-$n.idx"
  E "dev-2wiki-ner-$n" --index "$W/2wiki-$n.idx" --limit 200 $RANK --method nexusrag,linearrag
  E "dev-2wiki-ner-$n-bm25scores" --index "$W/2wiki-$n.idx" --limit 200 $RANK --method nexusrag,linearrag --passage-scores bm25
  S "dev-2wiki-stats-ner-$n" --kind trigraph --index "$W/2wiki-$n.idx" --queries "$Q2" --limit 200
  rm -rf "$W/2wiki-$n.idx"
done

# --- reported: 2Wiki questions 201–1,000, same index for every method
T2="--index $W/2wiki.idx --graph-kind mentions --skip 200 $RANK"
E test-2wiki $T2 --method bm25,ppr,fastinsight,nexusrag,linearrag
E test-2wiki-bm25scores $T2 --method nexusrag,linearrag --passage-scores bm25
E test-2wiki-tol1e-6 $T2 --method nexusrag,linearrag --tg-tol 1e-6
S test-2wiki-stats --kind trigraph --index "$W/2wiki.idx" --queries "$Q2" --skip 200

# --- answer recall with the dataset presets (bm25, ppr and fastinsight as in the quality issue)
for set in ketrag_musique:musique medical:medical; do
  name=${set%%:*} preset=${set##*:}
  E "answers-$name" --index "$W/$name.idx" --queries "$W/$name/queries.jsonl" --preset "$preset" \
    --method bm25,ppr,fastinsight,nexusrag,linearrag --cutoffs 5,10 --columns answer_recall@5,answer_recall@10
  E "answers-$name-bm25scores" --index "$W/$name.idx" --queries "$W/$name/queries.jsonl" --preset "$preset" \
    --method nexusrag,linearrag --passage-scores bm25 --cutoffs 5,10 --columns answer_recall@5,answer_recall@10
  S "stats-$name" --kind trigraph --index "$W/$name.idx" --queries "$W/$name/queries.jsonl" --preset "$preset"
done
