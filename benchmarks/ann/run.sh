#!/usr/bin/env bash
# HNSW: gleaner against FAISS IndexHNSWFlat in one run (issue: scale, item 3);
# with kind ivf, gleaner's inverted file against FAISS IndexIVFFlat.
# Usage:
#   bash benchmarks/ann/run.sh [passages] [scale-work-dir] [hnsw|ivf]
# passages: the vector count (default 100000). The vectors are LSA vectors of
# the scale corpus; the LSA model is the 10⁵-passage scale index's, built
# first by benchmarks/scale (about 5 minutes) when scale-work-dir (default /tmp/gleaner-scale)
# lacks it. At 10⁶ the hnsw run takes about 30 minutes and 6 GiB on 2 cores, the ivf run
# about 8 (3 of them making the vectors).
# Writes benchmarks/ann/results/<kind>-<passages>.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
n="${1:-100000}"
work="${2:-/tmp/gleaner-scale}"
kind="${3:-hnsw}"
peer=benchmarks/ann/faiss_peer.py
[ "$kind" = ivf ] && peer=benchmarks/ann/faiss_ivf_peer.py
/usr/bin/python3 -c 'import faiss, numpy' 2>/dev/null || {
  sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get install -y python3-faiss python3-numpy >/dev/null
}
if [ ! -f "$work/index-100000/manifest.json" ]; then
  make -s build
  go run ./benchmarks/scale -gleaner bin/gleaner -n 100000 -work "$work" # its table is printed, not written
fi
mkdir -p benchmarks/ann/results
go run ./benchmarks/ann -kind "$kind" -peer "$peer" -index "$work/index-100000" -n "$n" -work "$work/ann" \
  -out "benchmarks/ann/results/$kind-$n.md"
