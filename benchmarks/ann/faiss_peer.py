#!/usr/bin/python3
"""FAISS side of benchmarks/ann: IndexHNSWFlat (inner product) over the
x.f32 / q.f32 the Go side wrote. Builds with 2 threads, answers every
question one at a time on one thread at each efSearch. Usage:
faiss_peer.py WORK DIMS M EF_CONSTRUCTION EF... Prints one JSON object."""
import json, sys, time
import numpy as np
import faiss

def main(work, d, m, efc, efs):
    X = np.fromfile(f"{work}/x.f32", dtype=np.float32).reshape(-1, d)
    Q = np.fromfile(f"{work}/q.f32", dtype=np.float32).reshape(-1, d)
    faiss.omp_set_num_threads(2)
    idx = faiss.IndexHNSWFlat(d, m, faiss.METRIC_INNER_PRODUCT)
    idx.hnsw.efConstruction = efc
    t = time.perf_counter()
    idx.add(X)
    out = {"build_s": time.perf_counter() - t, "qps": [], "ids": [], "faiss": faiss.__version__}
    faiss.omp_set_num_threads(1)
    for ef in efs:
        idx.hnsw.efSearch = ef
        ids = []
        t = time.perf_counter()
        for i in range(len(Q)):
            ids.append(idx.search(Q[i:i + 1], 10)[1][0].tolist())
        out["qps"].append(len(Q) / (time.perf_counter() - t))
        out["ids"].append(ids)
    json.dump(out, sys.stdout)

if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), [int(x) for x in sys.argv[5:]])
