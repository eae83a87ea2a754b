package tokenize

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A malformed tokenizer.json is an error in words: what is wrong and
// where, never Go's type names.
func TestMalformedTokenizersSayWhatIsWrong(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokenizer.json")
	for body, want := range map[string]string{
		"not json":                         "not JSON (at byte 2",
		"[1, 2]":                           "not a tokenizer.json",
		"{}":                               `no "model"`,
		`{"model": 3}`:                     `"model" is not an object`,
		`{"model": {}}`:                    "model.type is missing",
		`{"model": {"type": "Magic"}}`:     `model.type "Magic"`,
		`{"model": {"type": "WordPiece"}}`: "model.vocab is missing",
		`{"model": {"type": "WordPiece", "vocab": ["a"]}}`:                                                       "not an object of token → id",
		`{"model": {"type": "WordPiece", "vocab": {"a": "x"}}}`:                                                  `model.vocab["a"] is "x", not a token id`,
		`{"model": {"type": "WordPiece", "vocab": {"a": -1}}}`:                                                   `model.vocab["a"] is -1`,
		`{"model": {"type": "WordPiece", "vocab": {"a": 1.5}}}`:                                                  `model.vocab["a"] is 1.5`,
		`{"model": {"type": "Unigram", "vocab": [["a"]]}}`:                                                       "model.vocab[0]: want [token, score]",
		`{"model": {"type": "WordPiece", "vocab": {"a": 0}}, "added_tokens": [{"id": "x", "content": "[CLS]"}]}`: "added_tokens[0]: want an object",
		`{"model": {"type": "WordPiece", "vocab": {"a": 0}}, "added_tokens": [{"id": -3, "content": "[CLS]"}]}`:  `added_tokens[0] ("[CLS]"): id -3`,
	} {
		os.WriteFile(path, []byte(body), 0o644)
		_, err := Load(path)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v, want %q", body, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "interface") {
			t.Errorf("%s: Go's type names in %v", body, err)
		}
	}
}
