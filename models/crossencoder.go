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

// CrossEncoder is a pair encoder with its head: scores = Head(latents).
type CrossEncoder struct {
	Enc  PairEncoder
	Head *Head
}
