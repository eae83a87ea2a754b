package cuda

import "sync"

// Mirror is the host's copy of a device index buffer (int32 or int64).
// The ops check CSR pointers, edge sources, row indices and sequence
// lengths on the host before a launch, as every backend does; reading
// them from the mirror instead of downloading them keeps a synchronising
// copy off the hot path (SeedER's encoder checks the same edge lists in
// every layer). Upload writes through it; a kernel that writes the buffer
// (top-k's indices) makes it unknown, and the backend then downloads, as
// before. It is device-agnostic, so it is tested on the CPU.
//
// Memory: a buffer filled by Upload keeps a host copy of its elements; a
// bound buffer (Bind) aliases the caller's slice, which the engine's
// contract keeps unchanged, and costs nothing.
//
// Concurrency: the methods are safe for concurrent use. The slice Read
// returns is the mirror's own and stays valid until the next Write, as a
// device buffer's contents do until its next write: the engine's contract
// already forbids writing a buffer while an op reads it.
type Mirror[T int32 | int64] struct {
	mu    sync.Mutex
	state mirrorState
	n     int
	data  []T // state held
}

type mirrorState uint8

const (
	mirrorUnknown mirrorState = iota // written by a kernel, or never fully uploaded
	mirrorZeros                      // freshly zeroed (Alloc), data not materialised
	mirrorHeld                       // data holds every element
)

// NewMirror is the mirror of n elements: all zeros (Alloc zeroes the
// device memory) or unknown (scratch, which is not zeroed).
func NewMirror[T int32 | int64](n int, zeroed bool) *Mirror[T] {
	m := &Mirror[T]{n: n}
	if zeroed {
		m.state = mirrorZeros
	}
	return m
}

// BoundMirror is the mirror of a bound buffer: it aliases src.
func BoundMirror[T int32 | int64](src []T) *Mirror[T] {
	return &Mirror[T]{n: len(src), state: mirrorHeld, data: src}
}

// Write records an upload of src at element off (the caller has checked
// the range). A write that covers the whole buffer makes an unknown
// mirror known; a partial one leaves it unknown.
func (m *Mirror[T]) Write(off int, src []T) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.state == mirrorZeros:
		m.data, m.state = make([]T, m.n), mirrorHeld
	case m.state == mirrorUnknown && off == 0 && len(src) == m.n:
		m.data, m.state = make([]T, m.n), mirrorHeld
	case m.state == mirrorUnknown:
		return
	}
	copy(m.data[off:], src)
}

// Forget makes the mirror unknown: a kernel wrote the buffer.
func (m *Mirror[T]) Forget() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.state, m.data = mirrorUnknown, nil
}

// Read returns the first n elements (n ≤ the buffer's length), or false
// when the mirror does not know them.
func (m *Mirror[T]) Read(n int) ([]T, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case n < 0 || n > m.n:
		return nil, false
	case m.state == mirrorZeros:
		return make([]T, n), true
	case m.state == mirrorHeld:
		return m.data[:n:n], true
	}
	return nil, false
}
