#!/usr/bin/env bash
# An A/B of query latency between two gleaner revisions on one machine in one run: both binaries
# evaluate the same methods on the same data (each on an index it built), alternating round by round
# so that drift (thermal,
# other load) hits both alike; the script prints each method's p50 per binary (the median over the
# rounds of each round's p50) and the ratio, and checks that the two give the same rankings
# (their TREC runs byte-identical).
#
#   bash benchmarks/ab/run.sh [BASE_REV]     # default BASE_REV: HEAD~1; ROUNDS=5 LIMIT=300
#
# Data: 2WikiMultiHopQA from ../shared/datasets (the README's 2Wiki setup: mentions graph and Tri-Graph),
# indexed once per binary under bin/ab/ (an older revision may read an older index
# format). Needs git and Go; works from a clean checkout.
set -euo pipefail
cd "$(dirname "$0")/../.."
BASE=${1:-HEAD~1}
ROUNDS=${ROUNDS:-5}
LIMIT=${LIMIT:-300}
METHODS=${METHODS:-bm25,vector,ppr,fastinsight,gar,re2,nexusrag,linearrag}
D=../shared/datasets/hipporag_2wikimultihopqa
W=bin/ab
[ -d "$D" ] || { echo "ab: $D is absent"; exit 1; }
mkdir -p "$W"
base_sha=$(git rev-parse --verify "$BASE^{commit}")
if [ ! -x "$W/gleaner-$base_sha" ]; then
  wt=$(mktemp -d)
  git worktree add -q --detach "$wt" "$base_sha"
  (cd "$wt" && go build -o "$OLDPWD/$W/gleaner-$base_sha" ./cmd/gleaner)
  git worktree remove --force "$wt"
fi
go build -o "$W/gleaner-head" ./cmd/gleaner
A=$W/gleaner-$base_sha B=$W/gleaner-head
q() { "$1" --log-level error "${@:2}"; }
[ -d "$W/data" ] || q "$B" import 2wiki "$D" -o "$W/data"
for side in a b; do
  G=$A; [ $side = b ] && G=$B
  [ -d "$W/idx-$side" ] && continue
  q "$G" index "$W/data" -o "$W/idx-$side"
  q "$G" graph build --kind mentions --index "$W/idx-$side" >/dev/null
  q "$G" graph build --kind trigraph --index "$W/idx-$side" >/dev/null
done
for r in $(seq 1 "$ROUNDS"); do
  for side in a b; do
    G=$A; [ $side = b ] && G=$B
    q "$G" eval --index "$W/idx-$side" --graph-kind mentions --limit "$LIMIT" --method "$METHODS" \
      --report "$W/r$r-$side.json" --concurrency 1 >/dev/null
  done
done
python3 - "$W" "$ROUNDS" "$base_sha" <<'PY'
import json, statistics, sys, filecmp, os
w, rounds, sha = sys.argv[1], int(sys.argv[2]), sys.argv[3]
p50 = {"a": {}, "b": {}}
for r in range(1, rounds + 1):
    for side in "ab":
        rep = json.load(open(f"{w}/r{r}-{side}.json"))
        for m in rep["methods"]:
            p50[side].setdefault(m["method"], []).append(m["latency"]["median_ms"])
print(f"A = {sha[:12]}, B = HEAD; p50 ms, median of {rounds} alternating rounds")
print(f"{'method':>14} {'A p50':>9} {'B p50':>9} {'B/A':>6}  rankings")
for m in p50["a"]:
    a, b = statistics.median(p50["a"][m]), statistics.median(p50["b"][m])
    fa, fb = f"{w}/r1-a.json", f"{w}/r1-b.json"
    ra = [x for x in json.load(open(fa))["methods"] if x["method"] == m][0].get("run_file")
    rb = [x for x in json.load(open(fb))["methods"] if x["method"] == m][0].get("run_file")
    same = "identical" if ra and rb and os.path.exists(ra) and os.path.exists(rb) and filecmp.cmp(ra, rb, shallow=False) else "DIFFER"
    print(f"{m:>14} {a:9.3f} {b:9.3f} {b / a:6.3f}  {same}")
PY
