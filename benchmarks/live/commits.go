package main

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/index/live"
	"github.com/gleaner-rag/gleaner/retrieve"
)

// commits measures what one durable commit costs at an index's size: n
// commits of batch added passages, then n that replace batch passages
// each (remove and add again), then n that delete batch passages each, on
// a live index left by an earlier run
// (ingest leaves one of ~100,000 passages in -work). It prints each
// kind's median and p90 commit time and the bytes a commit allocates
// (the whole process's, over the kind's commits), then what queries cost over the
// index the deletes left (queryCosts).
func commits(c *corpus.Corpus, dir string, n, batch int, seed uint64, profile, memProfile string) error {
	if n < 1 || batch < 1 {
		return fmt.Errorf("commits: want -ops and -batch of at least 1, got %d and %d", n, batch)
	}
	ctx := context.Background()
	w, err := openWriter(ctx, dir)
	if err != nil {
		return err
	}
	defer w.Close()
	g := newGenerator(c, seed)
	g.next = int(time.Now().UnixMilli()) // ids no earlier run on this index used
	fmt.Printf("%d passages, mentions edges kept live: %v\n", w.Index().Live(), len(w.Index().KindEdges("mentions")) > 0)
	for _, kind := range []struct {
		name         string
		add, replace int // tenths, as batchMix takes them
	}{{"append", 10, 10}, {"replace", 0, 10}, {"delete", 0, 0}} {
		var took []time.Duration
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		stop, err := startProfile(profileFor(profile, kind.name))
		if err != nil {
			return err
		}
		for range n {
			b, _ := g.batchMix(w.Index(), batch, kind.add, kind.replace)
			start := time.Now()
			if _, err := w.Commit(ctx, b); err != nil {
				return fmt.Errorf("%s commit: %w", kind.name, err)
			}
			took = append(took, time.Since(start))
		}
		if err := stop(); err != nil {
			return err
		}
		runtime.ReadMemStats(&after)
		slices.Sort(took)
		fmt.Printf("%s: %d commits of %d passages: median %v, p90 %v; %.2f MB allocated per commit, %d collections\n", kind.name, n, batch,
			pct(took, 0.5).Round(100*time.Microsecond), pct(took, 0.9).Round(100*time.Microsecond),
			float64(after.TotalAlloc-before.TotalAlloc)/float64(n)/1e6, after.NumGC-before.NumGC)
	}
	if memProfile != "" {
		if err := writeHeapProfile(memProfile); err != nil {
			return err
		}
	}
	if err := graphAfterCommits(ctx, w, g, c.Queries, min(n, 20), batch); err != nil {
		return err
	}
	return queryCosts(ctx, w.Index(), c.Queries)
}

// graphAfterCommits times a ppr question on the index each of n append
// commits leaves, then a second one: the first makes what the index's
// graph methods share (the flat graph, the simple undirected view), which
// a live index makes anew after every commit.
func graphAfterCommits(ctx context.Context, w *live.Writer, g *generator, qs []corpus.Query, n, batch int) error {
	be, err := engine.Open("cpu")
	if err != nil {
		return err
	}
	env := retrieve.Env{Backend: be, Logger: quiet}
	var first, second []time.Duration
	for i := range n {
		b, _ := g.batchMix(w.Index(), batch, 10, 10)
		if _, err := w.Commit(ctx, b); err != nil {
			return fmt.Errorf("append commit: %w", err)
		}
		m, err := retrieve.NewNamed("ppr", w.Index(), env)
		if err != nil {
			fmt.Printf("ppr after a commit: cannot run: %v\n", err)
			return nil
		}
		for k, out := range []*[]time.Duration{&first, &second} {
			q := qs[(2*i+k)%len(qs)]
			start := time.Now()
			if _, err := m.Retrieve(ctx, retrieve.Query{ID: q.ID, Text: q.Text}, 10); err != nil {
				return fmt.Errorf("ppr, question %s: %w", q.ID, err)
			}
			*out = append(*out, time.Since(start))
		}
		retrieve.CloseAll(ctx, m)
	}
	slices.Sort(first)
	slices.Sort(second)
	fmt.Printf("ppr after each of %d append commits: first question median %v, p90 %v; second median %v, p90 %v\n", n,
		pct(first, 0.5).Round(100*time.Microsecond), pct(first, 0.9).Round(100*time.Microsecond),
		pct(second, 0.5).Round(100*time.Microsecond), pct(second, 0.9).Round(100*time.Microsecond))
	return nil
}

// queryCosts times the compared methods over ix, which holds passages
// deleted in place, and over ix compacted, one question at a time, and
// prints each side's p50 and p99 and whether the top 10 agree.
func queryCosts(ctx context.Context, ix *index.Index, qs []corpus.Query) error {
	compact, err := ix.Compact(ctx)
	if err != nil {
		return err
	}
	be, err := engine.Open("cpu")
	if err != nil {
		return err
	}
	env := retrieve.Env{Backend: be, Logger: quiet}
	fmt.Printf("\nqueries over %d passages, %d of them deleted in place, against the index compacted (%d questions, top 10)\n", ix.N(), ix.Deleted(), len(qs))
	fmt.Println("method | p50 / p99 ms in place | p50 / p99 ms compacted | identical ids")
	for _, name := range compared {
		var p [2][]time.Duration
		var lists [2][][]string
		for side, x := range []*index.Index{ix, compact} {
			m, err := retrieve.NewNamed(name, x, env)
			if err != nil {
				fmt.Printf("%s: cannot run: %v\n", name, err)
				break
			}
			for _, q := range qs {
				start := time.Now()
				hits, err := m.Retrieve(ctx, retrieve.Query{ID: q.ID, Text: q.Text}, 10)
				if err != nil {
					return fmt.Errorf("%s, question %s: %w", name, q.ID, err)
				}
				p[side] = append(p[side], time.Since(start))
				lists[side] = append(lists[side], ids(x, hits))
			}
			retrieve.CloseAll(ctx, m)
		}
		if len(p[1]) == 0 {
			continue
		}
		same := 0
		for i := range lists[0] {
			if slices.Equal(lists[0][i], lists[1][i]) {
				same++
			}
		}
		slices.Sort(p[0])
		slices.Sort(p[1])
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		fmt.Printf("%s | %.2f / %.2f | %.2f / %.2f | %d of %d\n", name, ms(pct(p[0], 0.5)), ms(pct(p[0], 0.99)), ms(pct(p[1], 0.5)), ms(pct(p[1], 0.99)), same, len(qs))
	}
	return nil
}

// profileFor names kind's profile after path ("" : none).
func profileFor(path, kind string) string {
	if path == "" {
		return ""
	}
	return path + "." + kind
}
