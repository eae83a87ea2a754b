#!/usr/bin/env bash
# The GPU check, in two halves (the lent machine has a GPU and nvcc but no Go
# toolchain or network; build here, carry the binaries, run there):
#
#   bash benchmarks/device/run.sh --prepare   # here: builds bin/device/cuda.test with -tags cuda
#                                              # against Debian's CUDA 11.8 headers (make cuda-check installs them)
#   bash benchmarks/device/run.sh             # there (device tool: carry bin/device): writes $OUT/*.txt
#
# There it runs the conformance suite on the GPU (kerneltest.RunAll on the cuda backend, every op
# against its float64 reference) and the op benchmarks on cuda and on cpu (cuda's BenchmarkOps: the
# same binary, so the ratio is one run's), each under its own timeout so one failure still leaves the
# other's results. Only the cuda package builds with -tags cuda: gorgonia (head training) needs cuDNN
# under that tag, so the gleaner CLI and the benchmarks package cannot yet.
set -uo pipefail
cd "$(dirname "$0")/../.."
B=bin/device

if [ "${1:-}" = "--prepare" ]; then
  set -e
  command -v nvcc >/dev/null || bash cuda/check.sh   # installs the toolkit (headers, libcuda stub) when missing
  mkdir -p "$B"
  export CGO_LDFLAGS="-L/usr/lib/x86_64-linux-gnu/stubs"  # link against the driver stub; the GPU machine has the driver
  go test -c -tags cuda -o "$B/cuda.test" ./cuda/
  ls -la "$B"
  exit 0
fi

OUT=${OUT:-/tmp/gleaner-device}
mkdir -p "$OUT"
[ -x "$B/cuda.test" ] || { echo "no $B/cuda.test: run 'bash benchmarks/device/run.sh --prepare' here and carry bin/device" | tee "$OUT/error.txt"; exit 1; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1; nproc; } > "$OUT/machine.txt"
run() { # name timeout-seconds command…
  local name=$1 t=$2; shift 2
  echo "== $name: $*"
  timeout "$t" "$@" > "$OUT/$name.txt" 2>&1
  echo "rc=$?" >> "$OUT/$name.txt"
  tail -5 "$OUT/$name.txt"
}
run conformance 180 "$B/cuda.test" -test.v -test.run Conformance
run bench 240 "$B/cuda.test" -test.run '^$' -test.bench Ops -test.benchtime 20x
ls -la "$OUT"
