package kernels

// dotBlockI8 and dotBlockBF16 are dotBlock over quantized rows: the float32
// queries against int8 codes (the row's scale is applied by the caller) or
// bfloat16 values, converted to float32 in registers, so a scan reads a
// quarter or half of float32's bytes.
//
// Reference loop (float64 accumulation in the reference of the tests):
//
//	for q := 0; q < nq; q++ {
//		for r := 0; r < rows; r++ {
//			var s float32
//			for j := 0; j < d; j++ { s += float32(X[r*d+j]) * Q[q*d+j] }
//			out[q*rows+r] = s
//		}
//	}
//
// They are variables so the SIMD path can replace them at start-up.
var (
	dotBlockI8   = dotBlockI8Go
	dotBlockBF16 = dotBlockBF16Go
)

// dotQImpls lists every implementation by dotImpls' names, for the tests.
var dotQImpls = map[string]dotQImpl{"go": {i8: dotBlockI8Go, bf16: dotBlockBF16Go}}

type dotQImpl struct {
	i8       func(X []int8, rows, d int, Q []float32, nq int, out []float32)
	bf16     func(X []uint16, rows, d int, Q []float32, nq int, out []float32)
	scanI8   func(X []int8, scale []float32, rows, d int, Q []float32, nq int, base int32, s *scanState) bool
	scanBF16 func(X []uint16, rows, d int, Q []float32, nq int, base int32, s *scanState) bool
}

func dotBlockI8Go(X []int8, rows, d int, Q []float32, nq int, out []float32) {
	for q := 0; q < nq; q++ {
		qv := Q[q*d : q*d+d]
		for r := 0; r < rows; r++ {
			row := X[r*d : r*d+d]
			var s0, s1, s2, s3 float32
			j := 0
			for ; j+4 <= d; j += 4 {
				s0 += float32(row[j]) * qv[j]
				s1 += float32(row[j+1]) * qv[j+1]
				s2 += float32(row[j+2]) * qv[j+2]
				s3 += float32(row[j+3]) * qv[j+3]
			}
			for ; j < d; j++ {
				s0 += float32(row[j]) * qv[j]
			}
			out[q*rows+r] = (s0 + s1) + (s2 + s3)
		}
	}
}

func dotBlockBF16Go(X []uint16, rows, d int, Q []float32, nq int, out []float32) {
	for q := 0; q < nq; q++ {
		qv := Q[q*d : q*d+d]
		for r := 0; r < rows; r++ {
			row := X[r*d : r*d+d]
			var s0, s1, s2, s3 float32
			j := 0
			for ; j+4 <= d; j += 4 {
				s0 += FromBF16(row[j]) * qv[j]
				s1 += FromBF16(row[j+1]) * qv[j+1]
				s2 += FromBF16(row[j+2]) * qv[j+2]
				s3 += FromBF16(row[j+3]) * qv[j+3]
			}
			for ; j < d; j++ {
				s0 += FromBF16(row[j]) * qv[j]
			}
			out[q*rows+r] = (s0 + s1) + (s2 + s3)
		}
	}
}
