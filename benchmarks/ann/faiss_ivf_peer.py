#!/usr/bin/python3
"""FAISS side of benchmarks/ann -kind ivf: IndexIVFFlat (inner product) over
the x.f32 / q.f32 the Go side wrote, trained as gleaner trains (LISTS
centroids, 10 k-means iterations on 64 sampled vectors per list, 2 threads;
spherical, as gleaner's centroids are unit vectors). Answers every question
one at a time at each nprobe, on one thread and then on two sharing the
lists (parallel_mode 1). Then the same with IndexIVFScalarQuantizer (SQ8,
per-dimension ranges, no rescoring), the peer of gleaner's int8 codes.
Usage: faiss_ivf_peer.py WORK DIMS LISTS NPROBE... Prints one JSON object."""
import json, sys, time
import numpy as np
import faiss

def answer(idx, Q, nprobes, threads):
    faiss.omp_set_num_threads(threads)
    idx.parallel_mode = 0 if threads == 1 else 1
    qps, ids = [], []
    for nprobe in nprobes:
        idx.nprobe = nprobe
        got = []
        t = time.perf_counter()
        for i in range(len(Q)):
            got.append(idx.search(Q[i:i + 1], 10)[1][0].tolist())
        qps.append(len(Q) / (time.perf_counter() - t))
        ids.append(got)
    return qps, ids

def built(X, d, lists, sq8):
    faiss.omp_set_num_threads(2)
    quant = faiss.IndexFlatIP(d)
    if sq8:
        idx = faiss.IndexIVFScalarQuantizer(quant, d, lists, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT)
    else:
        idx = faiss.IndexIVFFlat(quant, d, lists, faiss.METRIC_INNER_PRODUCT)
    idx.cp.niter, idx.cp.max_points_per_centroid, idx.cp.spherical, idx.cp.seed = 10, 64, True, 1
    t = time.perf_counter()
    idx.train(X)
    idx.add(X)
    return idx, time.perf_counter() - t

def main(work, d, lists, nprobes):
    X = np.fromfile(f"{work}/x.f32", dtype=np.float32).reshape(-1, d)
    Q = np.fromfile(f"{work}/q.f32", dtype=np.float32).reshape(-1, d)
    idx, build = built(X, d, lists, False)
    out = {"build_s": build, "faiss": faiss.__version__}
    out["qps"], out["ids"] = answer(idx, Q, nprobes, 1)
    out["qps2"], _ = answer(idx, Q, nprobes, 2)
    del idx
    sq, build = built(X, d, lists, True)
    out["sq8"] = {"build_s": build}
    out["sq8"]["qps"], out["sq8"]["ids"] = answer(sq, Q, nprobes, 1)
    out["sq8"]["qps2"], _ = answer(sq, Q, nprobes, 2)
    json.dump(out, sys.stdout)

if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), [int(x) for x in sys.argv[4:]])
