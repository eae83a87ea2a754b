#!/usr/bin/python3
"""Prints the peer comparison table from the JSON files run.sh collected."""
import json, sys

def load(p):
    with open(p) as f:
        return json.load(f)

def agreement(a, b):
    same = sum(len(set(x) & set(y)) for x, y in zip(a, b))
    return same / max(1, sum(len(x) for x in a))

def main(work):
    g, p = load(f"{work}/gleaner_flat.json"), load(f"{work}/peer_flat.json")
    print(f"exact top-10 inner-product search, {g['n']} x {g['d']} float32 "
          f"(gleaner kernel {g['impl']}; FAISS {p['faiss']} Debian build; numpy {p['numpy']} + OpenBLAS)")
    print(f"{'batch':>5} {'gleaner ms':>11} {'faiss ms':>9} {'numpy ms':>9} {'faiss/gleaner':>14} {'numpy/gleaner':>14} {'top-10 agree':>13}")
    for b in (1, 64):
        gt, ft, nt = (g[f"batch{b}_median_s"], p[f"faiss_batch{b}_median_s"], p[f"numpy_batch{b}_median_s"])
        agree = min(agreement(g[f"batch{b}_ids"], p[f"faiss_batch{b}_ids"]), agreement(g[f"batch{b}_ids"], p[f"numpy_batch{b}_ids"]))
        print(f"{b:>5} {gt*1e3:>11.2f} {ft*1e3:>9.2f} {nt*1e3:>9.2f} {ft/gt:>13.2f}x {nt/gt:>13.2f}x {agree:>13.4f}")
    gb, bb = load(f"{work}/gleaner_bm25.json"), load(f"{work}/bleve_bm25.json")
    print()
    print(f"BM25 top-100 on BEIR SciFact ({gb['queries']} test queries, median per query)")
    print(f"{'gleaner ms':>11} {'bleve ms':>9} {'bleve/gleaner':>14}")
    print(f"{gb['median_s']*1e3:>11.4f} {bb['median_s']*1e3:>9.4f} {bb['median_s']/gb['median_s']:>13.2f}x")

if __name__ == "__main__":
    main(sys.argv[1])
