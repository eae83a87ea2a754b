#!/usr/bin/env bash
# An A/B of query latency between two gleaner revisions on one machine in one run: both binaries
# evaluate the same methods on the same data (each on an index it built), alternating round by round
# so that drift (thermal,
# other load) hits both alike; the script prints each method's p50 per binary (the median over the
# rounds of each round's p50) and the ratio, and compares their results: TREC runs byte-identical,
# else the same rankings, else how many queries rank differently and whether the metrics agree. Each
# binary builds its own index, and the prose NER's tagger sums scores in Go's random map order, so a
# Tri-Graph can differ by an entity from one build to the next (nexusrag and linearrag then differ in
# the last digits of some scores).
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
import json, statistics, sys
w, rounds, sha = sys.argv[1], int(sys.argv[2]), sys.argv[3]
p50, first = {"a": {}, "b": {}}, {}
for r in range(1, rounds + 1):
    for side in "ab":
        rep = json.load(open(f"{w}/r{r}-{side}.json"))
        for m in rep["methods"]:
            p50[side].setdefault(m["method"], []).append(m["latency"]["median_ms"])
            if r == 1:
                first[side, m["method"]] = m

def ranked(path):  # query -> node ids in rank order, and the file's lines
    lines = open(path).read().splitlines()
    out = {}
    for l in lines:
        q, _, doc, rank, *_ = l.split()
        out.setdefault(q, []).append((int(rank), doc))
    return {q: [d for _, d in sorted(v)] for q, v in out.items()}, lines

def compare(m):
    a, b = first["a", m], first["b", m]
    (ra, la), (rb, lb) = ranked(a["run_file"]), ranked(b["run_file"])
    if la == lb:
        return "identical runs"
    if ra == rb:
        return "same rankings, scores differ"
    same = a["metrics"] == b["metrics"]
    moved = sum(ra.get(q) != rb.get(q) for q in set(ra) | set(rb))
    return f"{moved} rankings differ; metrics {'equal' if same else 'DIFFER'}"

print(f"A = {sha[:12]}, B = HEAD; p50 ms, median of {rounds} alternating rounds")
print(f"{'method':>14} {'A p50':>9} {'B p50':>9} {'B/A':>6}  results")
for m in p50["a"]:
    a, b = statistics.median(p50["a"][m]), statistics.median(p50["b"][m])
    print(f"{m:>14} {a:9.3f} {b:9.3f} {b / a:6.3f}  {compare(m)}")
PY
