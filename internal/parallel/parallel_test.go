package parallel

import (
	"context"
	"runtime"
	"testing"
)

func TestWorkersFollowTheContext(t *testing.T) {
	ctx := context.Background()
	if got, want := Workers(ctx), runtime.GOMAXPROCS(0); got != want {
		t.Errorf("unbounded: %d workers, want GOMAXPROCS %d", got, want)
	}
	if got := Workers(WithWorkers(ctx, 1)); got != 1 {
		t.Errorf("bounded at 1: %d workers", got)
	}
	if got := Workers(WithWorkers(ctx, 0)); got != 1 {
		t.Errorf("bounded at 0: %d workers, want at least 1", got)
	}
	if got, want := Workers(WithWorkers(ctx, 1<<20)), runtime.GOMAXPROCS(0); got != want {
		t.Errorf("bounded above GOMAXPROCS: %d workers, want %d", got, want)
	}
}

func TestBackgroundKeepsTheBound(t *testing.T) {
	ctx := Background(WithWorkers(context.Background(), 1))
	if got := Workers(ctx); got != 1 {
		t.Errorf("a background context lost its bound: %d workers", got)
	}
	Yield(ctx)                  // gives the core away and comes back
	Yield(context.Background()) // a no-op
}

func TestCopyAndGrowKeepEveryElement(t *testing.T) {
	ctx := Background(context.Background())
	for _, n := range []int{0, 1, copyChunk - 1, copyChunk, 3*copyChunk + 7} {
		src := make([]int32, n)
		for i := range src {
			src[i] = int32(i*7 + 1)
		}
		dst := make([]int32, n+3)
		if got := Copy(ctx, dst, src); got != n {
			t.Fatalf("n=%d: Copy moved %d", n, got)
		}
		for i := range src {
			if dst[i] != src[i] {
				t.Fatalf("n=%d: Copy: element %d is %d, want %d", n, i, dst[i], src[i])
			}
		}
		g := Grow(ctx, src, 5)
		if len(g) != n || cap(g)-len(g) < 5 {
			t.Fatalf("n=%d: Grow gave len %d cap %d, want len %d and room for 5", n, len(g), cap(g), n)
		}
		for i := range src {
			if g[i] != src[i] {
				t.Fatalf("n=%d: Grow: element %d is %d, want %d", n, i, g[i], src[i])
			}
		}
		if same := Grow(ctx, g, cap(g)-len(g)); &same[:cap(same)][0] != &g[:cap(g)][0] {
			t.Fatalf("n=%d: Grow moved a slice that had room", n)
		}
	}
}
