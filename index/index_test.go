package index

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/corpus/synth"
	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/models"
	"github.com/gleaner-rag/gleaner/models/lexical"
)

func smallCorpus() *corpus.Corpus {
	return synth.Generate(synth.Options{People: 80, Cities: 20, Countries: 5, Bands: 20, Queries: 30, Seed: 3})
}

func build(t *testing.T, c *corpus.Corpus, opts ...Option) *Index {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ix")
	if err := Build(context.Background(), c, dir, append([]Option{WithoutHead()}, opts...)...); err != nil {
		t.Fatal(err)
	}
	ix, err := Open(dir, store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix
}

func TestBuildOpenNodesAndGraph(t *testing.T) {
	c := smallCorpus()
	c.Nodes[0].Aliases = []string{"x", "y"}
	ix := build(t, c, WithLSA(lexical.LSAOptions{Dims: 16, MinDF: 2, MaxDFRatio: 0.5, Oversample: 5, PowerIters: 2, Seed: 1}))
	if ix.N() != len(c.Nodes) || ix.Meta.Edges != len(c.Edges) || ix.Meta.Dims != 16 {
		t.Fatalf("meta %+v", ix.Meta)
	}
	for i, n := range c.Nodes {
		if ix.NodeID(i) != n.ID || ix.Title(i) != n.Title || ix.Text(i) != n.Text || ix.Type(i) != n.Type {
			t.Fatalf("node %d read back as %q %q", i, ix.NodeID(i), ix.Title(i))
		}
		if j, ok := ix.Lookup(n.ID); !ok || int(j) != i {
			t.Fatalf("lookup %q = %d", n.ID, j)
		}
	}
	if a := ix.Aliases(0); len(a) != 2 || a[1] != "y" {
		t.Errorf("aliases %v", a)
	}
	deg := 0
	for v := 0; v < ix.N(); v++ {
		deg += ix.Graph().TotalDegree(v)
	}
	if deg != 2*len(c.Edges) {
		t.Errorf("total degree %d, want %d", deg, 2*len(c.Edges))
	}
}

// refBM25 scores every document with float64 arithmetic from the analyzer.
func refBM25(c *corpus.Corpus, query string, k1, b float64) []float64 {
	docs := make([][]string, len(c.Nodes))
	df := map[string]int{}
	total := 0.0
	for i := range c.Nodes {
		docs[i] = lexical.Analyze(IndexText(&c.Nodes[i]))
		total += float64(len(docs[i]))
		seen := map[string]bool{}
		for _, w := range docs[i] {
			if !seen[w] {
				seen[w] = true
				df[w]++
			}
		}
	}
	avg, n := total/float64(len(docs)), float64(len(docs))
	out := make([]float64, len(docs))
	for _, w := range lexical.Analyze(query) {
		idf := math.Log(1 + (n-float64(df[w])+0.5)/(float64(df[w])+0.5))
		for i, d := range docs {
			tf := 0.0
			for _, x := range d {
				if x == w {
					tf++
				}
			}
			if tf > 0 {
				out[i] += idf * tf / (tf + k1*(1-b+b*float64(len(d))/avg))
			}
		}
	}
	return out
}

func TestBM25MatchesReference(t *testing.T) {
	c := smallCorpus()
	ix := build(t, c, WithLSA(lexical.LSAOptions{Dims: 8, MinDF: 2, MaxDFRatio: 0.5, Seed: 1}))
	for _, q := range c.Queries[:10] {
		ref := refBM25(c, q.Text, 0.9, 0.4)
		hits := ix.BM25.Search(q.Text, 5)
		order := make([]int, len(ref))
		for i := range order {
			order[i] = i
		}
		sort.SliceStable(order, func(a, b int) bool { return ref[order[a]] > ref[order[b]] })
		for r, h := range hits {
			want := ref[order[r]]
			// float32 accumulation over a handful of terms: relative 1e-5
			if math.Abs(float64(h.Score)-want) > 1e-5*math.Max(1, want) {
				t.Fatalf("query %q rank %d: score %v, reference %v", q.Text, r, h.Score, want)
			}
			if math.Abs(ref[h.Index]-want) > 1e-5*math.Max(1, want) {
				t.Fatalf("query %q rank %d: node %d has reference score %v, want %v", q.Text, r, h.Index, ref[h.Index], want)
			}
		}
	}
	if hits := ix.BM25.Search("the of and", 5); len(hits) != 0 {
		t.Errorf("stopword-only query returned %d hits", len(hits))
	}
}

func TestLSAIsDeterministic(t *testing.T) {
	c := smallCorpus()
	opt := WithLSA(lexical.LSAOptions{Dims: 12, MinDF: 2, MaxDFRatio: 0.5, Oversample: 4, PowerIters: 1, Seed: 9})
	a, b := build(t, c, opt), build(t, c, opt)
	if a.Manifest.Files[fVectors].CRC32C != b.Manifest.Files[fVectors].CRC32C {
		t.Fatal("two builds with the same seed gave different vectors")
	}
	for i := 0; i < a.N(); i++ {
		var s float64
		for _, x := range a.Vector(i) {
			s += float64(x) * float64(x)
		}
		if math.Abs(s-1) > 1e-5 && s != 0 {
			t.Fatalf("vector %d has squared norm %v", i, s)
		}
	}
	// a document's own text must embed close to its stored vector
	q, err := a.EmbedQuery(context.Background(), IndexText(&c.Nodes[5]))
	if err != nil {
		t.Fatal(err)
	}
	var dot float64
	for j, x := range q {
		dot += float64(x) * float64(a.Vector(5)[j])
	}
	if dot < 0.999 {
		t.Errorf("cosine of node 5 with its own text = %v", dot)
	}
}

func TestPrecomputedVectors(t *testing.T) {
	c := smallCorpus()
	var buf bytes.Buffer
	for i, n := range c.Nodes {
		fmt.Fprintf(&buf, `{"id":%q,"vector":[%d,1,0.5]}`+"\n", n.ID, i%7)
	}
	path := filepath.Join(t.TempDir(), "vecs.jsonl")
	os.WriteFile(path, buf.Bytes(), 0o644)
	ix := build(t, c, WithEmbedder(EmbedderPrecomputed), WithVectors(path), WithMetric(MetricDot))
	if ix.Meta.Dims != 3 || ix.Vector(3)[0] != 3 || ix.LSA != nil {
		t.Fatalf("dims %d, vector %v", ix.Meta.Dims, ix.Vector(3))
	}
	if _, err := ix.EmbedQuery(context.Background(), "x"); !errors.Is(err, models.ErrCannotEmbedText) {
		t.Errorf("text query on a precomputed index: %v", err)
	}
	bad := strings.Replace(buf.String(), `[3,1,0.5]`, `[3,1e39,0.5]`, 1)
	os.WriteFile(path, []byte(bad), 0o644)
	err := Build(context.Background(), c, filepath.Join(t.TempDir(), "ix"), WithEmbedder(EmbedderPrecomputed), WithVectors(path))
	var re *corpus.RecordError
	if !errors.As(err, &re) || re.Field != "vector[1]" || re.Line != 4 {
		t.Errorf("out-of-range value: err = %v", err)
	}
}

func TestBuildOptionsValidatedUpFront(t *testing.T) {
	err := Build(context.Background(), smallCorpus(), filepath.Join(t.TempDir(), "ix"),
		WithEmbedder("bert"), WithBM25(lexical.BM25Params{K1: -1, B: 2}))
	if err == nil || !strings.Contains(err.Error(), "bert") || !strings.Contains(err.Error(), "k1") {
		t.Errorf("want both option errors, got %v", err)
	}
}

func TestCancelledBuildLeavesNothing(t *testing.T) {
	parent := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Build(ctx, smallCorpus(), filepath.Join(parent, "ix")); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if ents, _ := os.ReadDir(parent); len(ents) != 0 {
		t.Errorf("cancelled build left %d entries", len(ents))
	}
}

func TestOpenRejectsInconsistentArrays(t *testing.T) {
	c := smallCorpus()
	ix := build(t, c, WithLSA(lexical.LSAOptions{Dims: 8, MinDF: 2, MaxDFRatio: 0.5, Seed: 1}))
	dir := ix.Dir
	ix.Close()
	// rewrite the store with a graph pointer array that no longer fits
	r, _ := store.Open(dir, store.OpenOptions{})
	w, _ := store.NewWriter(dir)
	for name, fi := range r.Manifest.Files {
		b := append([]byte(nil), mustBytes(t, r, name, fi.Kind)...)
		if name == fOutIdx && len(b) >= 4 {
			b[0], b[1], b[2], b[3] = 0xff, 0xff, 0xff, 0x7f // vertex 2³¹−1
		}
		w.Stream(name, fi.Kind, func(out io.Writer) error { _, err := out.Write(b); return err })
	}
	meta := r.Manifest.Meta
	r.Close()
	if err := w.Commit(meta); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, store.OpenOptions{}); !errors.Is(err, store.ErrCorrupt) {
		t.Errorf("index with an out-of-range vertex opened: %v", err)
	}
}

func mustBytes(t *testing.T, r *store.Reader, name, kind string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.Dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// hashEmbedder is a deterministic stand-in for an external bi-encoder.
type hashEmbedder struct{ nan bool }

func (hashEmbedder) Name() string { return "hash" }
func (hashEmbedder) Dim() int     { return 4 }
func (h hashEmbedder) Embed(_ context.Context, texts []string) ([]float32, error) {
	out := make([]float32, 4*len(texts))
	for i, t := range texts {
		for j, r := range t {
			out[i*4+j%4] += float32(r % 7)
		}
		if h.nan && strings.Contains(t, "Ka") {
			out[i*4] = float32(math.NaN())
		}
	}
	return out, nil
}

func TestTextEmbedder(t *testing.T) {
	c := smallCorpus()
	dir := filepath.Join(t.TempDir(), "ix")
	if err := Build(context.Background(), c, dir, WithTextEmbedder(hashEmbedder{}), WithoutHead()); err != nil {
		t.Fatal(err)
	}
	ix, err := Open(dir, store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ix.EmbedQuery(context.Background(), "x"); err == nil || !strings.Contains(err.Error(), "OpenWith") {
		t.Errorf("query embedding without the embedder: %v", err)
	}
	ix.Close()
	ix, err = OpenWith(dir, store.OpenOptions{}, hashEmbedder{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	v, err := ix.EmbedQuery(context.Background(), IndexText(&c.Nodes[2]))
	if err != nil || math.Abs(float64(v[0]-ix.Vector(2)[0])) > 1e-6 {
		t.Errorf("query vector %v, node vector %v, err %v", v, ix.Vector(2), err)
	}
	if err := Build(context.Background(), c, dir, WithTextEmbedder(hashEmbedder{nan: true})); err == nil || !strings.Contains(err.Error(), "NaN") {
		t.Errorf("NaN from the embedder: %v", err)
	}
}

func TestSetGraphKeepsOtherKinds(t *testing.T) {
	c := smallCorpus() // comes with "mentions" edges
	ix := build(t, c, WithLSA(lexical.LSAOptions{Dims: 8, MinDF: 2, MaxDFRatio: 0.5, Seed: 1}))
	dir, before := ix.Dir, ix.Meta.Edges
	vec0 := append([]float32(nil), ix.Vector(0)...)
	ix.Close()
	knn := []graphops.Edge{{Src: 0, Dst: 1, W: 1}, {Src: 2, Dst: 3, W: 1}}
	if err := SetGraph(context.Background(), dir, "knn", knn); err != nil {
		t.Fatal(err)
	}
	ix2, err := Open(dir, store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix2.Close()
	if ix2.Meta.Edges != before+2 || !reflect.DeepEqual(ix2.Meta.GraphKinds, []string{"mentions", "knn"}) {
		t.Fatalf("after adding knn: %d edges, kinds %v", ix2.Meta.Edges, ix2.Meta.GraphKinds)
	}
	if a := ix2.Adjacency(false, "knn"); a.Ptr[a.N()] != 4 {
		t.Errorf("knn view has %d entries, want 4", a.Ptr[a.N()])
	}
	if ix2.Vector(0)[0] != vec0[0] || ix2.NodeID(3) != c.Nodes[3].ID {
		t.Error("other index files changed")
	}
	if err := SetGraph(context.Background(), dir, "knn", knn[:1]); err != nil {
		t.Fatal(err)
	}
	ix3, _ := Open(dir, store.OpenOptions{})
	defer ix3.Close()
	if ix3.Meta.Edges != before+1 {
		t.Errorf("replacing knn: %d edges, want %d", ix3.Meta.Edges, before+1)
	}
	if err := SetGraph(context.Background(), dir, "knn", []graphops.Edge{{Src: 0, Dst: 99999}}); err == nil {
		t.Error("edge outside the index accepted")
	}
}

func TestSetTokensRoundTrip(t *testing.T) {
	c := smallCorpus()
	ix := build(t, c, WithLSA(lexical.LSAOptions{Dims: 8, MinDF: 2, MaxDFRatio: 0.5, Seed: 1}))
	dir := ix.Dir
	if _, _, ok := ix.Tokens(0); ok {
		t.Fatal("fresh index claims stored tokens")
	}
	ix.Close()
	ids := make([][]int32, len(c.Nodes))
	for i := range ids {
		ids[i] = []int32{int32(i), int32(i + 1)}
	}
	ids[3] = nil
	if err := SetTokens(context.Background(), dir, "abc", ids); err != nil {
		t.Fatal(err)
	}
	ix2, err := Open(dir, store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix2.Close()
	got, hash, ok := ix2.Tokens(5)
	if !ok || hash != "abc" || !reflect.DeepEqual(got, []int32{5, 6}) {
		t.Errorf("tokens %v %q %v", got, hash, ok)
	}
	if got, _, _ := ix2.Tokens(3); len(got) != 0 {
		t.Errorf("empty token list read back as %v", got)
	}
	if err := SetTokens(context.Background(), dir, "abc", ids[:2]); err == nil {
		t.Error("token lists for the wrong number of nodes accepted")
	}
}

// A section's string table with a negative count (a crafted manifest) is
// an error, not an index out of range.
func TestStringsNegativeCount(t *testing.T) {
	for _, n := range []int{-1, -2} {
		if err := (Strings{}).check(n); err == nil {
			t.Errorf("check(%d) on empty strings: nil error", n)
		}
	}
}
