package kernels

import "github.com/gleaner-rag/gleaner/engine"

// Hit and TopK are the engine's: the host-side selection of the best hits
// lives beside the result type, so callers above the kernels need not
// import them.
type (
	Hit  = engine.Hit
	TopK = engine.TopK
)

// NewTopK, SortHits and MergeHits are the engine's.
var (
	NewTopK   = engine.NewTopK
	SortHits  = engine.SortHits
	MergeHits = engine.MergeHits
)

// TopKRows selects the k best entries of each row of a rows×cols score
// matrix (NaN never selected), best first, ties by lower column.
func TopKRows(scores []float32, rows, cols, k int) [][]Hit {
	out := make([][]Hit, rows)
	parallelRows(rows, cols, func(lo, hi int) {
		t := NewTopK(k)
		for i := lo; i < hi; i++ {
			t.Reset(k)
			pushBlock(t, scores[i*cols:(i+1)*cols], 0)
			out[i] = t.Results()
		}
	})
	return out
}
