package bert_test

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/gleaner-rag/gleaner/kernels/cpu"
	"github.com/gleaner-rag/gleaner/models/bert"
	"github.com/gleaner-rag/gleaner/models/ort"
)

func tinyConfig(kind string) bert.Config {
	return bert.Config{ModelType: kind, VocabSize: 64, Hidden: 32, Layers: 2, Heads: 4, Intermediate: 64,
		MaxPositions: 64, TypeVocabSize: 2, LayerNormEps: 1e-5, PadTokenID: 1, HiddenAct: "gelu", NumLabels: 1}
}

func randomBatch(rng *rand.Rand, cfg bert.Config, lengths ...int) bert.Batch {
	var b bert.Batch
	for _, n := range lengths {
		ids, types := make([]int32, n), make([]int32, n)
		for p := range ids {
			ids[p] = int32(2 + rng.IntN(cfg.VocabSize-2))
			if p >= n/2 && cfg.ModelType == "bert" {
				types[p] = 1
			}
		}
		b.IDs, b.Types = append(b.IDs, ids), append(b.Types, types)
	}
	return b
}

// TestNativeMatchesONNXRuntime compares the native encoder with ONNX
// Runtime on the same generated model and inputs, across batch sizes and
// padding: relative error ≤ 1e-4 on hidden states and scores.
func TestNativeMatchesONNXRuntime(t *testing.T) {
	if err := ort.Init(); err != nil {
		t.Skipf("ONNX Runtime library absent (%v); `make ort-lib` fetches it", err)
	}
	for _, kind := range []string{"bert", "xlm-roberta"} {
		cfg := tinyConfig(kind)
		tensors := bert.RandomTensors(cfg, 11, true)
		var buf bytes.Buffer
		if err := bert.WriteONNX(&buf, cfg, tensors); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "model.onnx")
		os.WriteFile(path, buf.Bytes(), 0o644)
		sess, err := ort.Open(path, "last_hidden_state", "logits")
		if err != nil {
			t.Fatal(err)
		}
		defer sess.Close()
		native, err := bert.New(cfg, tensors, cpu.New())
		if err != nil {
			t.Fatal(err)
		}
		fromONNX, err := bert.LoadONNX(path, cfg, cpu.New())
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(3, 7))
		for _, lengths := range [][]int{{9}, {5, 17, 1}, {12, 12, 3, 30, 8}} {
			batch := randomBatch(rng, cfg, lengths...)
			h, s, err := native.Forward(context.Background(), batch)
			if err != nil {
				t.Fatal(err)
			}
			h2, _, err := fromONNX.Forward(context.Background(), batch)
			if err != nil {
				t.Fatal(err)
			}
			for i := range h {
				if h[i] != h2[i] {
					t.Fatalf("weights read from ONNX initializers give a different forward pass at %d", i)
				}
			}
			outs, s2, err := sess.Run(batch.IDs, batch.Types, int32(cfg.PadTokenID))
			if err != nil {
				t.Fatal(err)
			}
			if s != s2 {
				t.Fatalf("padded lengths %d vs %d", s, s2)
			}
			hiddenErr := 0.0
			for b, ids := range batch.IDs {
				for p := range ids {
					for j := 0; j < cfg.Hidden; j++ {
						i := (b*s+p)*cfg.Hidden + j
						hiddenErr = math.Max(hiddenErr, math.Abs(float64(h[i]-outs[0][i]))/(1+math.Abs(float64(outs[0][i]))))
					}
				}
			}
			lat := bert.FirstToken(h, len(lengths), s, cfg.Hidden)
			scores := make([]float32, len(lengths))
			native.Head.Score(lat, len(lengths), scores)
			scoreErr := 0.0
			for b := range scores {
				scoreErr = math.Max(scoreErr, math.Abs(float64(scores[b]-outs[1][b]))/(1+math.Abs(float64(outs[1][b]))))
			}
			t.Logf("%-12s batch %d lengths %v: max relative error hidden %.2e, scores %.2e", kind, len(lengths), lengths, hiddenErr, scoreErr)
			if hiddenErr > 1e-4 || scoreErr > 1e-4 || hiddenErr != hiddenErr || scoreErr != scoreErr {
				t.Errorf("%s lengths %v: hidden %.3g, scores %.3g exceed 1e-4", kind, lengths, hiddenErr, scoreErr)
			}
		}
	}
}
