package graphops

import (
	"context"
	"fmt"
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
// Sentences and Words are called from Workers goroutines at once (≥ 1).
type KeywordText struct {
	Sentences func(string) ([]string, error)
	Words     func(string) []string
	Keep      func(string) bool
	Workers   int
}

// keywordBlock is how many chunks are read in parallel before they are
// merged in order: it bounds the words held at once.
const keywordBlock = 2048

// BuildKeywordGraph builds the keyword graph of chunks: blocks of chunks
// are split into sentence parts on t.Workers goroutines and merged in
// chunk order, so the graph does not depend on the number of workers.
func BuildKeywordGraph(ctx context.Context, chunks []string, t KeywordText) (*KeywordGraph, error) {
	if t.Workers < 1 {
		return nil, fmt.Errorf("graphops: keyword graph: workers %d: want ≥ 1", t.Workers)
	}
	b := keywordBuilder{g: &KeywordGraph{}, ids: map[string]int32{}, keep: t.Keep}
	parts := make([][][]string, keywordBlock)
	errs := make([]error, keywordBlock)
	for lo := 0; lo < len(chunks); lo += keywordBlock {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		hi := min(lo+keywordBlock, len(chunks))
		parallelChunks(hi-lo, min(t.Workers, hi-lo), func(_, a, z int) {
			for i := a; i < z; i++ {
				parts[i], errs[i] = sentenceParts(chunks[lo+i], t)
			}
		})
		for i := range hi - lo {
			if errs[i] != nil {
				return nil, fmt.Errorf("graphops: keyword graph: chunk %d: %w", lo+i, errs[i])
			}
			b.add(int32(lo+i), parts[i])
			parts[i] = nil
		}
	}
	b.g.Mentions, b.g.Chunks = packRows(b.mentions), RowsCSR(b.holders)
	return b.g, nil
}

// sentenceParts splits a chunk into its sentences' parts of at most
// MaxPartWords word tokens.
func sentenceParts(text string, t KeywordText) ([][]string, error) {
	sents, err := t.Sentences(text)
	if err != nil {
		return nil, err
	}
	var out [][]string
	for _, s := range sents {
		words := t.Words(s)
		for from := 0; from < len(words); from += MaxPartWords {
			out = append(out, words[from:min(from+MaxPartWords, len(words))])
		}
	}
	return out, nil
}

// keywordBuilder merges chunks' sentence parts, in chunk order.
type keywordBuilder struct {
	g                 *KeywordGraph
	ids               map[string]int32
	keep              func(string) bool
	mentions, holders [][]int32
}

// add records chunk c's parts and their keywords.
func (b *keywordBuilder) add(c int32, parts [][]string) {
	for _, part := range parts {
		p := int32(len(b.g.Parts))
		b.g.Parts = append(b.g.Parts, strings.Join(part, " "))
		for _, w := range part {
			if !b.keep(w) {
				continue
			}
			k, ok := b.ids[w]
			if !ok {
				k = int32(len(b.g.Keywords))
				b.ids[w] = k
				b.g.Keywords = append(b.g.Keywords, w)
				b.mentions, b.holders = append(b.mentions, nil), append(b.holders, nil)
			}
			b.mentions[k] = append(b.mentions[k], p)
			if h := b.holders[k]; len(h) == 0 || h[len(h)-1] != c {
				b.holders[k] = append(h, c)
			}
		}
	}
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
