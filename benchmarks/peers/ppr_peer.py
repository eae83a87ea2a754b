#!/usr/bin/python3
"""Peer side of the PageRank comparison: igraph's personalized_pagerank
(prpack) and networkx's pagerank (scipy) on the edges and reset vectors
pprpeer wrote, timed in this process, compared with gleaner's vectors.
Usage: ppr_peer.py WORK DAMPING REPS NX_RESETS"""
import json, sys, time
import igraph

def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]

def load(work):
    with open(f"{work}/edges.tsv") as f:
        n = int(f.readline())
        edges, weights = [], []
        for line in f:
            u, v, w = line.split("\t")
            edges.append((int(u), int(v)))
            weights.append(float(w))
    with open(f"{work}/resets.json") as f:
        resets = json.load(f)
    with open(f"{work}/gleaner.json") as f:
        gleaner = json.load(f)
    return n, edges, weights, resets, gleaner

def main(work, damping, reps, nx_resets):
    n, edges, weights, resets, gl = load(work)
    g = igraph.Graph(n=n, edges=edges, directed=False)
    g.es["weight"] = weights
    ig_times, max_diff = [], 0.0
    for i, r in enumerate(resets):
        ts = []
        for _ in range(reps):
            t = time.perf_counter()
            pr = g.personalized_pagerank(damping=damping, reset=r, weights="weight", directed=False, implementation="prpack")
            ts.append(time.perf_counter() - t)
        ig_times.append(median(ts))
        max_diff = max(max_diff, max(abs(a - b) for a, b in zip(pr, gl["Vectors"][i])))
    if nx_resets == 0:
        nx = None
        nx_times, nx_diff = [], 0.0
        return finish(ig_times, max_diff, nx_times, nx_diff, len(resets), "-")
    import networkx as nx
    G = nx.MultiGraph()
    G.add_nodes_from(range(n))
    G.add_weighted_edges_from((u, v, w) for (u, v), w in zip(edges, weights))
    nx_times, nx_diff = [], 0.0
    for i, r in enumerate(resets[:nx_resets]):
        pers = {v: x for v, x in enumerate(r) if x > 0}
        t = time.perf_counter()
        pr = nx.pagerank(G, alpha=damping, personalization=pers, dangling=pers, weight="weight", tol=1e-12, max_iter=10000)
        nx_times.append(time.perf_counter() - t)
        nx_diff = max(nx_diff, max(abs(pr[v] - gl["Vectors"][i][v]) for v in range(n)))
    finish(ig_times, max_diff, nx_times, nx_diff, len(resets), nx.__version__)

def finish(ig_times, max_diff, nx_times, nx_diff, resets, nx_version):
    json.dump({"igraph": igraph.__version__, "networkx": nx_version, "igraph_median_s": median(ig_times),
               "networkx_median_s": median(nx_times) if nx_times else float("nan"), "max_abs_diff_igraph": max_diff,
               "max_abs_diff_networkx": nx_diff, "resets": resets, "networkx_resets": len(nx_times)}, sys.stdout)

if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
