package llama

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sugarme/tokenizer"
	"github.com/sugarme/tokenizer/pretrained"

	"github.com/gleaner-rag/gleaner/models/tiktoken"
)

// Tokenizer is a decoder's tokenizer: text to ids without special tokens,
// ids back to text, and token counts (FuseRAG's anchor budget counts in
// it). Implementations are safe for concurrent use.
type Tokenizer interface {
	Encode(text string) ([]int32, error)
	Decode(ids []int32) string
	Count(text string) int
}

// LoadTokenizer opens dir/tokenizer.json (HuggingFace's format): a
// byte-level BPE split by a regex pre-tokenizer with ignore_merges (Llama
// 3's) through tiktoken-go's BPE, whose regexp2 runs its look-ahead; other
// files through sugarme/tokenizer (GPT-2-style byte-level BPE, WordPiece,
// Unigram). Without tokenizer.json, config.json may name the embedded
// cl100k_base (gleaner_tokenizer), as gleaner's random decoders do.
func LoadTokenizer(dir string, cfg Config) (Tokenizer, error) {
	path := filepath.Join(dir, "tokenizer.json")
	if _, err := os.Stat(path); err == nil {
		t, err := loadTiktokenBPE(path)
		if err != nil || t != nil {
			return t, err
		}
		return loadHF(path)
	}
	if cfg.Tokenizer == "cl100k_base" {
		e, err := tiktoken.CL100K()
		if err != nil {
			return nil, err
		}
		return cl100k{e: e, vocab: cfg.VocabSize}, nil
	}
	return nil, fmt.Errorf("llama: %s: no tokenizer.json (and config.json names no gleaner_tokenizer)", dir)
}

type hf struct{ tk *tokenizer.Tokenizer }

func loadHF(path string) (t Tokenizer, err error) {
	defer func() {
		if r := recover(); r != nil { // the third-party loader panics on some malformed files
			t, err = nil, fmt.Errorf("llama: %s: %v", path, r)
		}
	}()
	tk, err := pretrained.FromFile(path)
	if err != nil {
		return nil, fmt.Errorf("llama: %s: %w", path, err)
	}
	return hf{tk}, nil
}

func (h hf) Encode(text string) (ids []int32, err error) {
	defer func() {
		if r := recover(); r != nil {
			ids, err = nil, fmt.Errorf("llama: tokenizer: %v", r)
		}
	}()
	enc, err := h.tk.EncodeSingle(text, false)
	if err != nil {
		return nil, fmt.Errorf("llama: tokenizer: %w", err)
	}
	out := make([]int32, len(enc.Ids))
	for i, id := range enc.Ids {
		out[i] = int32(id)
	}
	return out, nil
}

func (h hf) Decode(ids []int32) (s string) {
	defer func() {
		if r := recover(); r != nil {
			s = ""
		}
	}()
	in := make([]int, len(ids))
	for i, id := range ids {
		in[i] = int(id)
	}
	return h.tk.Decode(in, false)
}

func (h hf) Count(text string) int {
	ids, err := h.Encode(text)
	if err != nil {
		return len(text) // never under-count a budget
	}
	return len(ids)
}

// cl100k stands in for Llama 3's tokenizer in gleaner's random decoders;
// ids it does not know (the decoder's vocabulary is larger) decode as
// "<id>".
type cl100k struct {
	e     *tiktoken.Encoder
	vocab int
}

// known: cl100k_base's ordinary tokens are 0–100255; its special tokens
// <|endoftext|>, the three FIM tokens and <|endofprompt|>.
func known(id int32) bool {
	return id >= 0 && id < 100256 || id >= 100257 && id <= 100260 || id == 100276
}

func (c cl100k) Encode(text string) ([]int32, error) {
	ids := c.e.Encode(text)
	out := make([]int32, len(ids))
	for i, id := range ids {
		if id >= c.vocab {
			return nil, fmt.Errorf("llama: cl100k_base token %d is outside the decoder's vocabulary of %d", id, c.vocab)
		}
		out[i] = int32(id)
	}
	return out, nil
}

func (c cl100k) Decode(ids []int32) string {
	var b strings.Builder
	var run []int
	flush := func() {
		if len(run) > 0 {
			b.WriteString(c.e.Decode(run))
			run = run[:0]
		}
	}
	for _, id := range ids {
		if known(id) {
			run = append(run, int(id))
			continue
		}
		flush()
		fmt.Fprintf(&b, "<%d>", id)
	}
	flush()
	return b.String()
}

func (c cl100k) Count(text string) int { return c.e.Count(text) }
