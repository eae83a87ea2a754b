// Package kgextract turns text into a small knowledge graph — entities
// with types and descriptions, relationships with descriptions and
// weights — for KET-RAG's skeleton (docs/methods.md §4.2).
//
// Extractors: Local (the embedded default, no network: prose NER entities
// and sentence co-occurrence relationships described by their sentence)
// and LLM (any OpenAI-compatible chat-completions server, with a strict
// JSON reply format, retries, a resumable disk cache and token
// accounting). Both are safe for concurrent use.
package kgextract

import (
	"context"
	"strings"
	"unicode"
)

// Entity is one extracted entity.
type Entity struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Description string `json:"description"`
}

// Relationship joins two entities by name.
type Relationship struct {
	Source      string  `json:"source"`
	Target      string  `json:"target"`
	Description string  `json:"description"`
	Weight      float64 `json:"weight"`
}

// Graph is what one extraction returns.
type Graph struct {
	Entities      []Entity       `json:"entities"`
	Relationships []Relationship `json:"relationships"`
}

// Usage is an extraction's cost. Calls and tokens are those the server
// billed for: a reply served from the cache counts in CacheHits and its
// original tokens in CachedInput and CachedOutput, so an index's full cost
// is the sum of both.
type Usage struct {
	Calls        int `json:"calls"`
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	Retries      int `json:"retries"`
	CacheHits    int `json:"cache_hits"`
	CachedInput  int `json:"cached_input_tokens"`
	CachedOutput int `json:"cached_output_tokens"`
}

// Add accumulates u2 into u.
func (u *Usage) Add(u2 Usage) {
	u.Calls += u2.Calls
	u.InputTokens += u2.InputTokens
	u.OutputTokens += u2.OutputTokens
	u.Retries += u2.Retries
	u.CacheHits += u2.CacheHits
	u.CachedInput += u2.CachedInput
	u.CachedOutput += u2.CachedOutput
}

// Extractor extracts a graph from one text unit.
type Extractor interface {
	// Name identifies the extractor and its settings (recorded in the index).
	Name() string
	Extract(ctx context.Context, text string) (Graph, Usage, error)
}

// NormalizeName is the key entities merge by: lower case, surrounding
// punctuation and quotes trimmed, inner white space collapsed.
func NormalizeName(s string) string {
	s = strings.TrimFunc(s, func(r rune) bool { return unicode.IsPunct(r) || unicode.IsSpace(r) || unicode.IsSymbol(r) })
	return strings.ToLower(strings.Join(strings.Fields(s), " "))
}
