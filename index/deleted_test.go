package index_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/synth"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/index/indextest"
	"github.com/gleaner-rag/gleaner/kernels/cpu"
)

// liveNodes are ix's nodes that are not deleted.
func liveNodes(ix *index.Index) []int32 {
	var out []int32
	for v := range ix.N() {
		if !ix.IsDeleted(v) {
			out = append(out, int32(v))
		}
	}
	return out
}

// liveChange is randomChange over the live nodes of ix (by id, so the
// same change applies to an index that numbers them otherwise), with
// passages of documents so that document sizes change too.
// Half the added texts take their words from gone, texts removed before,
// so that words whose holders were all deleted come back.
func liveChange(rng *rand.Rand, ix *index.Index, step int, gone []string) (remove []string, add []corpus.Node, edges []corpus.Edge) {
	live := liveNodes(ix)
	seen := map[string]bool{}
	for k := rng.IntN(8); k > 0 && len(seen) < len(live)-1; k-- {
		if id := ix.NodeID(int(live[rng.IntN(len(live))])); !seen[id] {
			seen[id] = true
			remove = append(remove, id)
		}
	}
	var ids []string
	for _, id := range remove {
		if rng.IntN(2) == 0 {
			ids = append(ids, id) // replaced
		}
	}
	for k := rng.IntN(5); k > 0; k-- {
		ids = append(ids, fmt.Sprintf("new-%d-%d", step, k))
	}
	for i, id := range ids {
		words := strings.Fields(ix.Text(int(live[rng.IntN(len(live))])))
		if len(gone) > 0 && rng.IntN(2) == 0 {
			words = strings.Fields(gone[rng.IntN(len(gone))])
		}
		rng.Shuffle(len(words), func(i, j int) { words[i], words[j] = words[j], words[i] })
		n := corpus.Node{ID: id, Title: "Title " + id, Text: strings.Join(words[:len(words)/2], " ") + fmt.Sprintf(" novelword%d", rng.IntN(50))}
		if !seen[id] && i%2 == 0 {
			n.Doc = fmt.Sprintf("doc-%d", rng.IntN(4))
		}
		add = append(add, n)
	}
	for _, n := range add {
		for k := rng.IntN(3); k > 0; k-- {
			dst := ix.NodeID(int(live[rng.IntN(len(live))]))
			if seen[dst] && !slices.Contains(ids, dst) {
				continue
			}
			edges = append(edges, corpus.Edge{Src: n.ID, Dst: dst, Weight: 1, Kind: "mentions"})
		}
	}
	return remove, add, edges
}

// changeOf is the change over ix that removes the nodes of these ids.
func changeOf(t *testing.T, ix *index.Index, remove []string, add []corpus.Node, edges []corpus.Edge, tomb bool) *index.Change {
	t.Helper()
	ch := &index.Change{Add: slices.Clone(add), Edges: slices.Clone(edges), Tombstone: tomb}
	for _, id := range remove {
		v, ok := ix.Lookup(id)
		if !ok {
			t.Fatalf("Lookup(%q): not found", id)
		}
		ch.Remove = append(ch.Remove, v)
	}
	slices.Sort(ch.Remove)
	return ch
}

// TestTombstonesEqualRenumbering applies the same random changes two
// ways, deleting in place and renumbering, and checks at every step that
// the index that deletes in place, compacted, equals the renumbered one;
// that its lookups, document sizes and edges already do before
// compaction; and, at the end, that the written index equals a build.
func TestTombstonesEqualRenumbering(t *testing.T) {
	ctx := context.Background()
	c := synth.Generate(synth.Options{People: 60, Cities: 15, Countries: 5, Bands: 20, Queries: 4})
	base := indextest.Open(t, indextest.Build(t, c))
	rng := rand.New(rand.NewPCG(11, 13))
	tomb, renum := base, base
	var gone []string // removed texts
	for step := range 30 {
		remove, add, edges := liveChange(rng, renum, step, gone)
		for _, id := range remove {
			v, _ := renum.Lookup(id)
			gone = append(gone, renum.Title(int(v))+" "+renum.Text(int(v)))
		}
		var err error
		if tomb, err = tomb.Apply(ctx, changeOf(t, tomb, remove, add, edges, step%11 != 10)); err != nil {
			t.Fatalf("step %d, deleting in place: %v", step, err)
		}
		if renum, err = renum.Apply(ctx, changeOf(t, renum, remove, add, edges, false)); err != nil {
			t.Fatalf("step %d, renumbering: %v", step, err)
		}
		if tomb.Live() != renum.N() {
			t.Fatalf("step %d: %d live nodes, want %d", step, tomb.Live(), renum.N())
		}
		for _, id := range remove {
			if v, ok := tomb.Lookup(id); ok && tomb.NodeID(int(v)) != id || ok && tomb.IsDeleted(int(v)) {
				t.Fatalf("step %d: Lookup(%q) = %d, a deleted node", step, id, v)
			}
		}
		for v := range renum.N() {
			id, doc := renum.NodeID(v), renum.Document(v)
			if u, ok := tomb.Lookup(id); !ok || tomb.IsDeleted(int(u)) || tomb.NodeID(int(u)) != id {
				t.Fatalf("step %d: Lookup(%q) = %d, %v", step, id, u, ok)
			}
			if g, w := tomb.DocumentSize(doc), renum.DocumentSize(doc); g != w {
				t.Fatalf("step %d: document %q has %d passages, want %d", step, doc, g, w)
			}
		}
		if g, w := edgeList(t, tomb), edgeList(t, renum); !reflect.DeepEqual(g, w) {
			t.Fatalf("step %d: edges differ before compaction: %d vs %d", step, len(g), len(w))
		}
		if tomb.Deleted() > 0 && !reflect.DeepEqual(tomb.Names(), renum.Names()) {
			t.Fatalf("step %d: Names lists deleted nodes' titles", step)
		}
		// A word only deleted passages held embeds as on the renumbered
		// index, which dropped it.
		if g, w := embedAll(t, tomb, gone), embedAll(t, renum, gone); !reflect.DeepEqual(g, w) {
			t.Fatalf("step %d: removed texts embed otherwise than on the renumbered index", step)
		}
		compacted, err := tomb.Compact(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if compacted.Deleted() != 0 {
			t.Fatalf("step %d: %d deleted nodes after Compact", step, compacted.Deleted())
		}
		compareIndexes(t, compacted, renum)
		if !reflect.DeepEqual(compacted.Vectors[:len(renum.Vectors)], renum.Vectors[:len(renum.Vectors)]) {
			t.Fatalf("step %d: vectors differ", step)
		}
	}
	if tomb.Deleted() == 0 {
		t.Fatal("the sequence left no deleted node: the test would not test them")
	}
	dir := t.TempDir() + "/written"
	if _, err := tomb.WriteTo(ctx, dir, &index.LiveState{Log: "test", Seq: 30}, ""); err != nil {
		t.Fatal(err)
	}
	back := indextest.Open(t, dir)
	if back.Deleted() != 0 {
		t.Fatal("an index on disk holds deleted nodes")
	}
	compareIndexes(t, back, renum)
}

func embedAll(t *testing.T, ix *index.Index, texts []string) []float32 {
	t.Helper()
	v, err := ix.Embedder.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestTombstoneRefusals checks a change that removes a deleted node, and
// one that would leave no live node.
func TestTombstoneRefusals(t *testing.T) {
	ctx := context.Background()
	c := synth.Generate(synth.Options{People: 6, Cities: 2, Countries: 1, Bands: 2, Queries: 1})
	ix := indextest.Open(t, indextest.Build(t, c))
	next, err := ix.Apply(ctx, &index.Change{Remove: []int32{0}, Tombstone: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := next.Apply(ctx, &index.Change{Remove: []int32{0}, Tombstone: true}); err == nil || !strings.Contains(err.Error(), "deleted already") {
		t.Fatalf("removing a deleted node: %v", err)
	}
	if _, err := index.RefreshStale(ctx, next, index.RefreshEnv{Backend: cpu.New()}); err == nil || !strings.Contains(err.Error(), "deleted nodes") {
		t.Fatalf("a refresh of an index with deleted nodes: %v", err)
	}
	if r, err := next.Refit(ctx); err != nil || r.Deleted() != 0 || r.N() != next.Live() {
		t.Fatalf("a refit of an index with deleted nodes: %v", err)
	}
	all := liveNodes(next)
	if _, err := next.Apply(ctx, &index.Change{Remove: all, Tombstone: true}); err == nil || !strings.Contains(err.Error(), "without nodes") {
		t.Fatalf("removing every live node: %v", err)
	}
	if _, err := next.Apply(ctx, &index.Change{Remove: all}); err == nil || !strings.Contains(err.Error(), "without nodes") {
		t.Fatalf("removing every live node, renumbering: %v", err)
	}
}

// TestDroppingTheLastNodes: a change that removes the last nodes keeps
// every other node's number but leaves fewer nodes, which the graph's
// blocks cannot hold: a compaction of passages added and deleted in
// place, and a renumbering removal of the last node, still work (they
// failed once at every checkpoint and merge) and equal a renumbering.
func TestDroppingTheLastNodes(t *testing.T) {
	ctx := context.Background()
	c := synth.Generate(synth.Options{People: 6, Cities: 2, Countries: 1, Bands: 2, Queries: 1})
	ix := indextest.Open(t, indextest.Build(t, c))
	add := []corpus.Node{{ID: "x1", Text: "an added passage"}, {ID: "x2", Text: "another added passage"}}
	edges := []corpus.Edge{{Src: "x1", Dst: ix.NodeID(0), Weight: 1, Kind: "links"}, {Src: ix.NodeID(1), Dst: "x2", Weight: 1, Kind: "links"}}
	added, err := ix.Apply(ctx, &index.Change{Add: add, Edges: edges, Tombstone: true})
	if err != nil {
		t.Fatal(err)
	}
	deleted, err := added.Apply(ctx, &index.Change{Remove: []int32{int32(ix.N()), int32(ix.N() + 1)}, Tombstone: true})
	if err != nil {
		t.Fatal(err)
	}
	compacted, err := deleted.Compact(ctx)
	if err != nil {
		t.Fatalf("compacting deleted nodes at the end: %v", err)
	}
	want := edgeList(t, ix)
	if g := edgeList(t, compacted); compacted.N() != ix.N() || !reflect.DeepEqual(g, want) {
		t.Fatalf("compacted: %d nodes, %d edges; want %d, %d", compacted.N(), len(g), ix.N(), len(want))
	}
	renum, err := added.Apply(ctx, &index.Change{Remove: []int32{int32(ix.N() + 1)}})
	if err != nil {
		t.Fatalf("removing the last node, renumbering: %v", err)
	}
	if renum.N() != ix.N()+1 || renum.Graph().Out.N() != renum.N() || renum.Graph().In.N() != renum.N() {
		t.Fatalf("after removing the last node: %d nodes, graph of %d", renum.N(), renum.Graph().Out.N())
	}
}
