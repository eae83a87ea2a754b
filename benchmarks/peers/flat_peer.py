#!/usr/bin/python3
"""Peer side of the flat-search comparison: FAISS IndexFlatIP (Debian build)
or numpy + OpenBLAS sgemm on the same x.npy / q.npy gleanerpeer wrote, at
the batch sizes it used; and FAISS IndexScalarQuantizer (QT_8bit, the SQ8
of the issue, and QT_fp16, FAISS 1.7.3 having no bf16), each alone and under
IndexRefineFlat rescoring k_factor = candidates/10 rows exactly, the
two-stage search gleaner's quantized search does.
Each peer runs in its own process so each gets its best threading setup
(run.sh gives FAISS OMP_WAIT_POLICY=passive: its spinning OpenMP threads
otherwise fight OpenBLAS's pthreads, 10x slower at batch 64 here).
Usage: flat_peer.py faiss|numpy WORK REPS [SQ_MAX_BATCH]: the scalar
quantizers run at the batches up to SQ_MAX_BATCH only (seconds per batch of
64 in the Debian build). Prints one JSON object."""
import json, sys, time
import numpy as np

def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]

def timed(fn, reps):
    """Median of reps runs; of 3 when one run takes over a second (FAISS's
    scalar quantizer without SIMD in the Debian build), so a sweep ends."""
    out, ts = None, []
    for i in range(reps):
        t = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t)
        if i >= 2 and max(ts) > 1:
            break
    return out, median(ts)

def numpy_topk(X, Q, k=10):
    s = Q @ X.T
    part = np.argpartition(-s, k, axis=1)[:, :k]
    order = np.argsort(-np.take_along_axis(s, part, 1), axis=1, kind="stable")
    return np.take_along_axis(part, order, 1)

def sweep(out, name, search, Q, batches, reps):
    for b in batches:
        ids, t = timed(lambda: search(Q[:b]), reps)
        out[f"{name}_batch{b}_median_s"] = t
        out[f"{name}_batch{b}_ids"] = ids.tolist()

def faiss_sq(faiss, X, qtype, refine_factor):
    idx = faiss.IndexScalarQuantizer(X.shape[1], qtype, faiss.METRIC_INNER_PRODUCT)
    idx.train(X)
    if refine_factor:
        r = faiss.IndexRefineFlat(idx)
        r.k_factor = refine_factor
        r.add(X)
        return r
    idx.add(X)
    return idx

def main(peer, d, reps, sq_max_batch):
    X = np.load(f"{d}/x.npy")
    Q = np.load(f"{d}/q.npy")
    g = json.load(open(f"{d}/gleaner_flat.json"))
    batches, factor = g["batches"], g["candidates"] / 10
    out = {"numpy": np.__version__}
    if peer == "faiss":
        import faiss
        faiss.omp_set_num_threads(2)
        out["faiss"] = faiss.__version__
        idx = faiss.IndexFlatIP(X.shape[1])
        idx.add(X)
        sweep(out, "faiss", lambda q: idx.search(q, 10)[1], Q, batches, reps)
        del idx
        for name, qtype in (("sq8", faiss.ScalarQuantizer.QT_8bit), ("fp16", faiss.ScalarQuantizer.QT_fp16)):
            for suffix, f in (("", 0), ("_refine", factor)):
                idx = faiss_sq(faiss, X, qtype, f)
                sweep(out, f"faiss_{name}{suffix}", lambda q: idx.search(q, 10)[1], Q,
                      [b for b in batches if b <= sq_max_batch], reps)
                del idx
    else:
        sweep(out, "numpy", lambda q: numpy_topk(X, q), Q, batches, reps)
    json.dump(out, sys.stdout)

if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]) if len(sys.argv) > 4 else 256)
