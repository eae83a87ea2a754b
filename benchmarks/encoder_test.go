package benchmarks

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/gleaner-rag/gleaner/models/bert"
	"github.com/gleaner-rag/gleaner/models/ort"
	"github.com/gleaner-rag/gleaner/models/safetensors"
)

// BenchmarkNativeEncoder measures, in one run, the native encoder (engine
// ops on the cpu backend, OpenBLAS GEMM) and ONNX Runtime (CPU, intra-op
// threads = cores) on 100 (query, node) pairs of 256 tokens with seeded
// random weights of a MiniLM-L6 shape (6 × 384) and a BERT-base shape
// (12 × 768), the same model exported by bert.WriteONNX.
func BenchmarkNativeEncoder(b *testing.B) {
	shapes := []struct {
		name                         string
		layers, hidden, heads, inter int
	}{{"minilm-l6", 6, 384, 12, 1536}, {"bert-base", 12, 768, 12, 3072}}
	for _, s := range shapes {
		cfg := bert.Config{ModelType: "bert", VocabSize: 30522, Hidden: s.hidden, Layers: s.layers, Heads: s.heads,
			Intermediate: s.inter, MaxPositions: 512, TypeVocabSize: 2, LayerNormEps: 1e-12, HiddenAct: "gelu", NumLabels: 1}
		tensors := bert.RandomTensors(cfg, 1, true)
		m, err := bert.New(cfg, tensors, benchBackend(b))
		must(b, err)
		rng := rand.New(rand.NewPCG(4, 4))
		var batch bert.Batch
		for p := 0; p < 100; p++ {
			ids, types := make([]int32, 256), make([]int32, 256)
			for i := range ids {
				ids[i] = int32(rng.IntN(cfg.VocabSize))
				if i >= 32 {
					types[i] = 1 // query, then node
				}
			}
			batch.IDs, batch.Types = append(batch.IDs, ids), append(batch.Types, types)
		}
		b.Run(fmt.Sprintf("%s/native/100x256", s.name), func(b *testing.B) {
			for b.Loop() {
				_, _, err := m.Forward(context.Background(), batch)
				must(b, err)
			}
			b.ReportMetric(100/(b.Elapsed().Seconds()/float64(b.N)), "pairs/s")
		})
		b.Run(fmt.Sprintf("%s/ort/100x256", s.name), func(b *testing.B) {
			sess := ortSession(b, cfg, tensors)
			defer sess.Close()
			for b.Loop() {
				_, _, err := sess.Run(batch.IDs, batch.Types, 0)
				must(b, err)
			}
			b.ReportMetric(100/(b.Elapsed().Seconds()/float64(b.N)), "pairs/s")
		})
	}
}

func ortSession(b *testing.B, cfg bert.Config, t map[string]safetensors.Tensor) *ort.Session {
	if err := ort.Init(); err != nil {
		b.Skip(err)
	}
	path := filepath.Join(b.TempDir(), "model.onnx")
	f, err := os.Create(path)
	must(b, err)
	must(b, bert.WriteONNX(f, cfg, t))
	must(b, f.Close())
	sess, err := ort.Open(path, "last_hidden_state")
	must(b, err)
	return sess
}
