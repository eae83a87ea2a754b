//go:build cuda

package cuda

/*
#cgo LDFLAGS: -lcuda
#include <cuda.h>
#include <stddef.h>

static int gl_alloc_host(void** p, size_t n) { return (int)cuMemAllocHost(p, n); }
static int gl_free_host(void* p) { return (int)cuMemFreeHost(p); }
*/
import "C"

import (
	"fmt"
	"unsafe"

	"gorgonia.org/cu"
)

// StagingBytes is the pinned host memory a backend stages transfers
// through: two halves, so one half's asynchronous copy runs while the
// other is filled or emptied.
const StagingBytes = 8 << 20

// staging is page-locked host memory for uploads and downloads. The DMA
// engine reads and writes it directly (a copy from pageable Go memory goes
// through the driver's own bounce buffer and blocks), and an upload
// returns once its last chunk is queued: the caller's slice is already
// copied, so it may change at once. Each half has an event recorded after
// its copy (on the stream of the backend or view that made it); the half
// is reused only after that event, whichever stream the next copy is on.
// Guarded by the backend's mutex (transfers run one at a time).
type staging struct {
	half [2]unsafe.Pointer
	ev   [2]cu.Event
	n    int64 // bytes per half
}

// openStaging allocates the pinned halves and their events on b's
// context.
func openStaging(b *Backend) (*staging, error) {
	s := &staging{n: StagingBytes / 2}
	err := b.ctx.Do(func() error {
		for h := range s.half {
			if st := C.gl_alloc_host(&s.half[h], C.size_t(s.n)); st != 0 {
				return fmt.Errorf("cuda: cuMemAllocHost of %d bytes: status %d", s.n, int(st))
			}
		}
		return nil
	})
	for h := range s.ev {
		if err != nil {
			break
		}
		s.ev[h], err = b.ctx.MakeEvent(cu.DisableTiming)
	}
	if err != nil {
		s.close(b)
		return nil, err
	}
	return s, nil
}

func (s *staging) close(b *Backend) {
	b.ctx.Do(func() error { // at Close: a failure leaves the pages locked until exit
		for h, p := range s.half {
			if p != nil {
				C.gl_free_host(p)
				s.half[h] = nil
			}
		}
		return nil
	})
	for h := range s.ev {
		if s.ev[h] != (cu.Event{}) {
			b.ctx.DestroyEvent(&s.ev[h])
		}
	}
}

// pinned is half h as a byte slice.
func (s *staging) pinned(h int) []byte { return unsafe.Slice((*byte)(s.half[h]), s.n) }

// upload queues host's bytes to dev in chunks through the halves; it
// returns with the copies queued on the default stream (ordered before
// any later kernel of b's stream). Call under b.mu.
func (s *staging) upload(b *Backend, dev cu.DevicePtr, host []byte) error {
	for i, off := 0, 0; off < len(host); i, off = i+1, off+int(s.n) {
		h, chunk := i%2, host[off:min(off+int(s.n), len(host))]
		b.ctx.SynchronizeEvent(s.ev[h]) // the half's previous copy has left it
		if err := b.ctx.Error(); err != nil {
			return err
		}
		copy(s.pinned(h), chunk)
		b.ctx.MemcpyHtoDAsync(dev+cu.DevicePtr(off), s.half[h], int64(len(chunk)), b.stream())
		b.ctx.Record(s.ev[h], b.stream())
		if err := b.ctx.Error(); err != nil {
			return err
		}
	}
	return nil
}

// download copies dev's bytes into host through the halves: chunk i+1's
// copy is queued before chunk i is emptied. It returns when host is full.
// Call under b.mu.
func (s *staging) download(b *Backend, host []byte, dev cu.DevicePtr) error {
	queue := func(i int) {
		off := i * int(s.n)
		n := min(int(s.n), len(host)-off)
		b.ctx.MemcpyDtoHAsync(s.half[i%2], dev+cu.DevicePtr(off), int64(n), b.stream())
		b.ctx.Record(s.ev[i%2], b.stream())
	}
	chunks := (len(host) + int(s.n) - 1) / int(s.n)
	if chunks > 0 {
		queue(0)
	}
	for i := 0; i < chunks; i++ {
		if i+1 < chunks {
			queue(i + 1)
		}
		b.ctx.SynchronizeEvent(s.ev[i%2])
		if err := b.ctx.Error(); err != nil {
			return err
		}
		off := i * int(s.n)
		copy(host[off:min(off+int(s.n), len(host))], s.pinned(i%2))
	}
	return nil
}
