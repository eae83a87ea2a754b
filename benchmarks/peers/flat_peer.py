#!/usr/bin/python3
"""Peer side of the flat-search comparison: FAISS IndexFlatIP (Debian build)
or numpy + OpenBLAS sgemm on the same x.npy / q.npy gleanerpeer wrote.
Each peer runs in its own process so each gets its best threading setup
(run.sh gives FAISS OMP_WAIT_POLICY=passive: its spinning OpenMP threads
otherwise fight OpenBLAS's pthreads, 10x slower at batch 64 here).
Usage: flat_peer.py faiss|numpy WORK REPS. Prints one JSON object."""
import json, sys, time
import numpy as np

def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]

def timed(fn, reps):
    out, ts = None, []
    for _ in range(reps):
        t = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t)
    return out, median(ts)

def numpy_topk(X, Q, k=10):
    s = Q @ X.T
    part = np.argpartition(-s, k, axis=1)[:, :k]
    order = np.argsort(-np.take_along_axis(s, part, 1), axis=1, kind="stable")
    return np.take_along_axis(part, order, 1)

def main(peer, d, reps):
    X = np.load(f"{d}/x.npy")
    Q = np.load(f"{d}/q.npy")
    out = {"numpy": np.__version__}
    if peer == "faiss":
        import faiss
        faiss.omp_set_num_threads(2)
        idx = faiss.IndexFlatIP(X.shape[1])
        idx.add(X)
        out["faiss"] = faiss.__version__
        search = lambda q: idx.search(q, 10)[1]
    else:
        search = lambda q: numpy_topk(X, q)
    for b in (1, 64):
        ids, t = timed(lambda: search(Q[:b]), reps)
        out[f"{peer}_batch{b}_median_s"] = t
        out[f"{peer}_batch{b}_ids"] = ids.tolist()
    json.dump(out, sys.stdout)

if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
