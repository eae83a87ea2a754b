package tokenize

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
)

// modelTypes are the tokenizer models the loader reads.
var modelTypes = []string{"WordPiece", "BPE", "WordLevel", "Unigram"}

// checkShape says in words what is wrong with a tokenizer.json before the
// third-party loader reads it (which would fail with Go's type names, or
// panic): not JSON, no model, an unsupported model type, a vocabulary
// that is not token → id, an added token without an id or content.
func checkShape(b []byte) error {
	var raw struct {
		Model       json.RawMessage   `json:"model"`
		AddedTokens []json.RawMessage `json:"added_tokens"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return fmt.Errorf("not JSON (at byte %d: %v); a tokenizer.json is the JSON object HuggingFace tokenizers saves", se.Offset, err)
		}
		return fmt.Errorf("not a tokenizer.json: want a JSON object with \"model\" and \"added_tokens\" (%v)", err)
	}
	if err := checkModel(raw.Model); err != nil {
		return err
	}
	for i, a := range raw.AddedTokens {
		var tok struct {
			ID      *float64 `json:"id"`
			Content *string  `json:"content"`
		}
		if json.Unmarshal(a, &tok) != nil || tok.ID == nil || tok.Content == nil {
			return fmt.Errorf("added_tokens[%d]: want an object with a numeric \"id\" and a \"content\" string", i)
		}
		if !isTokenID(*tok.ID) {
			return fmt.Errorf("added_tokens[%d] (%q): id %v is not a token id (a whole number from 0)", i, *tok.Content, *tok.ID)
		}
	}
	return nil
}

func checkModel(m json.RawMessage) error {
	if len(m) == 0 || string(m) == "null" {
		return errors.New(`no "model": this is not a HuggingFace tokenizer.json`)
	}
	var model struct {
		Type  *string         `json:"type"`
		Vocab json.RawMessage `json:"vocab"`
	}
	if err := json.Unmarshal(m, &model); err != nil {
		return errors.New(`"model" is not an object`)
	}
	if model.Type == nil {
		return fmt.Errorf(`model.type is missing; gleaner reads %v tokenizers`, modelTypes)
	}
	if !slices.Contains(modelTypes, *model.Type) {
		return fmt.Errorf("model.type %q: gleaner reads %v tokenizers", *model.Type, modelTypes)
	}
	if len(model.Vocab) == 0 || string(model.Vocab) == "null" {
		return errors.New("model.vocab is missing: the tokenizer has no vocabulary")
	}
	if *model.Type == "Unigram" {
		return checkUnigramVocab(model.Vocab)
	}
	var vocab map[string]json.RawMessage
	if json.Unmarshal(model.Vocab, &vocab) != nil {
		return errors.New("model.vocab is not an object of token → id")
	}
	for tok, v := range vocab {
		var id float64
		if json.Unmarshal(v, &id) != nil || !isTokenID(id) {
			return fmt.Errorf("model.vocab[%q] is %s, not a token id (a whole number from 0)", clipToken(tok), clipToken(string(v)))
		}
	}
	return nil
}

// checkUnigramVocab wants a list of [token, log-probability] pairs.
func checkUnigramVocab(v json.RawMessage) error {
	var pairs [][]json.RawMessage
	if json.Unmarshal(v, &pairs) != nil {
		return errors.New("model.vocab of a Unigram tokenizer is not a list of [token, score] pairs")
	}
	for i, p := range pairs {
		var tok string
		var score float64
		if len(p) != 2 || json.Unmarshal(p[0], &tok) != nil || json.Unmarshal(p[1], &score) != nil {
			return fmt.Errorf("model.vocab[%d]: want [token, score]", i)
		}
	}
	return nil
}

func isTokenID(x float64) bool { return x >= 0 && x <= math.MaxInt32 && x == math.Trunc(x) }

func clipToken(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
