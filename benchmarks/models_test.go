package benchmarks

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/models"
)

// sciFactWithHead builds a SciFact index with a trained lexical head.
func sciFactWithHead(b *testing.B) *index.Index {
	c := loadSciFact(b)
	dir := filepath.Join(b.TempDir(), "ix")
	must(b, index.Build(context.Background(), c, dir)) // trains the head by default
	ix, err := index.Open(dir, store.OpenOptions{})
	must(b, err)
	b.Cleanup(func() { ix.Close() })
	return ix
}

// BenchmarkLexicalCrossEncoder measures the embedded lexical encoder on
// SciFact: pairs/s when scoring each query's BM25 top 100, and a
// FastInsight-like access pattern (10 re-rankings of a list growing by 10
// up to 100) with the per-query latent cache and without it.
func BenchmarkLexicalCrossEncoder(b *testing.B) {
	ix := sciFactWithHead(b)
	c := loadSciFact(b)
	ce, err := ix.CrossEncoder()
	must(b, err)
	svc, err := models.NewLatentService(ce.Enc, engine.SchedulerOptions{})
	must(b, err)
	defer svc.Close(context.Background())
	tops := make([][]int32, len(c.Queries))
	for i, q := range c.Queries {
		for _, h := range ix.BM25.Search(q.Text, 100) {
			tops[i] = append(tops[i], h.Index)
		}
	}
	b.Run("top100", func(b *testing.B) {
		pairs, i := 0, 0
		for b.Loop() {
			q := i % len(c.Queries)
			sess, _ := svc.Session(context.Background(), c.Queries[q].Text, false)
			_, err := sess.Latents(context.Background(), tops[q])
			must(b, err)
			pairs += len(tops[q])
			i++
		}
		b.ReportMetric(float64(pairs)/b.Elapsed().Seconds(), "pairs/s")
	})
	for _, noCache := range []bool{false, true} {
		b.Run(fmt.Sprintf("rerank10x/cache=%v", !noCache), func(b *testing.B) {
			encoded, i := 0, 0
			for b.Loop() {
				q := i % len(c.Queries)
				sess, _ := svc.Session(context.Background(), c.Queries[q].Text, noCache)
				for n := 10; n <= len(tops[q]); n += 10 {
					_, err := sess.Latents(context.Background(), tops[q][:n])
					must(b, err)
				}
				encoded += sess.Encoded()
				i++
			}
			b.ReportMetric(float64(encoded)/float64(b.N), "pairs-encoded/query")
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)*1e3, "ms/query")
		})
	}
}
