package kernels

import "fmt"

// dotRows computes the inner products of the query q with the rows of X
// (row-major, width d) named by ids: out[i] = Σ_j X[ids[i]*d+j]·q[j]. It is
// the gather form of dotBlock at batch 1, for graph search (HNSW), which
// scores a node's neighbours rather than a contiguous block; every
// implementation sums in its dotBlock twin's order, so a row scores the same
// bit for bit in a graph search and in the exact scan.
//
// Reference loop (float64 accumulation in the reference of the tests):
//
//	for i, r := range ids {
//		var s float32
//		for j := 0; j < d; j++ { s += X[int(r)*d+j] * q[j] }
//		out[i] = s
//	}
//
// It is a variable so the SIMD path can replace it at start-up, together
// with dotBlock.
var dotRows = dotRowsGo

// dotRowsImpls lists every implementation by dotImpls' names.
var dotRowsImpls = map[string]func(X []float32, d int, ids []int32, q, out []float32){"go": dotRowsGo}

func dotRowsGo(X []float32, d int, ids []int32, q, out []float32) {
	for i, r := range ids {
		out[i] = dotGo(X[int(r)*d:int(r)*d+d], q)
	}
}

// DotRows scores the rows of X named by ids against q into out[:len(ids)],
// each exactly as FlatIP scores it. Row ids must lie in [0, len(X)/d): a
// caller checks its graph once (on load) rather than on every call, so
// DotRows checks only the shapes, and an id out of range panics in the
// pure-Go twin and is undefined in the SIMD paths.
func DotRows(X []float32, d int, ids []int32, q, out []float32) {
	if d <= 0 || len(q) != d || len(out) < len(ids) || len(X)%d != 0 {
		panic(fmt.Sprintf("kernels: DotRows: d %d, query %d, out %d for %d ids, matrix %d", d, len(q), len(out), len(ids), len(X)))
	}
	dotRows(X, d, ids, q, out)
}
