//go:build cgo && !purego

package emu

import "testing"

// TestWarpAndAtomics checks the emulated shuffles and atomics against
// CUDA's documented semantics, computed here lane by lane.
func TestWarpAndAtomics(t *testing.T) {
	const grid = 3
	sh, counters, fsum, xsum := warpSelfTest(grid)
	val := func(l, w int) int32 { return int32(l*10 + w) }
	for th := range 64 {
		l, w := th%32, th/32
		down := l
		if l%16+5 < 16 {
			down = l + 5
		}
		up := l
		if l >= 2 {
			up = l - 2
		}
		xor8 := l // lanes 0–7 of each 8-group would read a later group: their own value
		if l&8 != 0 {
			xor8 = l ^ 8
		}
		want := []int32{val(3, w), val(l&^7+3, w), val(down, w), val(up, w), val(xor8, w), val(l^1, w)}
		for i, v := range want {
			if got := sh[th*6+i]; got != v {
				t.Errorf("thread %d, shuffle %d: %d, want %d", th, i, got, v)
			}
		}
		if wantSum := float32(32*31/2) + 32*0.25; xsum[th] != wantSum {
			t.Errorf("thread %d: butterfly sum %v, want %v", th, xsum[th], wantSum)
		}
	}
	n := int32(grid * 64)
	if counters[0] != n || counters[1] != n-1 || counters[2] != 1 || counters[3] < 0 || counters[3] >= n {
		t.Errorf("atomics: adds %d (want %d), max %d (want %d), CAS winners %d (want 1), CAS word %d", counters[0], n, counters[1], n-1, counters[2], counters[3])
	}
	if fsum != float32(n)*0.5 {
		t.Errorf("float atomicAdd: %v, want %v", fsum, float32(n)*0.5)
	}
}
