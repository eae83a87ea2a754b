package memo

import (
	"sync"
	"sync/atomic"
	"testing"
)

// The LRU makes each key once however many ask at once, keeps the last
// max keys used, and makes an evicted key again.
func TestLRU(t *testing.T) {
	c := NewLRU[string, int](2)
	var made atomic.Int32
	mk := func(v int) func() int { return func() int { made.Add(1); return v } }
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if c.Get("a", mk(1)) != 1 {
				t.Error("a")
			}
		})
	}
	wg.Wait()
	if made.Load() != 1 {
		t.Fatalf("a made %d times", made.Load())
	}
	c.Get("b", mk(2))
	c.Get("a", mk(1)) // a is now the most recent
	c.Get("c", mk(3)) // evicts b
	if c.Len() != 2 || made.Load() != 3 {
		t.Fatalf("len %d, made %d", c.Len(), made.Load())
	}
	if c.Get("a", mk(9)) != 1 || c.Get("b", mk(5)) != 5 {
		t.Fatal("a was evicted or b was kept")
	}
	if made.Load() != 4 {
		t.Fatalf("made %d", made.Load())
	}
}

// A make that panics leaves nothing behind: the next Get makes again.
func TestLRUForgetsAPanickedMake(t *testing.T) {
	c := NewLRU[string, int](2)
	func() {
		defer func() { recover() }()
		c.Get("a", func() int { panic("boom") })
	}()
	if c.Len() != 0 {
		t.Fatalf("%d entries kept after a panic", c.Len())
	}
	if got := c.Get("a", func() int { return 7 }); got != 7 {
		t.Fatalf("got %d after a panicked make", got)
	}
}
