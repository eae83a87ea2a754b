package benchmarks

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/internal/testdata"
)

func loadSciFact(b *testing.B) *corpus.Corpus {
	c, err := corpus.ReadBEIR(testdata.Dataset(b, "beir_scifact"), "test", corpus.ReadOptions{})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

func loadTwoWiki(b *testing.B) *corpus.Corpus {
	c, err := corpus.ReadTwoWiki(testdata.Dataset(b, "hipporag_2wikimultihopqa"), corpus.ReadOptions{})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkIndexBuild measures a whole `gleaner index` (analysis, BM25
// postings, LSA fit to 256 dimensions, graph, checksummed write).
func BenchmarkIndexBuild(b *testing.B) {
	for _, ds := range []struct {
		name string
		load func(*testing.B) *corpus.Corpus
	}{{"scifact", loadSciFact}, {"2wiki", loadTwoWiki}} {
		b.Run(ds.name, func(b *testing.B) {
			c := ds.load(b)
			dir := filepath.Join(b.TempDir(), "ix")
			for b.Loop() {
				if err := index.Build(context.Background(), c, dir, index.WithoutHead()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(c.Nodes))/(b.Elapsed().Seconds()/float64(b.N)), "nodes/s")
		})
	}
}

// BenchmarkBM25Query measures BM25 top-100 latency over SciFact's test
// queries, one query per iteration (cycling), analysis included.
func BenchmarkBM25Query(b *testing.B) {
	c := loadSciFact(b)
	dir := filepath.Join(b.TempDir(), "ix")
	if err := index.Build(context.Background(), c, dir, index.WithoutHead()); err != nil {
		b.Fatal(err)
	}
	ix, err := index.Open(dir, store.OpenOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer ix.Close()
	i := 0
	for b.Loop() {
		ix.BM25.Search(c.Queries[i%len(c.Queries)].Text, 100)
		i++
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)*1e6, "µs/query")
}
