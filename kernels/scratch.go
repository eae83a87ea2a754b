package kernels

import "sync"

// scratchPool reuses float32 work buffers across calls, so ops called once
// per head and layer (joint attention in a decoder's prefill) do not
// allocate their score matrices each time.
type scratchPool struct{ p sync.Pool }

var scratch scratchPool

// get returns a buffer of n values (contents undefined).
func (s *scratchPool) get(n int) *[]float32 {
	if b, ok := s.p.Get().(*[]float32); ok && cap(*b) >= n {
		*b = (*b)[:n]
		return b
	}
	b := make([]float32, n)
	return &b
}

func (s *scratchPool) put(b *[]float32) { s.p.Put(b) }
