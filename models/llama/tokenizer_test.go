package llama

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	loader "github.com/pkoukk/tiktoken-go-loader"

	"github.com/gleaner-rag/gleaner/models/tiktoken"
)

// cl100kPattern is cl100k_base's pre-tokenizer regex, which Llama 3's
// tokenizer.json also uses (with look-ahead: Go's regexp cannot run it).
const cl100kPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// writeLlama3StyleTokenizer writes cl100k_base as a Llama-3-style
// tokenizer.json: byte-level vocabulary, ignore_merges, Sequence [Split
// regex, ByteLevel] pre-tokenizer, one added special token.
func writeLlama3StyleTokenizer(t *testing.T, path string) {
	ranks, err := loader.NewOfflineLoader().LoadTiktokenBpe("https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken")
	if err != nil {
		t.Fatal(err)
	}
	inv := unicodeByte()
	fwd := map[byte]rune{}
	for r, b := range inv {
		fwd[b] = r
	}
	vocab := make(map[string]int, len(ranks))
	for s, id := range ranks {
		var rs []rune
		for _, b := range []byte(s) {
			rs = append(rs, fwd[b])
		}
		vocab[string(rs)] = id
	}
	cfg := map[string]any{
		"added_tokens": []any{map[string]any{"id": 100257, "content": "<|end_of_text|>", "special": true}},
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": cl100kPattern}, "behavior": "Isolated", "invert": false},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false},
		}},
		"decoder": map[string]any{"type": "ByteLevel"},
		"model":   map[string]any{"type": "BPE", "ignore_merges": true, "vocab": vocab, "merges": []string{}},
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A Llama-3-style tokenizer.json (look-ahead regex, ignore_merges) loads
// through the tiktoken path and tokenizes exactly as the tokenizer it was
// converted from.
func TestLlama3StyleTokenizerMatchesTiktoken(t *testing.T) {
	dir := t.TempDir()
	writeLlama3StyleTokenizer(t, filepath.Join(dir, "tokenizer.json"))
	tok, err := LoadTokenizer(dir, Config{})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := tiktoken.CL100K()
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{
		"Where was the director of film West Of Shanghai born?",
		"  two  spaces, tabs\tand\nnew lines\n\n 12345 numbers, naïve café, 東京, emoji 🙂 and it's they'll",
		"<|end_of_text|> is data here",
	} {
		got, err := tok.Encode(text)
		if err != nil {
			t.Fatal(err)
		}
		want := ref.Encode(text)
		w32 := make([]int32, len(want))
		for i, id := range want {
			w32[i] = int32(id)
		}
		if !slices.Equal(got, w32) {
			t.Errorf("%q:\n got %v\nwant %v", text, got, w32)
		}
		if back := tok.Decode(got); back != text {
			t.Errorf("decode(encode(%q)) = %q", text, back)
		}
	}
	if got := tok.Decode([]int32{100257, 999999}); got != "<|end_of_text|><999999>" {
		t.Errorf("special and unknown ids decode as %q", got)
	}
}
