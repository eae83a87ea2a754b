package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/gleaner-rag/gleaner/corpus"
)

// commits measures what one durable commit costs at an index's size: n
// commits of batch added passages, then n that replace batch passages
// each (remove and add again), on a live index left by an earlier run
// (ingest leaves one of ~100,000 passages in -work). It prints each
// kind's median and p90 commit time.
func commits(c *corpus.Corpus, dir string, n, batch int, seed uint64, profile string) error {
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
	fmt.Printf("%d passages, mentions edges kept live: %v\n", w.Index().N(), len(w.Index().KindEdges("mentions")) > 0)
	for _, kind := range []struct {
		name         string
		add, replace int // tenths, as batchMix takes them
	}{{"append", 10, 10}, {"replace", 0, 10}} {
		var took []time.Duration
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
		slices.Sort(took)
		fmt.Printf("%s: %d commits of %d passages: median %v, p90 %v\n", kind.name, n, batch,
			pct(took, 0.5).Round(100*time.Microsecond), pct(took, 0.9).Round(100*time.Microsecond))
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
