package index

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/internal/safefile"
)

// The tokens section: every node's token ids (title + text, no special
// tokens) from one tokenizer, so a transformer reranker only tokenizes the
// query.
const (
	tokensSection = "tokens"
	fTokIDs       = "ids.i32"
	fTokOff       = "off.i64"
)

func init() {
	MustRegisterSection(SectionType{Name: tokensSection, Version: 1, Update: Rebuild,
		Summary: "stored token ids", Hint: "index with `gleaner index <corpus> -o <dir> --tokenizer <tokenizer.json>` (index.SetTokens)", Load: loadTokens})
}

// TokenizerHash identifies a tokenizer.json by its content.
func TokenizerHash(path string) (string, error) {
	b, err := safefile.Read(path, safefile.MaxTokenizer)
	if err != nil {
		return "", err
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:]), nil
}

// tokens is the loaded tokens section.
type tokens struct {
	Tokenizer string `json:"tokenizer"`
	ids       []int32
	off       []int64
}

// SetTokens stores every node's token ids made by the tokenizer whose
// TokenizerHash is hash. ids[i] belongs to node i.
func SetTokens(ctx context.Context, dir, hash string, ids [][]int32) error {
	ix, err := Open(dir, store.OpenOptions{})
	if err != nil {
		return err
	}
	defer ix.Close()
	if len(ids) != ix.N() {
		return fmt.Errorf("index: %d token lists for %d nodes", len(ids), ix.N())
	}
	off := make([]int64, 1, len(ids)+1)
	var flat []int32
	for _, x := range ids {
		flat = append(flat, x...)
		off = append(off, int64(len(flat)))
	}
	return ix.StoreSection(ctx, dir, tokensSection, tokens{Tokenizer: hash}, func(w *SectionWriter) error {
		if err := w.I32(fTokIDs, flat); err != nil {
			return err
		}
		return w.I64(fTokOff, off)
	})
}

func loadTokens(ix *Index, r *SectionReader) (any, error) {
	t := &tokens{}
	if err := r.Meta(t); err != nil {
		return nil, err
	}
	var err error
	if t.ids, err = r.I32(fTokIDs); err != nil {
		return nil, err
	}
	if t.off, err = r.I64(fTokOff); err != nil {
		return nil, err
	}
	n := ix.N()
	if len(t.off) != n+1 || t.off[0] != 0 || t.off[n] != int64(len(t.ids)) {
		return nil, fmt.Errorf("token offsets do not cover %d nodes", n)
	}
	for i := 0; i < n; i++ {
		if t.off[i] > t.off[i+1] {
			return nil, fmt.Errorf("token offsets decrease at node %d", i)
		}
	}
	return t, nil
}

// Tokens returns node i's stored token ids and the hash of the tokenizer
// that made them; ok is false when the index stores none.
func (ix *Index) Tokens(i int) (ids []int32, tokenizer string, ok bool) {
	v, err := ix.Section(tokensSection)
	if err != nil {
		return nil, "", false
	}
	t := v.(*tokens)
	return t.ids[t.off[i]:t.off[i+1]], t.Tokenizer, true
}
