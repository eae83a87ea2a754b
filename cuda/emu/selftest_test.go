//go:build cgo && !purego

package emu

import "testing"

// TestWarpAndAtomics checks the emulated shuffles and atomics against
// CUDA's documented semantics, computed here lane by lane: every block,
// full warps and a partial one (a 25 × 2 block: 32 + 18 lanes), a 2-D
// block, 64-bit values.
func TestWarpAndAtomics(t *testing.T) {
	for _, c := range []struct{ grid, bx, by int }{{3, 64, 1}, {2, 25, 2}} {
		nt := c.bx * c.by
		sh, counters, fsum, xsum := warpSelfTest(c.grid, c.bx, c.by)
		for b := range c.grid {
			for th := range nt {
				l, w := th%32, th/32
				lanes := min(32, nt-32*w)
				val := func(src int) int32 { // lane src's v; a lane outside the warp leaves the caller's own
					if src < 0 || src >= lanes {
						src = l
					}
					return int32(src*10 + w + 1000*b)
				}
				want := []int32{val(3), val(l&^7 + 3), val(shifted(l, 5, 16)), val(shifted(l, -2, 32)), val(xorLane(l, 8, 8)),
					val(l ^ 1), val(shifted(l, -3, 8)), val(31)}
				got := sh[(b*nt+th)*selfTestShuffles:][:selfTestShuffles]
				for i, v := range want {
					if got[i] != v {
						t.Errorf("%d×%d block %d thread %d, shuffle %d: %d, want %d", c.bx, c.by, b, th, i, got[i], v)
					}
				}
				if wantSum := 32*31/2 + 32*(0.25+float64(b)); lanes == 32 && xsum[b*nt+th] != wantSum {
					t.Errorf("block %d thread %d: butterfly sum %v, want %v", b, th, xsum[b*nt+th], wantSum)
				}
			}
		}
		n := int32(c.grid * nt)
		if counters[0] != n || counters[1] != n-1 || counters[2] != 1 || counters[3] < 0 || counters[3] >= n {
			t.Errorf("atomics: adds %d (want %d), max %d (want %d), CAS winners %d (want 1), CAS word %d", counters[0], n, counters[1], n-1, counters[2], counters[3])
		}
		if fsum != float32(n)*0.5 {
			t.Errorf("float atomicAdd: %v, want %v", fsum, float32(n)*0.5)
		}
	}
}

// shifted is the source lane of a shuffle down (delta > 0) or up (delta <
// 0) within groups of width lanes: the caller's own lane past its group.
func shifted(l, delta, width int) int {
	if in := l%width + delta; in < 0 || in >= width {
		return l
	}
	return l + delta
}

// xorLane is the source lane of an xor shuffle within groups of width:
// the caller's own lane when it would read a later group.
func xorLane(l, mask, width int) int {
	if src := l ^ mask; src/width <= l/width {
		return src
	}
	return l
}
