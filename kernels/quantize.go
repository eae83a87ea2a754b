package kernels

import "github.com/gleaner-rag/gleaner/engine"

// QuantRows is the engine's quantized matrix, and Quantize, BF16 and
// FromBF16 its quantizers: an index quantizes its vectors through the
// engine, which every layer may import.
type QuantRows = engine.QuantRows

var (
	Quantize = engine.Quantize
	BF16     = engine.BF16
	FromBF16 = engine.FromBF16
)
