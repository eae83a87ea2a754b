package methods_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/synth"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/methods/internal/testindex"
	"github.com/gleaner-rag/gleaner/retrieve"
	"github.com/gleaner-rag/gleaner/retrieve/filter"
)

// Deleted nodes (a live writer's tombstones): on an index that deleted
// nodes in place, every method answers as on the same index compacted
// (the nodes renumbered away, as a rebuild numbers the live ones): the
// same nodes, in the same order, with the same scores, unfiltered and
// under a filter, and no deleted node is ever returned. A method whose
// section the deletions left stale refuses on both.
func TestDeletedNodesEqualCompaction(t *testing.T) {
	ctx := context.Background()
	for seed := uint64(1); seed <= 2; seed++ {
		rng := rand.New(rand.NewPCG(seed, 29))
		c := synth.Generate(synth.Options{People: 40, Cities: 8, Countries: 3, Bands: 12, Queries: 12, Seed: seed})
		randomMeta(rng, c)
		ix := buildEmbedded(t, c, t.TempDir(), "full", nil)
		tomb := ix
		for step := range 3 {
			ch := deletingChange(rng, tomb, step)
			next, err := tomb.Apply(ctx, ch)
			if err != nil {
				t.Fatalf("seed %d, step %d: %v", seed, step, err)
			}
			tomb = next
		}
		if tomb.Deleted() < 10 {
			t.Fatalf("seed %d: only %d deleted nodes", seed, tomb.Deleted())
		}
		compact, err := tomb.Compact(ctx)
		if err != nil {
			t.Fatal(err)
		}
		qs := queries(c)
		tallow, callow := evalBoth(t, &filter.Filter{Field: "team", In: []any{"red", "green"}}, tomb, compact)
		compared := 0
		for _, name := range retrieve.Names() {
			if !retrieve.SupportsFilters(name) {
				continue
			}
			got, gerr := testindex.NewMethod(tomb, name)
			want, werr := testindex.NewMethod(compact, name)
			if (gerr == nil) != (werr == nil) {
				t.Fatalf("seed %d, %s: making it: %v with deleted nodes, %v compacted", seed, name, gerr, werr)
			}
			if gerr != nil {
				continue
			}
			ok := compareDeleted(t, fmt.Sprintf("seed %d, %s", seed, name), tomb, compact, got, want, qs, nil, nil, 10)
			ok = compareDeleted(t, fmt.Sprintf("seed %d, %s, filtered", seed, name), tomb, compact, got, want, qs, tallow, callow, 10) && ok
			ok = compareDeleted(t, fmt.Sprintf("seed %d, %s, k past every node", seed, name), tomb, compact, got, want, qs[:3], nil, nil, 2*tomb.N()) && ok
			retrieve.CloseAll(ctx, got, want)
			if ok {
				compared++
			}
		}
		t.Logf("seed %d: %d methods compared, %d deleted of %d", seed, compared, tomb.Deleted(), tomb.N())
		// An evidence set larger than the live nodes a narrow filter
		// allows: fuserag's scores count down from their number, which
		// must not count the deleted ones.
		ta, ca := evalBoth(t, &filter.Filter{Field: "team", Eq: "blue"}, tomb, compact)
		got := testindex.Method(t, tomb, "fuserag", "fuserag-k", "1000")
		want := testindex.Method(t, compact, "fuserag", "fuserag-k", "1000")
		compareDeleted(t, fmt.Sprintf("seed %d, fuserag K=1000, narrow filter", seed), tomb, compact, got, want, qs, ta, ca, 1000)
		if compared < 10 {
			t.Fatalf("seed %d: only %d methods answered", seed, compared)
		}
	}
}

// evalBoth is f's node set on each index.
func evalBoth(t *testing.T, f *filter.Filter, a, b *index.Index) (*filter.Set, *filter.Set) {
	t.Helper()
	sa, err := filter.Eval(a, f)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := filter.Eval(b, f)
	if err != nil {
		t.Fatal(err)
	}
	return sa, sb
}

// deletingChange deletes a tenth of ix's live nodes in place, replaces
// some of them (the same id, other text) and adds a few nodes with edges.
func deletingChange(rng *rand.Rand, ix *index.Index, step int) *index.Change {
	ch := &index.Change{Tombstone: true}
	var live []int32
	for v := range ix.N() {
		if !ix.IsDeleted(v) {
			live = append(live, int32(v))
		}
	}
	rng.Shuffle(len(live), func(i, j int) { live[i], live[j] = live[j], live[i] })
	gone := live[:len(live)/10]
	ch.Remove = slices.Sorted(slices.Values(gone))
	for i, v := range gone {
		if i%3 == 0 {
			n := corpus.Node{ID: ix.NodeID(int(v)), Title: ix.Title(int(v)), Text: ix.Text(int(live[len(live)-1-i])),
				Meta: map[string]any{"team": teams[rng.IntN(len(teams))]}}
			ch.Add = append(ch.Add, n)
		}
	}
	for k := range 3 {
		n := corpus.Node{ID: fmt.Sprintf("added-%d-%d", step, k), Title: fmt.Sprintf("Added %d %d", step, k),
			Text: ix.Text(int(live[len(live)/2+k])), Meta: map[string]any{"team": teams[k%len(teams)]}}
		ch.Add = append(ch.Add, n)
		dst := ix.NodeID(int(live[len(live)/2+k+3]))
		ch.Edges = append(ch.Edges, corpus.Edge{Src: n.ID, Dst: dst, Weight: 1, Kind: "links"})
	}
	return ch
}

// compareDeleted runs got (over tomb) and want (over compact) on qs, under
// the allow sets when given; it reports whether the methods answered.
func compareDeleted(t *testing.T, what string, tomb, compact *index.Index, got, want retrieve.Method, qs []retrieve.Query, tallow, callow *filter.Set, k int) bool {
	t.Helper()
	for _, q := range qs {
		wq, gq := q, q
		wq.Allow, gq.Allow = callow, tallow
		w, werr := want.Retrieve(context.Background(), wq, k)
		g, gerr := got.Retrieve(context.Background(), gq, k)
		if (gerr == nil) != (werr == nil) {
			t.Fatalf("%s, query %q: %v with deleted nodes, %v compacted", what, q.Text, gerr, werr)
		}
		if gerr != nil {
			return false // both refuse (a stale section)
		}
		for _, h := range g {
			if tomb.IsDeleted(int(h.Index)) {
				t.Fatalf("%s, query %q: deleted node %d (%s) returned", what, q.Text, h.Index, tomb.NodeID(int(h.Index)))
			}
		}
		if msg := sameRanking(tomb, g, compact, w); msg != "" {
			t.Errorf("%s, query %q: %s", what, q.Text, msg)
		}
	}
	return true
}
