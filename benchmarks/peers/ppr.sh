#!/usr/bin/env bash
# PageRank parity and speed, in one run on the same graphs and reset vectors:
# gleaner graphops.PersonalizedPageRank vs igraph personalized_pagerank (prpack,
# Debian python3-igraph) and networkx pagerank (Debian python3-networkx + scipy),
# on the 2WikiMultihopQA mentions graph and the MetaQA partial KB; then gleaner's
# local push against exact PPR. Fails if gleaner and igraph differ by more than 1e-8.
# Usage: bash benchmarks/peers/ppr.sh   (REPS=5 NX_RESETS=5 by default)
#        bash benchmarks/peers/ppr.sh --parity   (make test: igraph parity only; skips, with a
#        message, where the Debian packages cannot be installed)
set -euo pipefail
PARITY=0
[ "${1:-}" = "--parity" ] && { PARITY=1; REPS=1; NX_RESETS=0; }
cd "$(dirname "$0")/../.."
export PATH="$PATH:/usr/local/go/bin"
REPS=${REPS:-5} NX_RESETS=${NX_RESETS:-5}
SHARED=../shared/datasets
for d in hipporag_2wikimultihopqa metaqa_partial_kb; do
  [ -d "$SHARED/$d" ] || { echo "skipping PageRank peers: $SHARED/$d not found"; exit 0; }
done
need=()
/usr/bin/python3 -c 'import igraph' 2>/dev/null || need+=(python3-igraph)
[ $PARITY = 1 ] || /usr/bin/python3 -c 'import networkx, scipy' 2>/dev/null || need+=(python3-networkx python3-scipy)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing ${need[*]}" >&2
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"; } >&2; then
    [ $PARITY = 1 ] && { echo "PageRank parity skipped: could not install ${need[*]}"; exit 0; }
    exit 1
  fi
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/gleaner" ./cmd/gleaner
go build -o "$work/pprpeer" ./benchmarks/peers/pprpeer
G="$work/gleaner --log-level warn"
$G import 2wiki "$SHARED/hipporag_2wikimultihopqa" -o "$work/2wiki" >&2
$G index "$work/2wiki" -o "$work/2wiki.idx" >&2
$G graph build --kind mentions --index "$work/2wiki.idx" >&2
mkdir -p "$work/wiki" "$work/metaqa"
"$work/pprpeer" export -index "$work/2wiki.idx" -kind mentions -out "$work/wiki"
"$work/pprpeer" kb -kb "$SHARED/metaqa_partial_kb/kb_partial.txt" -out "$work/metaqa"

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(date -u +%F)"
printf '%-22s %7s %7s %12s %12s %12s %9s %9s %14s\n' graph nodes edges "gleaner ms" "igraph ms" "networkx ms" "igraph/g" "nx/g" "max|g-igraph|"
status=0
for name in wiki metaqa; do
  "$work/pprpeer" run -work "$work/$name" -damping 0.5 -reps "$REPS"
  /usr/bin/python3 benchmarks/peers/ppr_peer.py "$work/$name" 0.5 "$REPS" "$NX_RESETS" > "$work/$name/peer.json"
  /usr/bin/python3 - "$work/$name" "$name" <<'PY' || status=1
import json, sys
w, name = sys.argv[1], sys.argv[2]
g, p = json.load(open(f"{w}/gleaner.json")), json.load(open(f"{w}/peer.json"))
gm = sorted(g["MedianS"])[len(g["MedianS"]) // 2]
label = {"wiki": "2wiki mentions", "metaqa": "metaqa partial KB"}[name]
print(f"{label:<22} {g['N']:>7} {g['Edges']:>7} {gm*1e3:>12.3f} {p['igraph_median_s']*1e3:>12.3f} {p['networkx_median_s']*1e3:>12.3f} "
      f"{p['igraph_median_s']/gm:>8.1f}x {p['networkx_median_s']/gm:>8.1f}x {p['max_abs_diff_igraph']:>14.2e}")
print(f"  ({p['resets']} reset vectors for gleaner and igraph {p['igraph']}, {p['networkx_resets']} for networkx {p['networkx']};"
      f" max |gleaner - networkx| {p['max_abs_diff_networkx']:.2e})")
pm = sorted(g["PlanMedianS"])[len(g["PlanMedianS"]) // 2]
print(f"  PPRPlan (what ppr, nexusrag and linearrag solve with): {pm*1e3:.3f} ms, igraph/plan {p['igraph_median_s']/pm:.1f}x, "
      f"core {g['PlanCore']} of {g['N']} vertices, built once in {g['PlanBuildS']*1e3:.1f} ms, max |plan - gleaner| {g['PlanMaxDiff']:.2e}")
sys.exit(0 if p["max_abs_diff_igraph"] <= 1e-8 and g["PlanMaxDiff"] <= 1e-8 else 1)
PY
done
[ $PARITY = 1 ] && { [ $status = 0 ] && echo "PageRank parity with igraph: ok (max |difference| <= 1e-8)"; exit $status; }
echo
echo "local push vs exact PPR (damping 0.5, the 10 sparse reset vectors), metaqa partial KB:"
"$work/pprpeer" push -work "$work/metaqa"
echo "local push vs exact PPR, 2wiki mentions graph:"
"$work/pprpeer" push -work "$work/wiki"
exit $status
