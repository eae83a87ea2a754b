package graphops

import (
	"context"
	"strings"
)

// KeywordGraph is KET-RAG's text–keyword bipartite graph
// (create_final_keyword_index.py, docs/methods.md §4.2): every keyword of
// every chunk's sentences, the chunks holding it, and the sentence parts
// whose embeddings average into its vector.
type KeywordGraph struct {
	Keywords []string // in order of first occurrence
	// Parts are the sentence parts: a sentence's word tokens joined by
	// spaces, at most MaxPartWords words each.
	Parts []string
	// Mentions maps keyword → part, one entry per occurrence (a keyword
	// twice in a part counts twice in its mean, as KET-RAG's list does).
	Mentions CSR
	// Chunks maps keyword → the chunks holding it, ascending, distinct.
	Chunks CSR
}

// MaxPartWords is the longest sentence part, in word tokens.
const MaxPartWords = 8000

// KeywordText is how BuildKeywordGraph reads text: sentences splits a
// chunk, words splits a sentence, and keep says which words are keywords.
type KeywordText struct {
	Sentences func(string) ([]string, error)
	Words     func(string) []string
	Keep      func(string) bool
}

// BuildKeywordGraph builds the keyword graph of chunks.
func BuildKeywordGraph(ctx context.Context, chunks []string, t KeywordText) (*KeywordGraph, error) {
	g := &KeywordGraph{}
	ids := map[string]int32{}
	var mentions, holders [][]int32
	for c, text := range chunks {
		if c%256 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		sents, err := t.Sentences(text)
		if err != nil {
			return nil, err
		}
		for _, s := range sents {
			words := t.Words(s)
			for from := 0; from < len(words); from += MaxPartWords {
				part := words[from:min(from+MaxPartWords, len(words))]
				p := int32(len(g.Parts))
				g.Parts = append(g.Parts, strings.Join(part, " "))
				for _, w := range part {
					if !t.Keep(w) {
						continue
					}
					k, ok := ids[w]
					if !ok {
						k = int32(len(g.Keywords))
						ids[w] = k
						g.Keywords = append(g.Keywords, w)
						mentions, holders = append(mentions, nil), append(holders, nil)
					}
					mentions[k] = append(mentions[k], p)
					if h := holders[k]; len(h) == 0 || h[len(h)-1] != int32(c) {
						holders[k] = append(h, int32(c))
					}
				}
			}
		}
	}
	g.Mentions, g.Chunks = packRows(mentions), RowsCSR(holders)
	return g, nil
}

// packRows packs rows into a CSR as they are (duplicates kept).
func packRows(rows [][]int32) CSR {
	c := CSR{Ptr: make([]int64, len(rows)+1), Idx: []int32{}}
	for i, r := range rows {
		c.Idx = append(c.Idx, r...)
		c.Ptr[i+1] = int64(len(c.Idx))
	}
	return c
}

// MeanRows returns, for each row of m, the mean of the vectors (dims wide,
// row-major in vecs) its entries name, not re-normalised (KET-RAG's keyword
// vectors); a row without entries is zero.
func MeanRows(m CSR, vecs []float32, dims int) []float32 {
	out := make([]float32, m.N()*dims)
	parallelFor(m.N(), func(i int) {
		row := m.Neighbors(i)
		if len(row) == 0 {
			return
		}
		acc := make([]float64, dims)
		for _, p := range row {
			v := vecs[int(p)*dims : int(p+1)*dims]
			for d, x := range v {
				acc[d] += float64(x)
			}
		}
		o := out[i*dims : (i+1)*dims]
		for d := range o {
			o[d] = float32(acc[d] / float64(len(row)))
		}
	})
	return out
}
