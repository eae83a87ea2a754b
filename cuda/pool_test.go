package cuda

import (
	"errors"
	"sync"
	"testing"
)

// fakeDriver hands out numbered blocks and records frees.
type fakeDriver struct {
	mu    sync.Mutex
	next  int
	sizes map[int]int64
	freed map[int]bool
	fail  bool
}

func (d *fakeDriver) alloc(bytes int64) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fail {
		return 0, errors.New("out of memory")
	}
	d.next++
	d.sizes[d.next] = bytes
	return d.next, nil
}

func (d *fakeDriver) free(b int) { d.mu.Lock(); d.freed[b] = true; d.mu.Unlock() }

func TestPoolReusesBySizeClass(t *testing.T) {
	d := &fakeDriver{sizes: map[int]int64{}, freed: map[int]bool{}}
	p := NewPool(d.alloc, d.free)
	for bytes, want := range map[int64]int64{0: 256, 1: 256, 256: 256, 257: 512, 1000: 1024, 1 << 20: 1 << 20, 1<<20 + 1: 1 << 21,
		64 << 20: 64 << 20, 64<<20 + 1: 66 << 20, 1<<30 + 5: 1<<30 + 2<<20} {
		if c := Class(bytes); c != want {
			t.Errorf("Class(%d) = %d, want %d", bytes, c, want)
		}
	}
	a, ca, _ := p.Get(0, 1000)
	b, cb, _ := p.Get(0, 300)
	p.Put(0, a, ca)
	a2, _, _ := p.Get(0, 700) // same class as 1000: reused
	if a2 != a || d.sizes[a] != 1024 {
		t.Fatalf("700 bytes got block %d (%d bytes), want the freed block %d", a2, d.sizes[a2], a)
	}
	p.Put(0, b, cb)
	p.Put(0, a2, ca)
	s := p.Stats()
	if s.Allocs != 3 || s.Reuses != 1 || s.DriverAllocs != 2 || s.InUse != 0 || s.Cached != 1024+512 {
		t.Fatalf("stats %+v", s)
	}
	p.Trim()
	if !d.freed[a] || !d.freed[b] || p.Stats().Cached != 0 {
		t.Fatalf("Trim freed %v, stats %+v", d.freed, p.Stats())
	}
	d.fail = true
	if _, _, err := p.Get(0, 10); err == nil {
		t.Fatal("a driver error was lost")
	}
}

// TestPoolQueues: a block freed on one queue is reused by that queue only
// (its stream orders the reuse after the last use); Trim frees every
// queue's blocks.
func TestPoolQueues(t *testing.T) {
	d := &fakeDriver{sizes: map[int]int64{}, freed: map[int]bool{}}
	p := NewPool(d.alloc, d.free)
	a, c, _ := p.Get(1, 1000)
	p.Put(1, a, c)
	if b, _, _ := p.Get(2, 1000); b == a {
		t.Fatalf("queue 2 reused block %d freed on queue 1", a)
	}
	if b, _, _ := p.Get(0, 1000); b == a {
		t.Fatalf("queue 0 reused block %d freed on queue 1", a)
	}
	b, _, _ := p.Get(1, 1000)
	if b != a {
		t.Fatalf("queue 1 got block %d, want its freed block %d", b, a)
	}
	p.Put(1, b, c)
	e, ce, _ := p.Get(2, 300)
	p.Put(2, e, ce)
	p.Trim()
	if !d.freed[a] || !d.freed[e] || p.Stats().Cached != 0 {
		t.Fatalf("Trim freed %v, stats %+v", d.freed, p.Stats())
	}
}

// TestPoolTrimsOnOutOfMemory: a failed allocation gives the cached blocks
// back and tries once more.
func TestPoolTrimsOnOutOfMemory(t *testing.T) {
	d := &fakeDriver{sizes: map[int]int64{}, freed: map[int]bool{}}
	fails := 1
	p := NewPool(func(n int64) (int, error) {
		if len(d.freed) == 0 && fails > 0 && n > 1000 {
			fails--
			return 0, errors.New("out of memory")
		}
		return d.alloc(n)
	}, d.free)
	small, c, _ := p.Get(0, 100)
	p.Put(0, small, c)
	big, _, err := p.Get(0, 5000)
	if err != nil || !d.freed[small] || big == 0 {
		t.Fatalf("retry after trim: block %d, err %v, freed %v", big, err, d.freed)
	}
}

// TestPoolConcurrent: under -race, concurrent Get/Put keep the counters
// consistent and never hand one block to two holders.
func TestPoolConcurrent(t *testing.T) {
	d := &fakeDriver{sizes: map[int]int64{}, freed: map[int]bool{}}
	p := NewPool(d.alloc, d.free)
	var mu sync.Mutex
	held := map[int]bool{}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				b, c, err := p.Get(g%3, int64(100*(i%5+1)))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if held[b] {
					t.Errorf("block %d handed out twice", b)
				}
				held[b] = true
				mu.Unlock()
				mu.Lock()
				delete(held, b)
				mu.Unlock()
				p.Put(g%3, b, c)
			}
		}()
	}
	wg.Wait()
	if s := p.Stats(); s.InUse != 0 || s.Allocs != 1600 || s.Reuses+s.DriverAllocs != 1600 {
		t.Fatalf("stats %+v", s)
	}
}
