#!/usr/bin/env bash
# KET-RAG (issue: ketrag), reproducible from a clean checkout. Usage:
#   bash benchmarks/ketrag/run.sh [work-dir]      # default work dir: /tmp/gleaner-ketrag
# Imports KET-RAG's two evaluation sets (../shared/datasets), chunks them as
# KET-RAG does (one document, cl100k ℓ 1200 / overlap 100, 150-token
# pieces), indexes the pieces, builds the kNN chunk graph and the KET-RAG
# structures with the local extractor (timed, with peak memory), then writes
# one table per run under benchmarks/ketrag/results/.
#
# No setting is tuned here: every method runs on its defaults (KET-RAG's
# β 0.8, θ 0.5, λ 12,000; the quality issue's ppr and fastinsight), so all
# 500 questions of each set are reported; the θ and selection runs are
# ablations, not choices.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
W=${1:-/tmp/gleaner-ketrag}
D=${GLEANER_DATASETS:-$ROOT/../shared/datasets}
G=$ROOT/bin/gleaner
OUT=$ROOT/benchmarks/ketrag/results
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

prepare() { # name dataset-folder
  local name=$1 src=$2
  rm -rf "$W/$name-lines" "$W/$name" "$W/$name.idx"
  q import ketrag "$src" -o "$W/$name-lines"
  timed "$BUILD" "$name: gleaner chunk --documents corpus ($(wc -l < "$W/$name-lines/nodes.jsonl") lines)" "$G" --log-level error chunk "$W/$name-lines" --documents corpus -o "$W/$name"
  timed "$BUILD" "$name: gleaner index ($(wc -l < "$W/$name/nodes.jsonl") pieces)" "$G" --log-level error index "$W/$name" -o "$W/$name.idx"
  timed "$BUILD" "$name: gleaner graph build --kind knn" "$G" --log-level error graph build --kind knn --index "$W/$name.idx"
  timed "$BUILD" "$name: gleaner graph build --kind ketrag (local, β 0.8, pagerank)" "$G" --log-level error graph build --kind ketrag --index "$W/$name.idx"
}
prepare musique "$D/ketrag_musique"
prepare 2wiki "$D/ketrag_2wikimultihopqa"
cat "$BUILD"

E() { local out=$1; shift; echo "== $out: gleaner eval $*"; q eval "$@" | tee "$OUT/$out.txt"; }
CTX="--context-budget 12000,2000 --cutoffs 10 --columns context_answer_recall@12000,context_answer_recall@2000,context_tokens@12000,context_tokens@2000,answer_recall@10"
for name in musique 2wiki; do
  I="--index $W/$name.idx --graph-kind knn"
  q graph stats --kind ketrag --index "$W/$name.idx" | tee "$OUT/cost-$name.txt"
  E "context-$name" $I $CTX --method ketrag,bm25,vector,ppr,fastinsight
  E "context-$name-keyword-only" $I $CTX --method ketrag --theta 0
  E "context-$name-skeleton-only" $I $CTX --method ketrag --theta 1
done

# KET-RAG-U: the skeleton from a uniform 80 % (seed 42) instead of PageRank's
rm -rf "$W/2wiki-u.idx"; cp -r "$W/2wiki.idx" "$W/2wiki-u.idx"
timed "$BUILD" "2wiki: gleaner graph build --kind ketrag (local, β 0.8, uniform)" "$G" --log-level error graph build --kind ketrag --selection uniform --index "$W/2wiki-u.idx"
E context-2wiki-uniform --index "$W/2wiki-u.idx" $CTX --method ketrag
cat "$BUILD"
