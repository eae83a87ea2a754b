package engine

// RowDotter is implemented by a backend whose kernels run on the host. It
// scores the rows of a host matrix X (row-major, width d) named by ids
// against one query q into out, each exactly as the backend's flat search
// scores it, so a graph search (HNSW) over the same matrix reports the
// exact search's scores. A backend without it leaves graph searches their
// portable loop.
type RowDotter interface {
	DotRows(X []float32, d int, ids []int32, q, out []float32)
}

// DotRowsOf returns be's row scorer, or nil when it has none.
func DotRowsOf(be Backend) func(X []float32, d int, ids []int32, q, out []float32) {
	if r, ok := be.(RowDotter); ok {
		return r.DotRows
	}
	return nil
}

// CodeScorer is implemented by a backend whose kernels run on the host and
// can score int8 codes in place: out[r] = scale[r] · Σⱼ codes[r·d+j]·q[j]
// for the len(scale) contiguous rows of codes (an inverted file's lists
// stored quantized). A backend without it leaves such lists unread, and
// the search scores their float32 rows.
type CodeScorer interface {
	ScoreCodes(codes []int8, scale []float32, d int, q, out []float32)
}

// CodeScorerOf returns be's int8 code scorer, or nil when it has none.
func CodeScorerOf(be Backend) func(codes []int8, scale []float32, d int, q, out []float32) {
	if s, ok := be.(CodeScorer); ok {
		return s.ScoreCodes
	}
	return nil
}

// CodeRowScorer is implemented by a backend whose kernels run on the host
// and can score gathered int8 rows in place: out[i] = scale[ids[i]] ·
// Σⱼ codes[ids[i]·d+j]·q[j], each row as its CodeScorer scores it (a graph
// build searching on codes of its vectors). A backend without it leaves
// such a build its portable loop.
type CodeRowScorer interface {
	ScoreCodeRows(codes []int8, scale []float32, d int, ids []int32, q, out []float32)
}

// CodeRowScorerOf returns be's gathered int8 row scorer, or nil when it has
// none.
func CodeRowScorerOf(be Backend) func(codes []int8, scale []float32, d int, ids []int32, q, out []float32) {
	if s, ok := be.(CodeRowScorer); ok {
		return s.ScoreCodeRows
	}
	return nil
}
