package ketrag_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/corpus/synth"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/kernels/cpu"
	"github.com/gleaner-rag/gleaner/methods/ketrag"
	"github.com/gleaner-rag/gleaner/models/kgextract"
	"github.com/gleaner-rag/gleaner/models/lexical"
	"github.com/gleaner-rag/gleaner/models/ner"
	"github.com/gleaner-rag/gleaner/retrieve"
)

// TestChunkGraphOnHNSW: the chunk graph's semantic neighbours come from
// the index's HNSW graph under search hnsw (auto only from 10⁵ nodes),
// the index records which, and at an ef as large as the index the
// skeleton's PageRank is exact search's.
func TestChunkGraphOnHNSW(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ix")
	c, err := synth.GenerateScale(synth.DefaultScale(600))
	if err != nil {
		t.Fatal(err)
	}
	lsa := lexical.DefaultLSA()
	lsa.Dims = 32
	if err := index.Build(context.Background(), c, dir, index.WithLSA(lsa), index.WithoutHead()); err != nil {
		t.Fatal(err)
	}
	cfg, err := retrieve.NewBuildConfig(retrieve.SectionHNSW)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := retrieve.Build(context.Background(), retrieve.BuildEnv{}, dir, cfg); err != nil {
		t.Fatal(err)
	}
	ex, err := kgextract.NewLocal(ner.NewGazetteer(nil, ner.DefaultMinTitleLen))
	if err != nil {
		t.Fatal(err)
	}
	ranks := map[string][]float32{}
	for search, want := range map[string]string{retrieve.SearchExact: "exact", retrieve.SearchHNSW: "hnsw", retrieve.SearchAuto: "exact"} {
		o := ketrag.DefaultBuildOptions()
		o.Backend, o.Extractor, o.Search, o.Ef = cpu.New(), ex, search, 600
		o.KNN.Lexical, o.KNN.Semantic = 0, 3
		m, err := ketrag.Set(context.Background(), dir, nil, o)
		if err != nil {
			t.Fatal(err)
		}
		if m.Search != search || m.ChunkNeighbours != want {
			t.Fatalf("search %s: recorded %q, neighbours %q; want %q", search, m.Search, m.ChunkNeighbours, want)
		}
		ix, err := index.Open(dir, store.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		k, err := ketrag.Of(ix)
		if err != nil {
			t.Fatal(err)
		}
		ranks[search] = slices.Clone(k.PageRank)
		ix.Close()
	}
	if !slices.Equal(ranks[retrieve.SearchExact], ranks[retrieve.SearchHNSW]) {
		t.Fatal("the chunk graph's PageRank on the HNSW graph at ef = N differs from exact search's")
	}
	// At ef 3 the walk misses some neighbours: proof that it ran.
	o := ketrag.DefaultBuildOptions()
	o.Backend, o.Extractor, o.Search, o.Ef = cpu.New(), ex, retrieve.SearchHNSW, 3
	o.KNN.Lexical, o.KNN.Semantic = 0, 3
	if _, err := ketrag.Set(context.Background(), dir, nil, o); err != nil {
		t.Fatal(err)
	}
	ix, err := index.Open(dir, store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if k, err := ketrag.Of(ix); err != nil || slices.Equal(k.PageRank, ranks[retrieve.SearchExact]) {
		t.Fatalf("ef 3: the same PageRank as exact search (%v)", err)
	}
	o = ketrag.DefaultBuildOptions()
	o.Backend, o.Extractor, o.Search = cpu.New(), ex, "fast"
	if _, err := ketrag.Set(context.Background(), dir, nil, o); err == nil {
		t.Fatal("search fast was accepted")
	}
}
