#!/usr/bin/env bash
# The hostile probe's lock-out attacks against `gleaner serve` on loopback:
# 257 stalled request bodies and 19,000 idle connections (the file limit
# here is 20,000), while one client sends requests one at a time.
#   bash benchmarks/slowclients/run.sh [work-dir]
set -euo pipefail
cd "$(dirname "$0")/../.."
work=${1:-$(mktemp -d)}
make build >/dev/null
bin/gleaner import files examples/wiki -o "$work/wiki" >/dev/null
bin/gleaner index "$work/wiki" -o "$work/idx" 2>/dev/null | tail -1
port=18093
# Without keys (loopback): the attacks then meet only the connection defences;
# with keys, an unauthenticated body is refused before it is read at all.
bin/gleaner serve --index wiki="$work/idx" --addr 127.0.0.1:$port --insecure-no-auth & srv=$!
trap 'kill $srv 2>/dev/null || true' EXIT
for i in $(seq 100); do curl -sf localhost:$port/readyz >/dev/null && break; sleep 0.1; done
ulimit -n "$(ulimit -Hn)"
go run ./benchmarks/slowclients --addr 127.0.0.1:$port --index wiki
curl -s localhost:$port/metrics | grep -E '^gleaner_(connections|body_timeouts|rejected)' || true
