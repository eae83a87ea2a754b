#!/usr/bin/python3
"""Peer side of the flat-search comparison: FAISS IndexFlatIP (Debian build)
and numpy + OpenBLAS sgemm on the same x.npy / q.npy gleanerpeer wrote.
Prints one JSON object with median times and top-10 ids."""
import json, sys, time
import numpy as np
import faiss

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

def main(d, reps):
    X = np.load(f"{d}/x.npy", mmap_mode=None)
    Q = np.load(f"{d}/q.npy")
    faiss.omp_set_num_threads(2)
    idx = faiss.IndexFlatIP(X.shape[1])
    idx.add(X)
    out = {"faiss": faiss.__version__, "numpy": np.__version__}
    for b in (1, 64):
        (_, I), t = timed(lambda: idx.search(Q[:b], 10), reps)
        out[f"faiss_batch{b}_median_s"] = t
        out[f"faiss_batch{b}_ids"] = I.tolist()
        I2, t2 = timed(lambda: numpy_topk(X, Q[:b]), reps)
        out[f"numpy_batch{b}_median_s"] = t2
        out[f"numpy_batch{b}_ids"] = I2.tolist()
    try:
        from threadpoolctl import threadpool_info
        out["blas"] = [(i.get("internal_api"), i.get("architecture"), i.get("num_threads")) for i in threadpool_info()]
    except ImportError:
        out["blas"] = "threadpoolctl not installed"
    json.dump(out, sys.stdout)

if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 15)
