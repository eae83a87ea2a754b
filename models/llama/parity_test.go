package llama_test

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/gleaner-rag/gleaner/kernels/cpu"
	"github.com/gleaner-rag/gleaner/models/llama"
	"github.com/gleaner-rag/gleaner/models/ort"
)

// configs are the parity cases: untied with the default rotary
// frequencies, and tied embeddings with Llama 3's rope scaling set so that
// all three frequency bands occur.
func configs() map[string]llama.Config {
	plain := llama.TinyConfig(96)
	scaled := llama.TinyConfig(96)
	scaled.TieWordEmbeddings = true
	scaled.RopeScaling = &llama.RopeScaling{RopeType: "llama3", Factor: 4, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPos: 64}
	return map[string]llama.Config{"plain": plain, "tied+llama3": scaled}
}

func randomIDs(rng *rand.Rand, n, vocab int) []int32 {
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32(rng.IntN(vocab))
	}
	return ids
}

func maxRelErr(got, want []float32) float64 {
	e := 0.0
	for i := range want {
		d := math.Abs(float64(got[i]-want[i])) / (1 + math.Abs(float64(want[i])))
		if d != d {
			return math.Inf(1)
		}
		e = math.Max(e, d)
	}
	return e
}

// TestNativeMatchesONNXRuntime compares the native decoder's logits at
// every position with ONNX Runtime's on the same generated model: relative
// error ≤ 1e-4.
func TestNativeMatchesONNXRuntime(t *testing.T) {
	if err := ort.Init(); err != nil {
		t.Skipf("ONNX Runtime library absent (%v); `make ort-lib` fetches it", err)
	}
	for name, cfg := range configs() {
		tensors := llama.RandomTensors(cfg, 7)
		var buf bytes.Buffer
		if err := llama.WriteONNX(&buf, cfg, tensors); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "model.onnx")
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		sess, err := ort.OpenIO(path, []string{"input_ids"}, []string{"logits"})
		if err != nil {
			t.Fatal(err)
		}
		m, err := llama.New(cfg, tensors, cpu.New())
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		for _, n := range []int{1, 7, 100} {
			ids := randomIDs(rng, n, cfg.VocabSize)
			s, err := m.NewSession(n, nil)
			if err != nil {
				t.Fatal(err)
			}
			native, err := s.Forward(context.Background(), ids, true)
			s.Close()
			if err != nil {
				t.Fatal(err)
			}
			in := make([]int64, n)
			for i, id := range ids {
				in[i] = int64(id)
			}
			outs, err := sess.RunInt64([]int64{1, int64(n)}, in)
			if err != nil {
				t.Fatal(err)
			}
			e := maxRelErr(native, outs[0])
			t.Logf("%-12s %3d tokens: max relative error of the logits %.2e", name, n, e)
			if e > 1e-4 {
				t.Errorf("%s, %d tokens: logits differ from ONNX Runtime by %.3g > 1e-4", name, n, e)
			}
		}
		sess.Close()
		m.Close()
	}
}

// TestKVCacheMatchesFullPass decodes a sequence as a prefill and then one
// token at a time, and compares each step's logits with the full pass's.
func TestKVCacheMatchesFullPass(t *testing.T) {
	for name, cfg := range configs() {
		m, err := llama.New(cfg, llama.RandomTensors(cfg, 3), cpu.New())
		if err != nil {
			t.Fatal(err)
		}
		ids := randomIDs(rand.New(rand.NewPCG(4, 4)), 30, cfg.VocabSize)
		full, _ := m.NewSession(64, nil)
		want, err := full.Forward(context.Background(), ids, true)
		if err != nil {
			t.Fatal(err)
		}
		s, _ := m.NewSession(64, nil)
		v := cfg.VocabSize
		got, err := s.Forward(context.Background(), ids[:10], false)
		if err != nil {
			t.Fatal(err)
		}
		if e := maxRelErr(got, want[9*v:10*v]); e > 1e-5 {
			t.Fatalf("%s: prefill's last logits differ by %.3g", name, e)
		}
		for i := 10; i < len(ids); i++ {
			got, err := s.Forward(context.Background(), ids[i:i+1], false)
			if err != nil {
				t.Fatal(err)
			}
			if e := maxRelErr(got, want[i*v:(i+1)*v]); e > 1e-5 {
				t.Fatalf("%s: step %d differs from the full pass by %.3g", name, i, e)
			}
		}
		if _, err := s.Forward(context.Background(), randomIDs(rand.New(rand.NewPCG(1, 1)), 35, v), false); err == nil {
			t.Errorf("%s: overflowing the cache gave no error", name)
		}
		if _, err := s.Forward(context.Background(), []int32{int32(v)}, false); err == nil {
			t.Errorf("%s: a token outside the vocabulary gave no error", name)
		}
		full.Close()
		s.Close()
		m.Close()
	}
}
