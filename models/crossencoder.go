package models

import "context"

// PairEncoder turns (query, node) pairs into latent vectors: for a
// cross-encoder, the first-token last hidden state before the
// classification head (docs/methods.md §1.2); for the embedded lexical encoder,
// standardised interaction features. Implementations are safe for
// concurrent use.
type PairEncoder interface {
	Name() string
	Dim() int
	// Prepare does the per-query work once (analysis, tokenization).
	Prepare(ctx context.Context, query string) (Prepared, error)
	// Encode writes the latents of nodes (len(nodes) × Dim()) into out.
	Encode(ctx context.Context, q Prepared, nodes []int32, out []float32) error
}

// Prepared is an encoder's per-query state.
type Prepared interface{ Query() string }

// NodeSubset is the set of nodes a query may see (a metadata filter's
// set, retrieve/filter.Set): its bits, and a memo for what encoders derive
// from it once.
type NodeSubset interface {
	Words() []uint64
	Memo(key string, make func() any) any
}

// SubsetPreparer is implemented by pair encoders whose latents depend on
// corpus statistics (the lexical encoder's BM25 and idf features): it
// prepares a query as if the index held only the subset's nodes. Encoders
// that read only the query and node texts (transformer cross-encoders)
// need not implement it: their latents are the same either way.
type SubsetPreparer interface {
	PrepareWithin(ctx context.Context, query string, sub NodeSubset) (Prepared, error)
}

// CrossEncoder is a pair encoder with its head: scores = Head(latents).
type CrossEncoder struct {
	Enc  PairEncoder
	Head *Head
}
