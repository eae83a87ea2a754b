package seeder

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/index/indextest"
	"github.com/gleaner-rag/gleaner/kernels/cpu"
	"github.com/gleaner-rag/gleaner/models/lexical"
	encoder "github.com/gleaner-rag/gleaner/models/seeder"
	"github.com/gleaner-rag/gleaner/retrieve"
)

func TestQuestionTokensMaskMentions(t *testing.T) {
	text := "Which films did Ann Lee direct with Bob?"
	toks := linkTokens(text)
	ms := []linkMatch{{node: 3, start: 3, end: 5}, {node: 4, start: 3, end: 5}, {node: 9, start: 7, end: 8}}
	got := questionTokens(text, ms)
	want := []string{"which", "films", "did", mentionToken, "direct", "with", mentionToken}
	if !slices.Equal(got, want) {
		t.Fatalf("tokens %v of %v, want %v", got, toks, want)
	}
	fs := ngrams([]string{"a", "b"})
	if !slices.Equal(fs, []string{"w a", "w b", "b ^ a", "b a b", "b b $"}) {
		t.Fatalf("features %v", fs)
	}
}

// TestPathInputs: each relation row carries its relation's per-hop
// probability in its direction, and each node the mass spread from the
// linked rows along the rows' relations.
func TestPathInputs(t *testing.T) {
	// relations 0 and 1; rows: 0 = rel 1 forward, 1 = rel 1 inverse, 2 = rel 0 forward, 3 = rel 0 inverse
	g := &encoder.Graph{IDs: []int32{10, 11, 12, 13}, Hops: []int{0, 1, 1, 2}, Linked: []bool{true, false, false, false},
		Rels: []encoder.Relation{{}, {Inverse: true}, {}, {Inverse: true}},
		Edges: []encoder.Edge{{Src: 0, Dst: 1, Rel: 0}, {Src: 1, Dst: 0, Rel: 1}, {Src: 0, Dst: 2, Rel: 2}, {Src: 2, Dst: 0, Rel: 3},
			{Src: 1, Dst: 3, Rel: 2}, {Src: 3, Dst: 1, Rel: 3}}}
	relOf := []int32{1, 1, 0, 0}
	// P[t][2r+inverse]
	p := &encoder.Paths{P: [][]float64{{0.1, 0.2, 0.6, 0.1}, {0.7, 0.05, 0.05, 0.2}}, Alpha: []float64{0.25, 0.75}}
	addPathInputs(g, p, relOf)
	for i, r := range g.Rels {
		for t0, v := range r.Path {
			if want := p.Rel(relOf[i], r.Inverse, t0+1); float64(v) != float64(float32(want)) {
				t.Errorf("row %d hop %d: %g, want %g", i, t0+1, v, want)
			}
		}
	}
	// hop 1 from node 0: node 1 by rel 1 forward (0.6), node 2 by rel 0
	// forward (0.1), over the directions leaving node 0 (0.6 + 0.1)
	// hop 2: node 3 from node 1 by rel 0 forward (·0.7); node 0 back from 1
	// (·0.2) and 2 (·0.05), over the directions leaving 1 and 2 (0.7 + 0.2 + 0.05)
	x1 := []float64{0, 0.6 / 0.7, 0.1 / 0.7, 0}
	x2 := []float64{(x1[1]*0.2 + x1[2]*0.05) / 0.95, 0, 0, x1[1] * 0.7 / 0.95}
	for i := range g.IDs {
		want := []float64{x1[i], x2[i], 0.25*x1[i] + 0.75*x2[i]}
		for k, w := range want {
			if got := float64(g.PathMass[i*3+k]); math.Abs(got-w) > 1e-7 {
				t.Errorf("node %d value %d: %g, want %g", i, k, got, w)
			}
		}
	}
}

// TestGraphPathRows: the encoder graph's relation rows carry their own
// relation's probabilities, however many edges share a row.
func TestGraphPathRows(t *testing.T) {
	node := func(id string) corpus.Node { return corpus.Node{ID: id, Title: id, Text: id, Type: "entity"} }
	c := &corpus.Corpus{Nodes: []corpus.Node{node("ann"), node("paris"), node("lyon"), node("france"), node("italy")},
		Edges: []corpus.Edge{{Src: "ann", Dst: "paris", Rel: "lives_in"}, {Src: "ann", Dst: "lyon", Rel: "lives_in"},
			{Src: "paris", Dst: "france", Rel: "country"}, {Src: "lyon", Dst: "france", Rel: "country"}, {Src: "ann", Dst: "italy", Rel: "born_in"}}}
	lsa := lexical.DefaultLSA()
	lsa.Dims, lsa.MinDF, lsa.MaxDFRatio = 3, 1, 1
	ix := indextest.Open(t, indextest.Build(t, c, index.WithLSA(lsa)))
	km, err := newKG(ix, retrieve.Env{Backend: cpu.New()}, DefaultKGOptions(), true)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cands, err := km.candidates(ctx, retrieve.Query{Text: "where does ann live"})
	if err != nil {
		t.Fatal(err)
	}
	T := len(km.o.KHop.Quotas)
	p := &encoder.Paths{Alpha: make([]float64, T)}
	for h := range T {
		row := make([]float64, 2*ix.Meta.Relations)
		for k := range row {
			row[k] = float64(10*h+k) / 100
		}
		p.P = append(p.P, row)
	}
	cands.paths = p
	var rows [][]float32
	for v := range ix.N() {
		rows = append(rows, ix.Vector(v))
	}
	pca, err := encoder.FitPCA(rows, ix.Meta.Dims, 2)
	if err != nil {
		t.Fatal(err)
	}
	cfg := encoder.DefaultConfig()
	cfg.In, cfg.Relations, cfg.Paths = 2, ix.Meta.Relations, T
	in, err := newSeederInputs(km, pca, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	g := in.graph(km, cands, "where does ann live")
	if len(g.Edges) <= len(g.Rels) {
		t.Fatalf("%d edges over %d relation rows: the test needs rows shared by edges", len(g.Edges), len(g.Rels))
	}
	for i, r := range g.Rels {
		for h, v := range r.Path {
			if want := float32(p.Rel(r.ID, r.Inverse, h+1)); v != want {
				t.Errorf("row %d (relation %d, inverse %v) hop %d: %g, want %g", i, r.ID, r.Inverse, h+1, v, want)
			}
		}
	}
	if err := g.Validate(cfg); err != nil {
		t.Fatal(err)
	}
}
