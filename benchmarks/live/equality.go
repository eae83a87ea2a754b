package main

import (
	"context"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/index/live"
	"github.com/gleaner-rag/gleaner/retrieve"
)

// compared are the methods equality runs on both indexes.
var compared = []string{"bm25", "ppr", "vector", "hybrid", "fastinsight", "fuserag", "nexusrag", "linearrag"}

func equality(c *corpus.Corpus, work, base string, ops int, seed uint64, mentions bool, steps []string, refit bool) error {
	ctx := context.Background()
	w, err := openWriter(ctx, base)
	if err != nil {
		return err
	}
	g := newGenerator(c, seed)
	start := time.Now()
	counts, commits := map[string]int{}, 0
	for done := 0; done < ops; commits++ {
		b, kinds := g.batch(w.Index(), min(1+g.rng.IntN(20), ops-done))
		if _, err := w.Commit(ctx, b); err != nil {
			return fmt.Errorf("commit %d: %w", commits, err)
		}
		for _, k := range kinds {
			counts[k]++
		}
		done += b.Len()
	}
	took := time.Since(start)
	fmt.Printf("applied %d changes (%d adds, %d replaces, %d deletes) in %d commits, %v (%.0f changes/s, durable); %d passages now\n",
		ops, counts["add"], counts["replace"], counts["delete"], commits, took.Round(time.Millisecond), float64(ops)/took.Seconds(), w.Index().Live())
	if refit {
		start = time.Now()
		if err := w.Refit(ctx); err != nil {
			return err
		}
		fmt.Printf("refitted the LSA basis in %v\n", time.Since(start).Round(time.Millisecond))
	}
	if len(steps) > 0 {
		start = time.Now()
		r, err := w.Refresh(ctx)
		if err != nil {
			return err
		}
		fmt.Printf("refreshed %v in %v; still stale: %v\n", r.Built, time.Since(start).Round(time.Millisecond), r.Stale)
	}
	final := w.Index() // methods run on it as the writer serves it, deleted nodes and all
	st := w.Stats()
	fmt.Printf("%d of its %d nodes deleted in place; %d merges, %d renumbering commits or refreshes\n", final.Deleted(), final.N(), st.Merges, st.Compactions-st.Merges)
	compact, err := final.Compact(ctx) // what a build of the same corpus numbers alike
	if err != nil {
		return err
	}
	fresh := filepath.Join(work, "fresh")
	start = time.Now()
	if err := buildIndex(exportCorpus(compact), fresh, mentions, steps); err != nil {
		return err
	}
	fmt.Printf("fresh build of the final corpus: %v\n", time.Since(start).Round(time.Millisecond))
	want, err := index.Open(fresh, store.OpenOptions{})
	if err != nil {
		return err
	}
	defer want.Close()
	if err := compareStructures(compact, want); err != nil {
		return err
	}
	if err := compareMethods(ctx, final, want, c.Queries); err != nil {
		return err
	}
	return w.Close()
}

// exportCorpus is the corpus an index holds: its passages in order, with
// the edges of the corpus's own kinds.
func exportCorpus(ix *index.Index) *corpus.Corpus {
	c := &corpus.Corpus{Nodes: make([]corpus.Node, ix.N())}
	for i := range c.Nodes {
		c.Nodes[i] = corpus.Node{ID: ix.NodeID(i), Title: ix.Title(i), Text: ix.Text(i), Type: ix.Type(i), Aliases: ix.Aliases(i)}
	}
	g := &ix.Graph().Out
	for u := range ix.N() {
		for p := g.Ptr[u]; p < g.Ptr[u+1]; p++ {
			kind, rel := ix.RelationName(g.Rel[p])
			if !ix.DerivedKind(kind) {
				c.Edges = append(c.Edges, corpus.Edge{Src: ix.NodeID(u), Dst: ix.NodeID(int(g.Idx[p])), Kind: kind, Rel: rel, Weight: float64(g.W[p])})
			}
		}
	}
	return c
}

// compareStructures checks what must be equal: nodes, postings, BM25's
// statistics, the edges of every kind.
func compareStructures(got, want *index.Index) error {
	if got.N() != want.N() {
		return fmt.Errorf("%d passages, the fresh build %d", got.N(), want.N())
	}
	for i := range got.N() {
		if got.NodeID(i) != want.NodeID(i) || got.Text(i) != want.Text(i) {
			return fmt.Errorf("passage %d differs", i)
		}
	}
	fmt.Printf("postings (terms, documents, frequencies, lengths) equal: %v\n", reflect.DeepEqual(got.Postings.Flat(), want.Postings.Flat()))
	for _, k := range want.Meta.GraphKinds {
		a, b := got.KindEdges(k), want.KindEdges(k)
		fmt.Printf("%s edges: %d live, %d fresh, identical %v (live stale: %v)\n", k, len(a), len(b), slices.Equal(a, b), got.Meta.StaleKind(k))
	}
	return nil
}

// compareMethods runs each method on both indexes over the questions.
func compareMethods(ctx context.Context, got, want *index.Index, qs []corpus.Query) error {
	be, err := engine.Open("cpu")
	if err != nil {
		return err
	}
	env := retrieve.Env{Backend: be, Logger: quiet}
	fmt.Printf("\n%d questions, top 10 | identical lists | identical ids and scores | overlap@10 | R@10 live | R@10 fresh\n", len(qs))
	for _, name := range compared {
		cfg, err := retrieve.NewConfig(name)
		if err != nil {
			return err
		}
		ma, errA := retrieve.New(got, env, cfg)
		mb, errB := retrieve.New(want, env, cfg)
		if errA != nil || errB != nil {
			fmt.Printf("%s: cannot run (live: %v; fresh: %v)\n", name, errA, errB)
			continue
		}
		var same, exact int
		var overlap, ra, rb float64
		for _, q := range qs {
			a, err1 := ma.Retrieve(ctx, retrieve.Query{ID: q.ID, Text: q.Text}, 10)
			b, err2 := mb.Retrieve(ctx, retrieve.Query{ID: q.ID, Text: q.Text}, 10)
			if err1 != nil || err2 != nil {
				return fmt.Errorf("%s, question %s: %v %v", name, q.ID, err1, err2)
			}
			ia, ib := ids(got, a), ids(want, b)
			if slices.Equal(ia, ib) {
				same++
			}
			if slices.Equal(ia, ib) && slices.EqualFunc(a, b, func(x, y engine.Hit) bool { return x.Score == y.Score }) {
				exact++
			}
			overlap += overlapOf(ia, ib)
			ra, rb = ra+recall(ia, q.Gold), rb+recall(ib, q.Gold)
		}
		n := float64(len(qs))
		fmt.Printf("%s | %d | %d | %.4f | %.4f | %.4f\n", name, same, exact, overlap/n, ra/n, rb/n)
		retrieve.CloseAll(ctx, ma, mb)
	}
	return nil
}

func ids(ix *index.Index, hits []engine.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = ix.NodeID(int(h.Index))
	}
	return out
}

func overlapOf(a, b []string) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	n := 0
	for _, x := range a {
		if slices.Contains(b, x) {
			n++
		}
	}
	return float64(n) / float64(max(len(a), len(b)))
}

func recall(ids, gold []string) float64 {
	if len(gold) == 0 {
		return 0
	}
	n := 0
	for _, g := range gold {
		if slices.Contains(ids, g) {
			n++
		}
	}
	return float64(n) / float64(len(gold))
}

// generator makes random changes: 100-word passages from the corpus's
// words, some titled with names other passages mention, some mentioning
// titles of the index.
type generator struct {
	rng   *rand.Rand
	words []string
	next  int
}

func newGenerator(c *corpus.Corpus, seed uint64) *generator {
	g := &generator{rng: rand.New(rand.NewPCG(seed, 7))}
	for i := 0; i < len(c.Nodes); i += 7 {
		g.words = append(g.words, strings.Fields(c.Nodes[i].Text)...)
	}
	return g
}

// text is about 100 words, mentioning a title of ix now and then.
func (g *generator) text(ix *index.Index) string {
	var b strings.Builder
	for k := 0; k < 100; k++ {
		if k%25 == 0 && g.rng.IntN(2) == 0 {
			b.WriteString(ix.Title(g.liveNode(ix)) + " ")
			continue
		}
		b.WriteString(g.words[g.rng.IntN(len(g.words))] + " ")
	}
	return b.String()
}

// liveNode draws a node of ix that is not deleted: the k-th live one,
// so that the same draws pick the same passages whether the writer
// deleted in place or renumbered (-deleted-share).
func (g *generator) liveNode(ix *index.Index) int {
	k := g.rng.IntN(ix.Live())
	dead := ix.DeletedWords()
	for w := 0; ; w++ {
		n := 64
		if w < len(dead) {
			n -= bits.OnesCount64(dead[w])
		}
		if k >= n {
			k -= n
			continue
		}
		for v := w * 64; ; v++ {
			if !ix.IsDeleted(v) {
				if k == 0 {
					return v
				}
				k--
			}
		}
	}
}

// name is a title like a page's: two of the corpus's words, capitalised.
func (g *generator) name() string {
	w := func() string {
		s := []rune(g.words[g.rng.IntN(len(g.words))])
		return strings.ToUpper(string(s[:1])) + string(s[1:])
	}
	return w() + " " + w()
}

// plainText is about 100 of the corpus's words.
func (g *generator) plainText() string {
	var b strings.Builder
	for k := 0; k < 100; k++ {
		b.WriteString(g.words[g.rng.IntN(len(g.words))] + " ")
	}
	return b.String()
}

// batch makes n changes to ix: 40 % adds, 30 % replaces, 30 % deletes,
// no two on one document.
func (g *generator) batch(ix *index.Index, n int) (*live.Batch, []string) {
	return g.batchMix(ix, n, 4, 7)
}

// batchMix is batch with adds below add tenths and replaces below
// replace tenths (the rest deletes).
func (g *generator) batchMix(ix *index.Index, n, add, replace int) (*live.Batch, []string) {
	var b live.Batch
	var kinds []string
	used := map[string]bool{}
	for len(kinds) < n {
		doc := ix.Document(g.liveNode(ix))
		switch r := g.rng.IntN(10); {
		case r < add || used[doc]:
			g.next++
			id := fmt.Sprintf("live-%d", g.next)
			title := g.name()
			if g.rng.IntN(4) == 0 {
				title = ix.Title(g.liveNode(ix))
			}
			b.Add(live.NodeDocument(corpus.Node{ID: id, Title: title, Text: g.text(ix)}))
			kinds = append(kinds, "add")
		case r < replace:
			v, _ := ix.Lookup(doc)
			b.Replace(live.NodeDocument(corpus.Node{ID: doc, Title: ix.Title(int(v)), Text: g.text(ix)}))
			kinds = append(kinds, "replace")
		default:
			b.Delete(doc)
			kinds = append(kinds, "delete")
		}
		used[doc] = true
	}
	return &b, kinds
}
