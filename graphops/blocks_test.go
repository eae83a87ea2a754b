package graphops

import (
	"context"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// TestRewriteBlocksEqualsRewrite runs chains of in-place changes over
// blocks and flat, on random graphs spanning several blocks, with dropped
// rows, dropped and re-pointed entries and added edges: every step's
// blocks, made flat, equal Rewrite's graph, and blocks no looked-at row
// reaches are shared.
func TestRewriteBlocksEqualsRewrite(t *testing.T) {
	t.Run("mixed", func(t *testing.T) { rewriteBlocksEqualsRewrite(t, randomEdges) })
	// Mostly weight 1 and one relation, as a mentions graph: blocks and
	// rows share runs of them, and turn back to arrays of their own when
	// an entry differs.
	t.Run("uniform", func(t *testing.T) { rewriteBlocksEqualsRewrite(t, uniformEdges) })
}

// uniformEdges are randomEdges of weight 1 and relation 2, but one in
// fifty.
func uniformEdges(rng *rand.Rand, n, m int) []Edge {
	es := randomEdges(rng, n, m)
	for i := range es {
		if rng.IntN(50) > 0 {
			es[i].W, es[i].Rel = 1, 2
		}
	}
	return es
}

func rewriteBlocksEqualsRewrite(t *testing.T, edges func(rng *rand.Rand, n, m int) []Edge) {
	onesRun(1 << 16) // grown once now, so that every block sharing it shares this array (checkRuns)
	rng := rand.New(rand.NewPCG(3, 5))
	ctx := context.Background()
	shared, runBlocks := 0, 0
	for trial := range 150 {
		n := 1 + rng.IntN(4*BlockRows)
		flat, err := Build(n, edges(rng, n, rng.IntN(6*n)), true)
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := GraphBlocks(flat)
		if err != nil {
			t.Fatal(err)
		}
		for step := range 4 {
			oldN := n
			rowOf, newN := rowsInPlace(rng, oldN)
			if rng.IntN(3) == 0 {
				for u := range rowOf { // most commits remove nothing
					rowOf[u] = int32(u)
				}
			}
			keep, rows := randomKeep(rng, flat, rowOf, newN)
			added := edges(rng, newN, rng.IntN(20))
			want, err := Rewrite(ctx, flat, newN, rowOf, func(u int, p int64) (int32, bool) {
				return keep(u, flat.Out.Idx[p], flat.Out.Rel[p])
			}, added)
			if err != nil {
				t.Fatal(err)
			}
			got, err := RewriteBlocks(ctx, blocks, newN, rowOf, rows, keep, added)
			if err != nil {
				t.Fatalf("trial %d step %d: %v", trial, step, err)
			}
			g := got.Graph(ctx)
			for dir, pair := range [][2]*CSR{{&g.Out, &want.Out}, {&g.In, &want.In}} {
				if !sameCSR(pair[0], pair[1]) {
					t.Fatalf("trial %d step %d direction %d: blocks\n%+v\nflat\n%+v", trial, step, dir, *pair[0], *pair[1])
				}
			}
			if got.Out.Edges() != int64(len(want.Out.Idx)) || got.In.Edges() != int64(len(want.In.Idx)) {
				t.Fatalf("trial %d step %d: %d/%d edges, want %d", trial, step, got.Out.Edges(), got.In.Edges(), len(want.Out.Idx))
			}
			for b := range min(len(got.Out.blocks), len(blocks.Out.blocks)) {
				if got.Out.blocks[b] == blocks.Out.blocks[b] {
					shared++
				}
			}
			runBlocks += checkRuns(t, &got.Out, &blocks.Out) + checkRuns(t, &got.In, &blocks.In)
			flat, blocks, n = want, got, newN
		}
	}
	if shared == 0 {
		t.Error("no block was ever shared with the graph before")
	}
	if uniformRun := edges(rand.New(rand.NewPCG(1, 1)), 4, 4)[0].W == 1; uniformRun && runBlocks == 0 {
		t.Error("no block made shares the runs of weight 1")
	}
	for i, w := range onesRun(1 << 16) { // nothing wrote through a block into the shared runs
		if w != 1 {
			t.Fatalf("the run of ones holds %v at %d", w, i)
		}
	}
	for i, r := range relRun(2, 1<<10) {
		if r != 2 {
			t.Fatalf("the run of relation 2 holds %d at %d", r, i)
		}
	}
}

// checkRuns checks that the blocks got made anew (not in old) share runs
// exactly when their entries are uniform, and counts those that do.
func checkRuns(t *testing.T, got, old *Blocks) int {
	t.Helper()
	n := 0
	for b, bl := range got.blocks {
		if b < len(old.blocks) && bl == old.blocks[b] || len(bl.idx) == 0 {
			continue
		}
		var u uniform
		u.add(bl.w, bl.rel)
		runs.Lock()
		inRun := unsafe.SliceData(bl.w) == unsafe.SliceData(runs.ones)
		runs.Unlock()
		if !u.mixed != inRun {
			t.Fatalf("block %d: uniform %v, shares the run of ones %v", b, !u.mixed, inRun)
		}
		if inRun {
			n++
		}
	}
	return n
}

// randomKeep drops and re-points entries of some rows (as a change's
// removed and remade rows do) and returns the rows it may change,
// with a few others.
func randomKeep(rng *rand.Rand, g *Graph, rowOf []int32, n int) (KeepFunc, []int32) {
	oldN := len(rowOf)
	touchy := make([]bool, oldN) // rows whose entries may change
	var rows []int32
	for u := range oldN {
		if rowOf[u] < 0 || rng.IntN(8) == 0 {
			touchy[u] = true
		}
	}
	for u := range oldN { // rows with an entry into a removed vertex
		for _, d := range g.Out.Neighbors(u) {
			if rowOf[d] < 0 {
				touchy[u] = true
			}
		}
	}
	for u := range oldN {
		if touchy[u] || rng.IntN(10) == 0 {
			rows = append(rows, int32(u), int32(u)) // repeats are allowed
		}
	}
	rng.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	seed := rng.Uint64()
	keep := func(u int, dst, rel int32) (int32, bool) {
		if !touchy[u] {
			return dst, true
		}
		h := rand.New(rand.NewPCG(seed, uint64(u)<<32|uint64(dst)<<2|uint64(rel)))
		switch {
		case h.IntN(4) == 0:
			return 0, false
		case rowOf[dst] < 0 && h.IntN(2) == 0:
			return int32(h.IntN(n)), true // re-pointed, as a replaced document's edges are
		case rowOf[dst] < 0:
			return 0, false
		}
		return dst, true
	}
	return keep, rows
}

func TestRewriteBlocksRefuses(t *testing.T) {
	ctx := context.Background()
	g, _ := Build(3, []Edge{{Src: 0, Dst: 1, W: 1}}, true)
	b, err := GraphBlocks(g)
	if err != nil {
		t.Fatal(err)
	}
	keep := func(u int, dst, rel int32) (int32, bool) { return dst, true }
	cases := map[string]func() error{
		"renumbered": func() error { _, err := RewriteBlocks(ctx, b, 3, []int32{1, 0, 2}, nil, keep, nil); return err },
		"fewer rows": func() error { _, err := RewriteBlocks(ctx, b, 2, []int32{0, 1, 2}, nil, keep, nil); return err },
		"short":      func() error { _, err := RewriteBlocks(ctx, b, 3, []int32{0, 1}, nil, keep, nil); return err },
		"edge outside": func() error {
			_, err := RewriteBlocks(ctx, b, 3, []int32{0, 1, 2}, nil, keep, []Edge{{Src: 0, Dst: 3}})
			return err
		},
		"row outside": func() error { _, err := RewriteBlocks(ctx, b, 3, []int32{0, 1, 2}, []int32{3}, keep, nil); return err },
		"kept outside": func() error {
			_, err := RewriteBlocks(ctx, b, 3, []int32{0, 1, 2}, []int32{0}, func(int, int32, int32) (int32, bool) { return 5, true }, nil)
			return err
		},
	}
	for name, f := range cases {
		if f() == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := BlocksOf(&CSR{Ptr: []int64{0, 1}, Idx: []int32{0}, W: []float32{1}}); err == nil {
		t.Error("blocks without relations: no error")
	}
}
