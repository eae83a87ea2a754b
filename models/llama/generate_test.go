package llama_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gleaner-rag/gleaner/kernels/cpu"
	"github.com/gleaner-rag/gleaner/models/llama"
	"github.com/gleaner-rag/gleaner/models/tokenize"
)

// tinyFolder writes a tiny decoder with a byte-level tokenizer.
func tinyFolder(t *testing.T) (string, llama.Config) {
	t.Helper()
	dir := t.TempDir()
	vocab, err := tokenize.WriteByteLevel(filepath.Join(dir, "tokenizer.json"), []string{"the", "Paris", "born", "was", "in"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := llama.TinyConfig(vocab)
	if err := llama.Save(dir, cfg, llama.RandomTensors(cfg, 5)); err != nil {
		t.Fatal(err)
	}
	return dir, cfg
}

func TestGenerateGreedyTemperatureAndStop(t *testing.T) {
	dir, cfg := tinyFolder(t)
	m, err := llama.Load(dir, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	tok, err := llama.LoadTokenizer(dir, m.Cfg)
	if err != nil {
		t.Fatal(err)
	}
	text := "Where was the painter born? Paris"
	ids, err := tok.Encode(text)
	if err != nil {
		t.Fatal(err)
	}
	if got := tok.Decode(ids); got != text {
		t.Fatalf("decode(encode(x)) = %q, want %q", got, text)
	}
	if tok.Count(" the Paris") != 2 {
		t.Errorf("merged words must count one token each: %d", tok.Count(" the Paris"))
	}
	run := func(o llama.GenerateOptions) []int32 {
		s, err := m.NewSession(128, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		var out []int32
		st, err := s.Generate(context.Background(), ids, o, func(id int32) bool { out = append(out, id); return true })
		if err != nil {
			t.Fatal(err)
		}
		if st.Tokens != len(out) || st.PromptTokens != len(ids) || st.FirstToken < st.Prefill {
			t.Fatalf("stats %+v do not match %d tokens", st, len(out))
		}
		return out
	}
	greedy := run(llama.GenerateOptions{MaxTokens: 12, Stop: []int32{}})
	// reference: argmax of the full pass over prompt + generated so far
	seq := slices.Clone(ids)
	for _, id := range greedy {
		s, _ := m.NewSession(128, nil)
		logits, err := s.Forward(context.Background(), seq, false)
		s.Close()
		if err != nil {
			t.Fatal(err)
		}
		if want := int32(slices.Index(logits, slices.Max(logits))); id != want {
			t.Fatalf("greedy token %d, want argmax %d", id, want)
		}
		seq = append(seq, id)
	}
	a := run(llama.GenerateOptions{MaxTokens: 12, Temperature: 1.5, Seed: 9, Stop: []int32{}})
	b := run(llama.GenerateOptions{MaxTokens: 12, Temperature: 1.5, Seed: 9, Stop: []int32{}})
	c := run(llama.GenerateOptions{MaxTokens: 12, Temperature: 1.5, Seed: 10, Stop: []int32{}})
	if !slices.Equal(a, b) || slices.Equal(a, c) || slices.Equal(a, greedy) {
		t.Errorf("sampling must follow the seed: %v %v %v (greedy %v)", a, b, c, greedy)
	}
	if got := run(llama.GenerateOptions{MaxTokens: 12, Stop: []int32{greedy[3]}}); !slices.Equal(got, greedy[:slices.Index(greedy, greedy[3])]) {
		t.Errorf("stop token: got %v from %v", got, greedy)
	}
	s, _ := m.NewSession(16, nil)
	defer s.Close()
	for _, o := range []llama.GenerateOptions{{MaxTokens: 0}, {MaxTokens: 1, Temperature: -1}, {MaxTokens: 100}} {
		if _, err := s.Generate(context.Background(), ids, o, func(int32) bool { return true }); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
	_ = cfg
}
