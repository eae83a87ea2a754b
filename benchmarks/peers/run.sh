#!/usr/bin/env bash
# Peer comparisons, each in one run on the same input:
#   - exact top-10 flat search: gleaner vs FAISS IndexFlatIP (Debian python3-faiss)
#     and numpy + OpenBLAS sgemm, on a seeded random N x D float32 matrix, at each
#     batch size in BATCHES, beside one streaming read of the matrix (the floor);
#   - quantized top-10 search on the same matrix: gleaner int8 / bf16 with exact
#     rescoring vs FAISS IndexScalarQuantizer SQ8 / fp16, alone and under
#     IndexRefineFlat (the same rescoring);
#   - BM25 top-100 on BEIR SciFact: gleaner vs bleve v2 (BM25, English analyzer,
#     k1 = 0.9, b = 0.4), with both runs scored by `gleaner eval`.
# Usage: bash benchmarks/peers/run.sh   (N=1000000 D=384 REPS=15 BATCHES=1,64 by default;
#        the batch sweep: BATCHES=1,2,4,8,16,32,64,128,256 REPS=5 SQ_MAX_BATCH=16;
#        FAISS's scalar quantizers run at the batches up to SQ_MAX_BATCH)
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PATH:/usr/local/go/bin"
N=${N:-1000000} D=${D:-384} REPS=${REPS:-15} BATCHES=${BATCHES:-1,64} SQ_MAX_BATCH=${SQ_MAX_BATCH:-64}
SHARED=../shared/datasets

need=()
/usr/bin/python3 -c 'import faiss, numpy' 2>/dev/null || need+=(python3-faiss python3-numpy)
[ -e /usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3 ] || need+=(libopenblas0-openmp)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing ${need[*]}" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >&2
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/gleaner" ./cmd/gleaner
go build -o "$work/gleanerpeer" ./benchmarks/peers/gleanerpeer
(cd benchmarks/peers/blevepeer && go build -o "$work/blevepeer" .)

echo "flat search: generating $N x $D and timing gleaner" >&2
"$work/gleanerpeer" flat -dir "$work" -n "$N" -d "$D" -reps "$REPS" -batches "$BATCHES" > "$work/gleaner_flat.json"
echo "flat search: timing FAISS and numpy" >&2
# Debian's OpenBLAS picks its kernels itself when these are unset (see environment notes);
# FAISS runs with passive OpenMP waiting, its fastest setup here.
env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_WAIT_POLICY=passive /usr/bin/python3 benchmarks/peers/flat_peer.py faiss "$work" "$REPS" "$SQ_MAX_BATCH" > "$work/peer_faiss.json"
env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 benchmarks/peers/flat_peer.py numpy "$work" "$REPS" > "$work/peer_numpy.json"
/usr/bin/python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); a.update(json.load(open(sys.argv[2]))); json.dump(a, open(sys.argv[3], "w"))' \
  "$work/peer_faiss.json" "$work/peer_numpy.json" "$work/peer_flat.json"
rm -f "$work"/x.npy

if [ -d "$SHARED/beir_scifact" ]; then
  "$work/gleaner" --log-level warn import beir "$SHARED/beir_scifact" -o "$work/scifact" >&2
  "$work/gleaner" --log-level warn index "$work/scifact" -o "$work/scifact.idx" >&2
  "$work/gleanerpeer" bm25 -index "$work/scifact.idx" -queries "$work/scifact/queries.jsonl" > "$work/gleaner_bm25.json"
  "$work/blevepeer" -corpus "$work/scifact" -work "$work/bleve" -run "$work/bleve.trec" > "$work/bleve_bm25.json"
else
  echo "skipping BM25 peer: $SHARED/beir_scifact not found" >&2
  echo '{"queries":0,"median_s":1}' > "$work/gleaner_bm25.json"; echo '{"median_s":1}' > "$work/bleve_bm25.json"
fi

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(date -u +%F)"
/usr/bin/python3 benchmarks/peers/compare.py "$work"
if [ -d "$work/scifact.idx" ]; then
  echo; echo "effectiveness of both BM25 runs on SciFact (gleaner eval):"
  "$work/gleaner" --log-level warn eval --index "$work/scifact.idx" --method bm25 --run-file "$work/bleve.trec" --k 10
fi
