// Package tokenize wraps github.com/sugarme/tokenizer for HuggingFace
// tokenizer.json files (BERT WordPiece; XLM-R Unigram/Metaspace) with what
// gleaner needs: accent stripping that works (sugarme's BertNormalizer does
// not decompose before stripping, so "naïve" became [UNK]: texts are NFD-
// decomposed and their combining marks dropped first when the tokenizer
// strips accents), token ids without special tokens (node texts are
// tokenized once at index time), and pair assembly with LongestFirst
// truncation from those ids, so a query costs one tokenization.
package tokenize

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"

	"github.com/sugarme/tokenizer"
	"github.com/sugarme/tokenizer/pretrained"
	"golang.org/x/text/unicode/norm"

	"github.com/gleaner-rag/gleaner/internal/safefile"
)

// Tokenizer is safe for concurrent use once loaded.
type Tokenizer struct {
	tk           *tokenizer.Tokenizer
	stripAccents bool
	style        string // "bert": [CLS] A [SEP] B [SEP]; "roberta": <s> A </s></s> B </s>
	cls, sep     int32
	pad          int32
}

// config is the part of tokenizer.json this wrapper reads itself.
type config struct {
	Normalizer *struct {
		Type         string `json:"type"`
		Lowercase    *bool  `json:"lowercase"`
		StripAccents *bool  `json:"strip_accents"`
	} `json:"normalizer"`
	PostProcessor *struct {
		Type          string `json:"type"`
		SpecialTokens map[string]struct {
			IDs []int32 `json:"ids"`
		} `json:"special_tokens"`
		Sep []any `json:"sep"`
		Cls []any `json:"cls"`
	} `json:"post_processor"`
	Model struct {
		Type string `json:"type"`
	} `json:"model"`
	AddedTokens []struct {
		ID      int32  `json:"id"`
		Content string `json:"content"`
	} `json:"added_tokens"`
}

// Load reads a tokenizer.json. A malformed file is an error naming it,
// also where the third-party loader would panic.
func Load(path string) (t *Tokenizer, err error) {
	defer recoverInto(&err, "tokenize: "+path)
	b, err := safefile.Read(path, safefile.MaxTokenizer)
	if err != nil {
		return nil, err
	}
	if err := checkShape(b); err != nil {
		return nil, fmt.Errorf("tokenize: %s: %w", path, err)
	}
	var c config
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("tokenize: %s: %w", path, err)
	}
	tk, err := pretrained.FromFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenize: %s: %w", path, err)
	}
	t = &Tokenizer{tk: tk}
	if n := c.Normalizer; n != nil && n.Type == "BertNormalizer" {
		// HuggingFace: strip_accents null means "follow lowercase".
		t.stripAccents = (n.StripAccents != nil && *n.StripAccents) || (n.StripAccents == nil && (n.Lowercase == nil || *n.Lowercase))
	}
	if err := t.specials(&c); err != nil {
		return nil, fmt.Errorf("tokenize: %s: %w", path, err)
	}
	return t, nil
}

// specials finds the pair template's special tokens.
func (t *Tokenizer) specials(c *config) error {
	added := map[string]int32{}
	for _, a := range c.AddedTokens {
		added[a.Content] = a.ID
	}
	t.style, t.cls, t.sep, t.pad = "bert", added["[CLS]"], added["[SEP]"], added["[PAD]"]
	if _, ok := added["<s>"]; ok {
		t.style, t.cls, t.sep, t.pad = "roberta", added["<s>"], added["</s>"], added["<pad>"]
	}
	if _, ok := added[map[string]string{"bert": "[CLS]", "roberta": "<s>"}[t.style]]; !ok {
		return fmt.Errorf("no [CLS]/<s> special token among the added tokens")
	}
	return nil
}

// Pad is the padding token id.
func (t *Tokenizer) Pad() int32 { return t.pad }

// prepare applies the accent fix.
func (t *Tokenizer) prepare(s string) string {
	if !t.stripAccents {
		return s
	}
	var b strings.Builder
	for _, r := range norm.NFD.String(s) {
		if !unicode.Is(unicode.Mn, r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// IDs tokenizes text without special tokens.
func (t *Tokenizer) IDs(text string) (ids []int32, err error) {
	defer recoverInto(&err, "tokenize")
	enc, err := t.tk.EncodeSingle(t.prepare(text), false)
	if err != nil {
		return nil, fmt.Errorf("tokenize: %w", err)
	}
	out := make([]int32, len(enc.Ids))
	for i, id := range enc.Ids {
		out[i] = int32(id)
	}
	return out, nil
}

// Pair assembles a (query, node) input from token ids, truncating the
// longer side first (LongestFirst) so the whole fits maxLen, and returns
// ids and token-type ids.
func (t *Tokenizer) Pair(a, b []int32, maxLen int) ([]int32, []int32) {
	special := 3
	if t.style == "roberta" {
		special = 4
	}
	la, lb := len(a), len(b)
	for la+lb+special > maxLen && la+lb > 0 {
		if la > lb {
			la--
		} else {
			lb--
		}
	}
	ids := []int32{t.cls}
	ids = append(ids, a[:la]...)
	ids = append(ids, t.sep)
	if t.style == "roberta" {
		ids = append(ids, t.sep)
	}
	nA := len(ids)
	ids = append(append(ids, b[:lb]...), t.sep)
	types := make([]int32, len(ids))
	if t.style == "bert" {
		for i := nA; i < len(types); i++ {
			types[i] = 1
		}
	}
	return ids, types
}

// Single assembles one sequence ([CLS] A [SEP], or <s> A </s>), truncated
// to maxLen.
func (t *Tokenizer) Single(a []int32, maxLen int) ([]int32, []int32) {
	a = a[:max(0, min(len(a), maxLen-2))]
	ids := append(append([]int32{t.cls}, a...), t.sep)
	return ids, make([]int32, len(ids))
}

// recoverInto turns a panic of the third-party tokenizer into an error: the
// package edge where gleaner stops dependencies' panics.
func recoverInto(err *error, what string) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%s: malformed tokenizer: the tokenizer library could not read it (%v)", what, r)
	}
}
