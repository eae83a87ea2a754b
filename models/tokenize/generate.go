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
