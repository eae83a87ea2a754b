#!/usr/bin/env bash
# The fleet figures of benchmarks/RESULTS.md ("A fleet of replicas on one log"): three runs of
# `benchmarks/live fleet` on the 2Wiki corpus (imported to data/2wiki when missing), each with a
# 3-node NATS cluster and two replicas in-process on loopback. About 15 minutes on 2 cores; the last
# run publishes as fast as the log acknowledges and waits for the replicas to apply it all.
set -euo pipefail
cd "$(dirname "$0")/../.."
corpus=${CORPUS:-data/2wiki}
[ -d "$corpus" ] || bin/gleaner import 2wiki ../shared/datasets/hipporag_2wikimultihopqa -o "$corpus"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/livebench" ./benchmarks/live
run() { echo "== $1; $(date -u)"; shift; "$work/livebench" fleet -corpus "$corpus" -work "$work/run" "$@"; }
run "steady 300 passages/s, 60 s, 4 publishers" -duration 60s -writers 4 -batch 50 -ingest-rate 300
run "steady 300 passages/s, 30 s, the log's leader stopped for the middle third" -duration 30s -writers 4 -batch 50 -ingest-rate 300 -kill-leader
run "as fast as acknowledged, 10 s, 8 publishers" -duration 10s -writers 8 -batch 50
