package kernels

import "fmt"

// Mul is out[i] = x[i]·y[i] over n elements, or out[i] += x[i]·y[i] with
// accumulate (SeedER's gate: h += σ(g)⊙hop).
//
// Reference loop: the product (and sum) in float64; the kernel's float32
// product is its correctly rounded value.
func Mul(x, y, out []float32, n int, accumulate bool) error {
	if n < 0 || len(x) < n || len(y) < n || len(out) < n {
		return fmt.Errorf("kernels: mul: %d elements, buffers of %d, %d and %d", n, len(x), len(y), len(out))
	}
	parallelRows(n/4096+1, 4096, func(lo, hi int) {
		a, b := min(lo*4096, n), min(hi*4096, n)
		if accumulate {
			for i := a; i < b; i++ {
				out[i] += x[i] * y[i]
			}
			return
		}
		for i := a; i < b; i++ {
			out[i] = x[i] * y[i]
		}
	})
	return nil
}
