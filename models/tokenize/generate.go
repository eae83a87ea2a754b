package tokenize

import (
	"encoding/json"
	"os"
)

// WriteBERT writes a BERT-uncased-style tokenizer.json (BertNormalizer,
// BertPreTokenizer, WordPiece with "##" continuations, [CLS] A [SEP] B [SEP]
// template) over the given word pieces, after the five special tokens with
// ids 0–4. gleaner's tests use it with tiny random models.
func WriteBERT(path string, pieces []string) error {
	specials := []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}
	vocab := map[string]int{}
	var added []map[string]any
	for i, s := range specials {
		vocab[s] = i
		added = append(added, map[string]any{"id": i, "content": s, "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true})
	}
	for _, p := range pieces {
		if _, ok := vocab[p]; !ok {
			vocab[p] = len(vocab)
		}
	}
	tok := func(id string, typ int) map[string]any {
		return map[string]any{"SpecialToken": map[string]any{"id": id, "type_id": typ}}
	}
	seq := func(id string, typ int) map[string]any {
		return map[string]any{"Sequence": map[string]any{"id": id, "type_id": typ}}
	}
	cfg := map[string]any{
		"version": "1.0", "truncation": nil, "padding": nil, "added_tokens": added,
		"normalizer":    map[string]any{"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": nil, "lowercase": true},
		"pre_tokenizer": map[string]any{"type": "BertPreTokenizer"},
		"post_processor": map[string]any{"type": "TemplateProcessing",
			"single": []any{tok("[CLS]", 0), seq("A", 0), tok("[SEP]", 0)},
			"pair":   []any{tok("[CLS]", 0), seq("A", 0), tok("[SEP]", 0), seq("B", 1), tok("[SEP]", 1)},
			"special_tokens": map[string]any{
				"[CLS]": map[string]any{"id": "[CLS]", "ids": []int{2}, "tokens": []string{"[CLS]"}},
				"[SEP]": map[string]any{"id": "[SEP]", "ids": []int{3}, "tokens": []string{"[SEP]"}},
			}},
		"decoder": map[string]any{"type": "WordPiece", "prefix": "##", "cleanup": true},
		"model": map[string]any{"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
			"max_input_chars_per_word": 100, "vocab": vocab},
	}
	b, err := json.MarshalIndent(cfg, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// WriteXLMR writes an XLM-R-style tokenizer.json: Unigram model over the
// given pieces ("▁" marks a word start), Metaspace pre-tokenizer and the
// <s> A </s></s> B </s> template; specials <s>=0, <pad>=1, </s>=2, <unk>=3.
// Piece scores fall with position, so earlier pieces are preferred.
func WriteXLMR(path string, pieces []string) error {
	specials := []string{"<s>", "<pad>", "</s>", "<unk>"}
	var vocab [][]any
	var added []map[string]any
	for i, s := range specials {
		vocab = append(vocab, []any{s, 0.0})
		added = append(added, map[string]any{"id": i, "content": s, "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true})
	}
	for i, p := range pieces {
		vocab = append(vocab, []any{p, -1 - float64(i)/float64(len(pieces))})
	}
	tok := func(id string, typ int) map[string]any {
		return map[string]any{"SpecialToken": map[string]any{"id": id, "type_id": typ}}
	}
	seq := func(id string, typ int) map[string]any {
		return map[string]any{"Sequence": map[string]any{"id": id, "type_id": typ}}
	}
	cfg := map[string]any{
		"version": "1.0", "truncation": nil, "padding": nil, "added_tokens": added, "normalizer": nil,
		"pre_tokenizer": map[string]any{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true},
		"post_processor": map[string]any{"type": "TemplateProcessing",
			"single": []any{tok("<s>", 0), seq("A", 0), tok("</s>", 0)},
			"pair":   []any{tok("<s>", 0), seq("A", 0), tok("</s>", 0), tok("</s>", 0), seq("B", 0), tok("</s>", 0)},
			"special_tokens": map[string]any{
				"<s>":  map[string]any{"id": "<s>", "ids": []int{0}, "tokens": []string{"<s>"}},
				"</s>": map[string]any{"id": "</s>", "ids": []int{2}, "tokens": []string{"</s>"}},
			}},
		"decoder": map[string]any{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true},
		"model":   map[string]any{"type": "Unigram", "unk_id": 3, "vocab": vocab, "byte_fallback": false},
	}
	b, err := json.MarshalIndent(cfg, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// WriteByteLevel writes a GPT-2-style byte-level BPE tokenizer.json: the
// 256 byte tokens, merges that spell each given word left to right and
// then join it to a leading space (so "w" and " w" are one token each),
// then the special token "<|end|>" as the last id. It
// returns the vocabulary size. gleaner's tests and random decoders use it.
func WriteByteLevel(path string, words []string) (int, error) {
	bu := ByteUnicode()
	vocab := map[string]int{}
	for b := 0; b < 256; b++ {
		vocab[string(bu[byte(b)])] = b
	}
	merges := []string{} // never null: loaders refuse "merges": null
	add := func(a, b string) string {
		if _, ok := vocab[a+b]; !ok {
			vocab[a+b] = len(vocab)
			merges = append(merges, a+" "+b)
		}
		return a + b
	}
	for _, w := range words {
		if w == "" {
			continue
		}
		acc := ""
		for i, b := range []byte(w) {
			if i == 0 {
				acc = string(bu[b])
				continue
			}
			acc = add(acc, string(bu[b]))
		}
		add(string(bu[' ']), acc) // " w" is the space token merged with w
	}
	end := len(vocab)
	cfg := map[string]any{"version": "1.0", "truncation": nil, "padding": nil, "normalizer": nil, "post_processor": nil,
		"added_tokens":  []any{map[string]any{"id": end, "content": "<|end|>", "special": true, "single_word": false, "lstrip": false, "rstrip": false, "normalized": false}},
		"pre_tokenizer": map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
		"decoder":       map[string]any{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
		"model": map[string]any{"type": "BPE", "dropout": nil, "unk_token": nil, "continuing_subword_prefix": nil, "end_of_word_suffix": nil,
			"fuse_unk": false, "byte_fallback": false, "vocab": vocab, "merges": merges}}
	b, err := json.MarshalIndent(cfg, "", " ")
	if err != nil {
		return 0, err
	}
	return end + 1, os.WriteFile(path, b, 0o644)
}

// ByteUnicode is GPT-2's reversible map from bytes to the printable runes
// byte-level BPE vocabularies spell them with.
func ByteUnicode() map[byte]rune {
	m := map[byte]rune{}
	n := 0
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			m[byte(b)] = rune(b)
		} else {
			m[byte(b)] = rune(256 + n)
			n++
		}
	}
	return m
}
