package llama

import (
	"encoding/json"
	"fmt"

	tk "github.com/pkoukk/tiktoken-go"

	"github.com/gleaner-rag/gleaner/internal/safefile"
	"github.com/gleaner-rag/gleaner/models/tokenize"
)

// hfTokenizer is the part of a tokenizer.json the tiktoken path reads.
type hfTokenizer struct {
	AddedTokens []struct {
		ID      int    `json:"id"`
		Content string `json:"content"`
	} `json:"added_tokens"`
	PreTokenizer *preTokenizer `json:"pre_tokenizer"`
	Model        struct {
		Type         string         `json:"type"`
		Vocab        map[string]int `json:"vocab"`
		IgnoreMerges bool           `json:"ignore_merges"`
	} `json:"model"`
}

type preTokenizer struct {
	Type          string         `json:"type"`
	Pretokenizers []preTokenizer `json:"pretokenizers"`
	Pattern       *struct {
		Regex string `json:"Regex"`
	} `json:"pattern"`
}

// splitRegex returns the regex of a Sequence [Split(Regex), ByteLevel]
// pre-tokenizer (Llama 3's), or "".
func (p *preTokenizer) splitRegex() string {
	if p == nil || p.Type != "Sequence" {
		return ""
	}
	re, byteLevel := "", false
	for _, q := range p.Pretokenizers {
		switch {
		case q.Type == "Split" && q.Pattern != nil:
			re = q.Pattern.Regex
		case q.Type == "ByteLevel":
			byteLevel = true
		}
	}
	if !byteLevel {
		return ""
	}
	return re
}

// tiktokenBPE runs a byte-level BPE tokenizer.json whose pre-tokenizer
// splits by a regex Go's regexp cannot compile (Llama 3's has look-ahead)
// through tiktoken-go's BPE (regexp2). Each vocabulary entry's rank is its
// id, which is exact for vocabularies built by tiktoken (Llama 3's: its
// tokenizer.json sets ignore_merges, and its merge order follows the ids).
type tiktokenBPE struct {
	enc   *tk.Tiktoken
	known map[int32]bool
}

// loadTiktokenBPE returns nil (and no error) when path is not such a file.
func loadTiktokenBPE(path string) (Tokenizer, error) {
	b, err := safefile.Read(path, safefile.MaxTokenizer)
	if err != nil {
		return nil, err
	}
	var h hfTokenizer
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, fmt.Errorf("llama: %s: %w", path, err)
	}
	re := h.PreTokenizer.splitRegex()
	if h.Model.Type != "BPE" || re == "" || !h.Model.IgnoreMerges {
		return nil, nil
	}
	inv := unicodeByte()
	ranks := make(map[string]int, len(h.Model.Vocab))
	known := make(map[int32]bool, len(h.Model.Vocab)+len(h.AddedTokens))
	for s, id := range h.Model.Vocab {
		raw := make([]byte, 0, len(s))
		for _, r := range s {
			c, ok := inv[r]
			if !ok {
				return nil, fmt.Errorf("llama: %s: vocabulary entry %q (id %d) is not byte-level", path, s, id)
			}
			raw = append(raw, c)
		}
		ranks[string(raw)] = id
		known[int32(id)] = true
	}
	special := map[string]int{}
	set := map[string]any{}
	for _, a := range h.AddedTokens {
		special[a.Content], set[a.Content] = a.ID, true
		known[int32(a.ID)] = true
	}
	core, err := tk.NewCoreBPE(ranks, special, re)
	if err != nil {
		return nil, fmt.Errorf("llama: %s: %w", path, err)
	}
	return &tiktokenBPE{enc: tk.NewTiktoken(core, &tk.Encoding{PatStr: re, MergeableRanks: ranks, SpecialTokens: special}, set), known: known}, nil
}

// Encode treats special-token strings in text as ordinary text: evidence
// is data, never control.
func (t *tiktokenBPE) Encode(text string) ([]int32, error) {
	ids := t.enc.EncodeOrdinary(text)
	out := make([]int32, len(ids))
	for i, id := range ids {
		out[i] = int32(id)
	}
	return out, nil
}

// Decode writes ids the tokenizer does not know as "<id>".
func (t *tiktokenBPE) Decode(ids []int32) string {
	var out []byte
	var run []int
	flush := func() {
		if len(run) > 0 {
			out = append(out, t.enc.Decode(run)...)
			run = run[:0]
		}
	}
	for _, id := range ids {
		if t.known[id] {
			run = append(run, int(id))
			continue
		}
		flush()
		out = fmt.Appendf(out, "<%d>", id)
	}
	flush()
	return string(out)
}

func (t *tiktokenBPE) Count(text string) int { return len(t.enc.EncodeOrdinary(text)) }

// unicodeByte inverts GPT-2's byte-to-printable-rune map.
func unicodeByte() map[rune]byte {
	m := map[rune]byte{}
	for b, r := range tokenize.ByteUnicode() {
		m[r] = b
	}
	return m
}
