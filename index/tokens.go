package index

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"

	"github.com/gleaner-rag/gleaner/corpus/store"
)

const (
	fTokIDs = "tok_ids.i32"
	fTokOff = "tok_off.i64"
)

// TokenizerHash identifies a tokenizer.json by its content.
func TokenizerHash(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:]), nil
}

// SetTokens stores every node's token ids (title + text, no special
// tokens) made by the tokenizer whose TokenizerHash is hash, so a
// transformer reranker only tokenizes the query. ids[i] belongs to node i.
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
	if err := ctx.Err(); err != nil {
		return err
	}
	meta := ix.Meta
	meta.Tokenizer = hash
	return ix.rewrite(dir, []string{fTokIDs, fTokOff}, func(w *store.Writer) error {
		if err := w.I32(fTokIDs, flat); err != nil {
			return err
		}
		return w.I64(fTokOff, off)
	}, meta)
}

func (ix *Index) loadTokens() (err error) {
	if !ix.r.Has(fTokIDs) {
		return nil
	}
	if ix.tokIDs, err = ix.r.I32(fTokIDs); err != nil {
		return err
	}
	if ix.tokOff, err = ix.r.I64(fTokOff); err != nil {
		return err
	}
	if len(ix.tokOff) != ix.N()+1 || ix.tokOff[0] != 0 || ix.tokOff[ix.N()] != int64(len(ix.tokIDs)) {
		return fmt.Errorf("token offsets do not cover %d nodes", ix.N())
	}
	for i := 0; i < ix.N(); i++ {
		if ix.tokOff[i] > ix.tokOff[i+1] {
			return fmt.Errorf("token offsets decrease at node %d", i)
		}
	}
	return nil
}

// Tokens returns node i's stored token ids and the hash of the tokenizer
// that made them; ok is false when the index stores none.
func (ix *Index) Tokens(i int) (ids []int32, tokenizer string, ok bool) {
	if ix.tokOff == nil {
		return nil, "", false
	}
	return ix.tokIDs[ix.tokOff[i]:ix.tokOff[i+1]], ix.Meta.Tokenizer, true
}
