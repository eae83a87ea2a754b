package fuseattn

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/kernels/cpu"
	"github.com/gleaner-rag/gleaner/models/llama"
	"github.com/gleaner-rag/gleaner/models/tokenize"
)

func tinyAnswerer(t *testing.T) *Answerer {
	t.Helper()
	dir := t.TempDir()
	vocab, err := tokenize.WriteByteLevel(filepath.Join(dir, "tokenizer.json"), []string{"the", "Paris", "born", "Context", "Question", "Answer"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := llama.TinyConfig(vocab)
	if err := llama.Save(dir, cfg, llama.RandomTensors(cfg, 2)); err != nil {
		t.Fatal(err)
	}
	dec, err := llama.Load(dir, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dec.Close)
	tok, err := llama.LoadTokenizer(dir, dec.Cfg)
	if err != nil {
		t.Fatal(err)
	}
	ac := AdapterConfig{Encoder: EncoderLSA, Dim: 6, PoolDim: 4, GATLayers: 2, GATSlope: 0.2, Rank: 3, KVDim: dec.Cfg.KVDim(),
		DecoderLayers: dec.Cfg.Layers, MemoryLayers: []int{1}, LayerNormEps: 1e-5}
	f, err := NewFuser(ac, RandomAdapters(ac, 4), cpu.New(), &fakeEncoder{d: 6}, NewStateCache(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return &Answerer{Decoder: dec, Tok: tok, Fuser: f, Anchors: DefaultAnchorOptions()}
}

func tinyEvidence() *Evidence {
	return &Evidence{
		Nodes:    []int32{4, 9},
		Passages: []Passage{{Title: "Alice Smith", Text: "Alice Smith was a painter born in Paris. She painted rivers."}, {Title: "Paris", Text: "Paris is the capital of France."}},
		Graph:    &graphops.Subgraph{Nodes: []int32{4, 9}, Ptr: []int64{0, 1, 2}, Idx: []int32{1, 0}},
		Zq:       []float32{1, 0, -1, 0.5, 0.2, 0},
	}
}

// Both modes stream an answer whose pieces add up to the text; the memory
// changes what the decoder says (same prompt, with and without it), and
// the fuserag prompt holds the anchors, not the passages.
func TestAnswerModes(t *testing.T) {
	a := tinyAnswerer(t)
	ev := tinyEvidence()
	q := "Where was the painter Alice Smith born?"
	gen := llama.GenerateOptions{MaxTokens: 8, Stop: []int32{}}
	var streamed strings.Builder
	fr, err := a.Answer(context.Background(), q, ev, AnswerOptions{Mode: ModeFuseRAG, Generate: gen}, func(s string) bool { streamed.WriteString(s); return true })
	if err != nil {
		t.Fatal(err)
	}
	if streamed.String() != fr.Text || fr.Gen.Tokens != 8 || fr.TTFT <= 0 || fr.Memory.Rows == 0 {
		t.Fatalf("fuserag answer %q streamed as %q, stats %+v", fr.Text, streamed.String(), fr)
	}
	if !strings.Contains(fr.Prompt, "painter born in Paris") || strings.Contains(fr.Prompt, "capital of France") {
		t.Fatalf("the fuserag prompt must hold the scored anchors only: %q", fr.Prompt)
	}
	tx, err := a.Answer(context.Background(), q, ev, AnswerOptions{Mode: ModeText, Generate: gen}, func(string) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tx.Prompt, "capital of France") || tx.Gen.PromptTokens <= fr.Gen.PromptTokens {
		t.Fatalf("the text prompt must carry every passage and be longer: %d vs %d tokens", tx.Gen.PromptTokens, fr.Gen.PromptTokens)
	}
	// the same prompt without memory decodes differently
	ids, _ := a.promptIDs(fr.Prompt)
	s, _ := a.Decoder.NewSession(128, nil)
	defer s.Close()
	var plain []int32
	s.Generate(context.Background(), ids, gen, func(id int32) bool { plain = append(plain, id); return true })
	if a.Tok.Decode(plain) == fr.Text {
		t.Error("the memory did not change the decoder's output")
	}
	if _, err := a.Answer(context.Background(), q, ev, AnswerOptions{Mode: "latent", Generate: gen}, func(string) bool { return true }); err == nil {
		t.Error("unknown mode accepted")
	}
	if _, err := a.Answer(context.Background(), q, &Evidence{}, AnswerOptions{Mode: ModeText, Generate: gen}, func(string) bool { return true }); err == nil {
		t.Error("empty evidence accepted")
	}
}

// Answers running at once share the decoder, the adapters and the state
// cache, and each gives what it gives alone.
func TestConcurrentAnswers(t *testing.T) {
	a := tinyAnswerer(t)
	ev := tinyEvidence()
	o := AnswerOptions{Mode: ModeFuseRAG, Generate: llama.GenerateOptions{MaxTokens: 5, Stop: []int32{}}}
	want, err := a.Answer(context.Background(), "Where was Alice Smith born?", ev, o, func(string) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			got, err := a.Answer(context.Background(), "Where was Alice Smith born?", ev, o, func(string) bool { return true })
			if err == nil && got.Text != want.Text {
				err = fmt.Errorf("concurrent answer %q, alone %q", got.Text, want.Text)
			}
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// The stream holds back only a split character (at most one token's worth)
// and writes invalid bytes, one U+FFFD each, instead of waiting on them.
func TestStreamPieces(t *testing.T) {
	for piece, want := range map[string]int{"ab\xc3": 2, "ab\xe2\x82": 2, "ab\uFFFD": 2, "a\xb8b": 3, "é": 2, "": 0, "\xb8\xb8\xb8\xb8": 4} {
		if got := completePrefix(piece); got != want {
			t.Errorf("completePrefix(%q) = %d, want %d", piece, got, want)
		}
	}
	if got := validText("a\xb8\xb8b") + validText("\xb8"); got != validText("a\xb8\xb8b\xb8") || got != "a\uFFFD\uFFFDb\uFFFD" {
		t.Errorf("validText is not piecewise: %q", got)
	}
}
