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
