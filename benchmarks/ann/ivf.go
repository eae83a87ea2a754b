package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/graphops/ivf"
	"github.com/gleaner-rag/gleaner/kernels"
)

// runIVF builds gleaner's inverted file and FAISS's IndexIVFFlat with the
// same lists and training, answers every question at each nprobe on one
// thread and on two, and reports recall@10 against exact and q/s.
func runIVF(ctx context.Context, X []float32, n int, Q []float32, sh shape, exact [][]kernels.Hit, lists int, probes []int, target float64, peer, work, out string) {
	if lists == 0 {
		lists = ivf.ListsFor(n)
	}
	g, c := gleanerIVF(ctx, X, n, sh.Dims, Q, lists, probes)
	g.Recall, c.Recall = recalls(g.IDs, exact, sh.Dev), recalls(c.IDs, exact, sh.Dev)
	var f *side
	if peer != "" {
		f = faissIVF(peer, work, sh.Dims, lists, probes, exact, sh.Dev)
	}
	reportIVF(out, n, sh, lists, probes, target, g, c, f)
}

// gleanerIVF builds the inverted file with int8 codes (k-means assigning
// with FlatIP on 2 threads, the cpu backend's search) and answers the
// questions at every nprobe over the float32 rows and over the codes
// (rescoring 4·k), each on one worker and on two; the two must find the
// same hits.
func gleanerIVF(ctx context.Context, X []float32, n, d int, Q []float32, lists int, probes []int) (rows, codes side) {
	o := ivf.DefaultOptions(lists)
	o.Codes = true
	o.Nearest = func(ctx context.Context, C []float32, nc, d int, X []float32, nx int, out []int32) error {
		hits, err := kernels.FlatIP(ctx, C, nc, d, X, nx, 1, 2)
		for i := range hits {
			out[i] = hits[i][0].Index
		}
		return err
	}
	t0 := time.Now()
	f, err := ivf.Build(ctx, X, n, d, o, nil)
	if err != nil {
		log.Fatal(err)
	}
	rows.Build = time.Since(t0).Seconds()
	codes.Build = rows.Build
	log.Printf("gleaner: inverted file of %d lists (longest %d) with codes built in %.1fs", f.Lists, f.Longest(), rows.Build)
	for _, nprobe := range probes {
		for _, s := range []*side{&rows, &codes} {
			ids, qps := answerIVF(f, X, Q, d, nprobe, 1, s == &codes)
			ids2, qps2 := answerIVF(f, X, Q, d, nprobe, 2, s == &codes)
			if !slices.EqualFunc(ids, ids2, slices.Equal) {
				log.Fatalf("nprobe %d: two workers found other hits than one", nprobe)
			}
			s.IDs, s.QPS, s.QPS2 = append(s.IDs, ids), append(s.QPS, qps), append(s.QPS2, qps2)
		}
	}
	return rows, codes
}

// answerIVF answers every question one at a time, over the rows or the
// codes: the hits and q/s.
func answerIVF(f *ivf.Index, X, Q []float32, d, nprobe, workers int, codes bool) ([][]int64, float64) {
	nq := len(Q) / d
	ids := make([][]int64, nq)
	t0 := time.Now()
	for i := range nq {
		q := Q[i*d : (i+1)*d]
		var hits []engine.Hit
		var err error
		if codes {
			hits, err = f.SearchCodes(X, q, k, nprobe, workers, 4, kernels.DotRows, kernels.ScoreCodes)
		} else {
			hits, err = f.Search(X, q, k, nprobe, workers, kernels.DotRows)
		}
		if err != nil {
			log.Fatal(err)
		}
		for _, h := range hits {
			ids[i] = append(ids[i], int64(h.Index))
		}
	}
	return ids, float64(nq) / time.Since(t0).Seconds()
}

// faissIVF runs the IndexIVFFlat peer script on the vectors in work.
func faissIVF(script, work string, d, lists int, probes []int, exact [][]kernels.Hit, ndev int) *side {
	s := runPeer(exact, ndev, append([]string{script, work, strconv.Itoa(d), strconv.Itoa(lists)}, itoas(probes)...)...)
	return &s
}

// reportIVF prints (and with path writes) the table: per nprobe each
// side's recall@10 and q/s on one thread and on two.
func reportIVF(path string, n int, sh shape, lists int, probes []int, target float64, g, c side, f *side) {
	var b strings.Builder
	fmt.Fprintf(&b, "Inverted file at %d vectors × %d dims, %d lists (10 k-means iterations on 64 vectors per list); %d test questions (%d dev choose nprobe)\n\n",
		n, sh.Dims, lists, sh.Test, sh.Dev)
	if f == nil || f.SQ8 == nil {
		fmt.Fprintf(&b, "gleaner over its int8 codes (4·k candidates rescored over float32):\n\n")
		b.WriteString("| nprobe | recall@10 (dev / test) | q/s, 1 thread | q/s, 2 threads |\n|---:|---|---:|---:|\n")
		for i, p := range probes {
			fmt.Fprintf(&b, "| %d | %.3f / %.3f | %.0f | %.0f |\n", p, c.Recall[2*i], c.Recall[2*i+1], c.QPS[i], c.QPS2[i])
		}
	} else {
		q := f.SQ8
		fmt.Fprintf(&b, "gleaner over its int8 codes (4·k candidates rescored over float32) and FAISS IndexIVFScalarQuantizer (SQ8, built in %.1f s):\n\n", q.Build)
		b.WriteString("| nprobe | gleaner recall@10 (dev / test) | q/s, 1 thread | q/s, 2 threads | FAISS SQ8 recall@10 (dev / test) | q/s, 1 thread | q/s, 2 threads | ratio, 1 / 2 threads |\n")
		b.WriteString("|---:|---|---:|---:|---|---:|---:|---|\n")
		for i, p := range probes {
			fmt.Fprintf(&b, "| %d | %.3f / %.3f | %.0f | %.0f | %.3f / %.3f | %.0f | %.0f | %.2f× / %.2f× |\n", p,
				c.Recall[2*i], c.Recall[2*i+1], c.QPS[i], c.QPS2[i], q.Recall[2*i], q.Recall[2*i+1], q.QPS[i], q.QPS2[i],
				c.QPS[i]/q.QPS[i], c.QPS2[i]/q.QPS2[i])
		}
	}
	b.WriteString("\nOver the float32 rows:\n\n")
	if f == nil {
		fmt.Fprintf(&b, "Build (2 threads, codes included): gleaner %.1f s\n\n", g.Build)
		b.WriteString("| nprobe | gleaner recall@10 (dev / test) | q/s, 1 thread | q/s, 2 threads |\n|---:|---|---:|---:|\n")
		for i, p := range probes {
			fmt.Fprintf(&b, "| %d | %.3f / %.3f | %.0f | %.0f |\n", p, g.Recall[2*i], g.Recall[2*i+1], g.QPS[i], g.QPS2[i])
		}
	} else {
		fmt.Fprintf(&b, "Build (2 threads): gleaner %.1f s (codes included), FAISS %s %.1f s (%.2f×)\n\n", g.Build, "IndexIVFFlat", f.Build, f.Build/g.Build)
		b.WriteString("| nprobe | gleaner recall@10 (dev / test) | q/s, 1 thread | q/s, 2 threads | FAISS recall@10 (dev / test) | q/s, 1 thread | q/s, 2 threads | ratio, 1 / 2 threads |\n")
		b.WriteString("|---:|---|---:|---:|---|---:|---:|---|\n")
		for i, p := range probes {
			fmt.Fprintf(&b, "| %d | %.3f / %.3f | %.0f | %.0f | %.3f / %.3f | %.0f | %.0f | %.2f× / %.2f× |\n", p,
				g.Recall[2*i], g.Recall[2*i+1], g.QPS[i], g.QPS2[i], f.Recall[2*i], f.Recall[2*i+1], f.QPS[i], f.QPS2[i],
				g.QPS[i]/f.QPS[i], g.QPS2[i]/f.QPS2[i])
		}
	}
	sides := map[string]side{"gleaner, codes": c, "gleaner, rows": g}
	if f != nil {
		sides["FAISS"] = *f
		if f.SQ8 != nil {
			sides["FAISS SQ8"] = *f.SQ8
		}
	}
	for _, name := range []string{"gleaner, codes", "FAISS SQ8", "gleaner, rows", "FAISS"} {
		s, ok := sides[name]
		if !ok {
			continue
		}
		chosen := slices.IndexFunc(probes, func(p int) bool { return s.Recall[2*slices.Index(probes, p)] >= target })
		if chosen < 0 {
			fmt.Fprintf(&b, "\n%s: no nprobe tried reaches recall@10 %.2f on the dev questions.\n", name, target)
			continue
		}
		fmt.Fprintf(&b, "\n%s: nprobe %d is the smallest reaching %.2f on the dev questions: test recall@10 %.3f, %.3f ms per question on one thread, %.3f on two.\n",
			name, probes[chosen], target, s.Recall[2*chosen+1], 1000/s.QPS[chosen], 1000/s.QPS2[chosen])
	}
	fmt.Print(b.String())
	if path != "" {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			log.Fatal(err)
		}
	}
}
