// Package vecmath holds the small host-side vector helpers several methods
// share (cosines of a query against a handful of rows, score scaling):
// work too small for an engine op.
package vecmath

import "math"

// Dot is the float32 inner product, accumulated in float64.
func Dot(a, b []float32) float32 {
	var s float64
	for i, x := range a {
		s += float64(x) * float64(b[i])
	}
	return float32(s)
}

// DotCodes is the inner product of int8 codes with q in float32, summed
// as the CPU backend's pure-Go kernel sums (four accumulators, paired), so
// the portable code scorers of the graph structures (hnsw, ivf) agree with
// it bit for bit.
func DotCodes(codes []int8, q []float32) float32 {
	var s0, s1, s2, s3 float32
	j := 0
	for ; j+4 <= len(codes); j += 4 {
		s0 += float32(codes[j]) * q[j]
		s1 += float32(codes[j+1]) * q[j+1]
		s2 += float32(codes[j+2]) * q[j+2]
		s3 += float32(codes[j+3]) * q[j+3]
	}
	for ; j < len(codes); j++ {
		s0 += float32(codes[j]) * q[j]
	}
	return (s0 + s1) + (s2 + s3)
}

// DotRows sets out[i] to float64(Dot(row ids[i] of X, q)) for each i, X
// holding rows of len(q) values: the same sums in the same order, but four
// rows at a time, so that four chains of additions overlap instead of each
// waiting on the one before (a hub's 10⁴ neighbours in FuseRAG's walk).
func DotRows(X []float32, ids []int32, q []float32, out []float64) {
	d := len(q)
	row := func(i int) []float32 { return X[int(ids[i])*d:][:d] }
	i := 0
	for ; i+4 <= len(ids); i += 4 {
		a, b, c, e := row(i), row(i+1), row(i+2), row(i+3)
		var s0, s1, s2, s3 float64
		for j, y := range q {
			fy := float64(y)
			s0 += float64(a[j]) * fy
			s1 += float64(b[j]) * fy
			s2 += float64(c[j]) * fy
			s3 += float64(e[j]) * fy
		}
		out[i], out[i+1], out[i+2], out[i+3] = float64(float32(s0)), float64(float32(s1)), float64(float32(s2)), float64(float32(s3))
	}
	for ; i < len(ids); i++ {
		out[i] = float64(Dot(row(i), q))
	}
}

// Unit returns v scaled to unit length; false for a zero or non-finite v.
func Unit(v []float32) ([]float32, bool) {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if !(s > 0) || math.IsInf(s, 0) {
		return nil, false
	}
	out := make([]float32, len(v))
	inv := 1 / math.Sqrt(s)
	for i, x := range v {
		out[i] = float32(float64(x) * inv)
	}
	return out, true
}

// UnitRows normalises the n rows of vecs (d values each); a short or zero
// row stays nil.
func UnitRows(vecs []float32, n, d int) [][]float32 {
	out := make([][]float32, n)
	for r := range out {
		if (r+1)*d <= len(vecs) {
			out[r], _ = Unit(vecs[r*d : (r+1)*d])
		}
	}
	return out
}

// MinMaxScaled maps scores to [0, mass] by min–max normalisation, in
// place; all equal scores give every entry mass (HippoRAG's min–max then
// yields ones: a uniform reset, plain PageRank).
func MinMaxScaled(s []float64, mass float64) []float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range s {
		lo, hi = min(lo, x), max(hi, x)
	}
	if !(hi > lo) {
		for i := range s {
			s[i] = mass
		}
		return s
	}
	for i, x := range s {
		s[i] = mass * (x - lo) / (hi - lo)
	}
	return s
}
