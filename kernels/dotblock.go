package kernels

// dotBlock computes the inner products of a block of rows with a batch of
// queries: out[q*rows+r] = Σ_j X[r*d+j]·Q[q*d+j].
//
// Reference loop (float64 accumulation in the reference of the tests):
//
//	for q := 0; q < nq; q++ {
//		for r := 0; r < rows; r++ {
//			var s float32
//			for j := 0; j < d; j++ { s += X[r*d+j] * Q[q*d+j] }
//			out[q*rows+r] = s
//		}
//	}
//
// It is a variable so the SIMD path can replace it at start-up.
var dotBlock = dotBlockGo

// dotBlockImpl names the implementation in use, for benchmarks and logs.
var dotBlockImpl = "go"

// dotImpls lists every implementation this CPU can run, by name, so tests
// can check each one against the reference.
var dotImpls = map[string]func(X []float32, rows, d int, Q []float32, nq int, out []float32){"go": dotBlockGo}

// dotBlockGo is the pure-Go twin: four independent accumulators so the CPU
// can overlap the multiply-adds.
func dotBlockGo(X []float32, rows, d int, Q []float32, nq int, out []float32) {
	for q := 0; q < nq; q++ {
		qv := Q[q*d : q*d+d]
		for r := 0; r < rows; r++ {
			out[q*rows+r] = dotGo(X[r*d:r*d+d], qv)
		}
	}
}

func dotGo(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	j := 0
	for ; j+4 <= len(a); j += 4 {
		s0 += a[j] * b[j]
		s1 += a[j+1] * b[j+1]
		s2 += a[j+2] * b[j+2]
		s3 += a[j+3] * b[j+3]
	}
	for ; j < len(a); j++ {
		s0 += a[j] * b[j]
	}
	return (s0 + s1) + (s2 + s3)
}

// DotBlockImpl reports which dotBlock implementation was selected.
func DotBlockImpl() string { return dotBlockImpl }
