#!/usr/bin/env bash
# FuseRAG's time to first token (issue: fuseattn) against plain RAG with the
# same evidence, for a random decoder of Llama-3.2-1B's shape (16 layers ×
# 2048, GQA 32/8, vocabulary 128,256; 4.9 GB of float32 weights written once
# to the work dir) with random FuseRAG adapters (LSA evidence states, rank
# 16, memory layers 0, 5, 10, 15). Usage:
#   bash benchmarks/fuserag/ttft.sh [work-dir] [questions]   # default /tmp/gleaner-fuserag, 8
# Questions come from 2Wiki's reported slice (201 on; the first 200 are the
# dev slice); each is answered in text mode, fuserag mode, and fuserag mode
# again with its evidence states cached (fuserag-warm), generating one
# token. Writes results/ttft.txt (medians) and results/ttft-answers.jsonl.
# Random weights: the timings are real, the answers are not.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
W=${1:-/tmp/gleaner-fuserag}
N=${2:-8}
G=$ROOT/bin/gleaner
OUT=$ROOT/benchmarks/fuserag/results
bash "$ROOT/benchmarks/fuserag/run.sh" "$W" >/dev/null   # the index (and the retrieval tables)
[ -f "$W/llama-1b/model.safetensors" ] || "$G" model random --kind llama --shape llama-3.2-1b -o "$W/llama-1b"
[ -f "$W/adapters-1b/adapters.safetensors" ] || "$G" model random --kind fuserag -o "$W/adapters-1b" --decoder "$W/llama-1b" --index "$W/2wiki.idx"
rm -f "$OUT/ttft-answers.jsonl"
{
  echo "# $(date -u +%F) $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); backend cpu"
  "$G" --log-level error answer --index "$W/2wiki.idx" --graph-kind mentions --decoder "$W/llama-1b" --fuserag "$W/adapters-1b" \
    --mode fuserag,text --warm --queries "$W/2wiki/queries.jsonl" --skip 200 --limit "$N" --max-tokens 1 \
    --out "$OUT/ttft-answers.jsonl" 2>&1
} | tee "$OUT/ttft.txt"
