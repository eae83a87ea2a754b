package benchmarks

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/gleaner-rag/gleaner/models/testmodel"
	"github.com/gleaner-rag/gleaner/models/tokenize"
	"github.com/gleaner-rag/gleaner/models/transformer"
)

// BenchmarkTokenize measures tokenization throughput over SciFact node
// texts (one worker) with a generated BERT WordPiece tokenizer whose
// vocabulary is SciFact's 500 most frequent words plus characters, and the
// share of a transformer rerank's time (100 pairs, MiniLM-L2-shaped
// random model, native runtime) that tokenizing the query takes when node
// texts were tokenized at index time.
func BenchmarkTokenize(b *testing.B) {
	c := loadSciFact(b)
	texts := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		texts[i] = n.Title + "\n" + n.Text
	}
	dir := filepath.Join(b.TempDir(), "m")
	_, err := testmodel.Write(dir, texts, testmodel.Options{Cross: true, Hidden: 384, Heads: 12, Layers: 2})
	must(b, err)
	tk, err := tokenize.Load(filepath.Join(dir, "tokenizer.json"))
	must(b, err)
	b.Run("nodes", func(b *testing.B) {
		tokens, i := 0, 0
		for b.Loop() {
			ids, err := tk.IDs(texts[i%len(texts)])
			must(b, err)
			tokens += len(ids)
			i++
		}
		b.ReportMetric(float64(tokens)/b.Elapsed().Seconds(), "tokens/s")
	})
	b.Run("query-share", func(b *testing.B) {
		enc, _, err := transformer.Load(dir, transformer.Native, benchBackend(b), func(n int32) string { return texts[n] }, 256)
		must(b, err)
		stored := make([][]int32, len(texts))
		for i, t := range texts {
			stored[i], _ = tk.IDs(t)
		}
		hash, _ := fileSHA(filepath.Join(dir, "tokenizer.json"))
		enc.UseStoredTokens(hash, func(n int32) []int32 { return stored[n] })
		nodes := make([]int32, 100)
		for i := range nodes {
			nodes[i] = int32(i * 7)
		}
		out := make([]float32, 100*enc.Dim())
		var tokT, allT time.Duration
		i := 0
		for b.Loop() {
			q := c.Queries[i%len(c.Queries)].Text
			start := time.Now()
			p, err := enc.Prepare(context.Background(), q)
			must(b, err)
			tokT += time.Since(start)
			must(b, enc.Encode(context.Background(), p, nodes, out))
			allT += time.Since(start)
			i++
		}
		b.ReportMetric(100*float64(tokT)/float64(allT), "%query-tokenize")
		b.ReportMetric(float64(tokT.Microseconds())/float64(b.N), "µs-query-tokenize")
	})
}
