// Package testmodel writes tiny random-weight transformer models with
// gleaner's own code — a model folder with tokenizer.json (BERT WordPiece),
// config.json, model.safetensors and model.onnx holding the same weights —
// for tests and benchmarks, since no pretrained weights are reachable.
package testmodel

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/models/bert"
	"github.com/gleaner-rag/gleaner/models/tokenize"
)

// Options shape a random model.
type Options struct {
	Kind   string // "bert" or "xlm-roberta"
	Cross  bool   // with a classification head (cross-encoder) or without (bi-encoder)
	Hidden int    // default 32
	Layers int    // default 2
	Heads  int    // default 4
	// Intermediate is the feed-forward width (default 2·Hidden).
	Intermediate int
	Vocab        int    // word pieces kept from the texts (default 500)
	Seed         uint64 // default 1
}

// Write creates the model folder at dir, with a vocabulary of the most
// frequent lowercased words of texts (plus single letters, so every word
// tokenizes) .
func Write(dir string, texts []string, o Options) (bert.Config, error) {
	fill(&o)
	pieces := vocabulary(texts, o.Vocab)
	cfg := bert.Config{ModelType: o.Kind, VocabSize: 5 + len(pieces), Hidden: o.Hidden, Layers: o.Layers, Heads: o.Heads,
		Intermediate: o.Intermediate, MaxPositions: 520, TypeVocabSize: 2, LayerNormEps: 1e-12, PadTokenID: 0, HiddenAct: "gelu", NumLabels: 1}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return cfg, err
	}
	write := func() error { return tokenize.WriteBERT(filepath.Join(dir, "tokenizer.json"), pieces) }
	if o.Kind == "xlm-roberta" { // Unigram over "▁word" pieces; specials <s> <pad> </s> <unk>
		sp := make([]string, len(pieces))
		for i, p := range pieces {
			sp[i] = "▁" + strings.TrimPrefix(p, "##")
			if strings.HasPrefix(p, "##") {
				sp[i] = strings.TrimPrefix(p, "##")
			}
		}
		cfg.VocabSize, cfg.PadTokenID, cfg.TypeVocabSize = 4+len(sp), 1, 1
		write = func() error { return tokenize.WriteXLMR(filepath.Join(dir, "tokenizer.json"), sp) }
	}
	if err := write(); err != nil {
		return cfg, err
	}
	t := bert.RandomTensors(cfg, o.Seed, o.Cross)
	if err := bert.Save(dir, cfg, t); err != nil {
		return cfg, err
	}
	f, err := os.Create(filepath.Join(dir, "model.onnx"))
	if err != nil {
		return cfg, err
	}
	if err := bert.WriteONNX(f, cfg, t); err != nil {
		f.Close()
		return cfg, err
	}
	return cfg, f.Close()
}

func fill(o *Options) {
	if o.Kind == "" {
		o.Kind = "bert"
	}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.Hidden, 32)
	def(&o.Layers, 2)
	def(&o.Heads, 4)
	def(&o.Intermediate, 2*o.Hidden)
	def(&o.Vocab, 500)
	if o.Seed == 0 {
		o.Seed = 1
	}
}

// vocabulary returns single letters and digits, "##"-continuations of
// them, then the most frequent words (ties alphabetical).
func vocabulary(texts []string, n int) []string {
	var pieces []string
	for _, r := range "abcdefghijklmnopqrstuvwxyz0123456789" {
		pieces = append(pieces, string(r), "##"+string(r))
	}
	pieces = append(pieces, ".", ",", "?", "(", ")")
	return append(pieces, frequentWords(texts, n)...)
}

// frequentWords returns the n most frequent lowercased words of texts
// (ties alphabetical).
func frequentWords(texts []string, n int) []string {
	count := map[string]int{}
	for _, t := range texts {
		for _, w := range strings.FieldsFunc(strings.ToLower(t), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
			count[w]++
		}
	}
	words := make([]string, 0, len(count))
	for w := range count {
		words = append(words, w)
	}
	sort.Slice(words, func(i, j int) bool {
		if count[words[i]] != count[words[j]] {
			return count[words[i]] > count[words[j]]
		}
		return words[i] < words[j]
	})
	return words[:min(n, len(words))]
}

// NodeTexts lists a corpus's node texts (title, then text), the usual
// vocabulary source.
func NodeTexts(c *corpus.Corpus) []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.Title + " " + n.Text
	}
	return out
}
