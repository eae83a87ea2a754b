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
    batches = g["batches"]
    print(f"exact top-10 inner-product search, {g['n']} x {g['d']} float32 "
          f"(gleaner kernel {g['impl']}; FAISS {p['faiss']} Debian build; numpy {p['numpy']} + OpenBLAS)")
    floor = g["floor_s"]
    print(f"memory floor: one streaming read of the matrix, {floor*1e3:.2f} ms; "
          f"gleaner batch {batches[0]} is {g[f'batch{batches[0]}_median_s']/floor:.2f}x of it")
    if "batch1_floor_ratios" in g:
        r = sorted(g["batch1_floor_ratios"])
        print(f"paired (a read, then a batch-1 scan, {len(r)} times): batch 1 / floor median {r[len(r)//2]:.2f}x, "
              f"quartiles {r[len(r)//4]:.2f}x-{r[3*len(r)//4]:.2f}x")
    print(f"{'batch':>5} {'gleaner ms':>11} {'faiss ms':>9} {'numpy ms':>9} {'faiss/gleaner':>14} {'numpy/gleaner':>14} {'top-10 agree':>13}")
    for b in batches:
        gt, ft, nt = (g[f"batch{b}_median_s"], p[f"faiss_batch{b}_median_s"], p[f"numpy_batch{b}_median_s"])
        agree = min(agreement(g[f"batch{b}_ids"], p[f"faiss_batch{b}_ids"]), agreement(g[f"batch{b}_ids"], p[f"numpy_batch{b}_ids"]))
        print(f"{b:>5} {gt*1e3:>11.2f} {ft*1e3:>9.2f} {nt*1e3:>9.2f} {ft/gt:>13.2f}x {nt/gt:>13.2f}x {agree:>13.4f}")
    print()
    print(f"quantized top-10 search (recall@10 against gleaner's exact top 10; gleaner and FAISS+refine "
          f"rescore {g['candidates']} candidates per query over the float32 rows)")
    for ours, theirs in (("int8", "sq8"), ("bf16", "fp16")):
        print(f"{'batch':>5} {'gleaner '+ours+' ms':>17} {'recall':>7} {'faiss '+theirs+' ms':>15} {'recall':>7} "
              f"{'faiss '+theirs+'+refine ms':>22} {'recall':>7} {'refine/gleaner':>15} {'f32/'+ours:>9}")
        for b in batches:
            if f"faiss_{theirs}_batch{b}_median_s" not in p:
                continue  # past SQ_MAX_BATCH
            exact = g[f"batch{b}_ids"]
            gt, gr = g[f"{ours}_batch{b}_median_s"], g[f"{ours}_batch{b}_recall"]
            st, sr = p[f"faiss_{theirs}_batch{b}_median_s"], agreement(p[f"faiss_{theirs}_batch{b}_ids"], exact)
            rt, rr = p[f"faiss_{theirs}_refine_batch{b}_median_s"], agreement(p[f"faiss_{theirs}_refine_batch{b}_ids"], exact)
            print(f"{b:>5} {gt*1e3:>17.2f} {gr:>7.4f} {st*1e3:>15.2f} {sr:>7.4f} {rt*1e3:>22.2f} {rr:>7.4f} "
                  f"{rt/gt:>14.2f}x {g[f'batch{b}_median_s']/gt:>8.2f}x")
        print()
    gb, bb = load(f"{work}/gleaner_bm25.json"), load(f"{work}/bleve_bm25.json")
    print()
    print(f"BM25 top-100 on BEIR SciFact ({gb['queries']} test queries, median per query)")
    print(f"{'gleaner ms':>11} {'bleve ms':>9} {'bleve/gleaner':>14}")
    print(f"{gb['median_s']*1e3:>11.4f} {bb['median_s']*1e3:>9.4f} {bb['median_s']/gb['median_s']:>13.2f}x")

if __name__ == "__main__":
    main(sys.argv[1])
