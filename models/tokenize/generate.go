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
