#!/usr/bin/env bash
# Scale benchmark (issue: scale). Usage:
#   bash benchmarks/scale/run.sh [sizes] [work-dir]
# sizes: comma-separated passage counts (default 10000,100000); work-dir
# holds the generated corpora and indexes (default /tmp/gleaner-scale).
# Writes benchmarks/scale/results/table.md and p50.svg.
set -euo pipefail
cd "$(dirname "$0")/../.."
make -s build
go run ./benchmarks/scale -gleaner bin/gleaner -n "${1:-10000,100000}" -work "${2:-/tmp/gleaner-scale}" \
  -out benchmarks/scale/results
