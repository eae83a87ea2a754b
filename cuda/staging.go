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
	"sync"
	"unsafe"

	"gorgonia.org/cu"
)

// StagingBytes is the pinned host memory a backend stages transfers
// through: two halves, so one half's asynchronous copy runs while the
// other is filled or emptied.
const StagingBytes = 8 << 20

// staging is page-locked host memory for one stream's uploads and
// downloads (each stream has its own, made on its first transfer, so a
// transfer waits only for its own stream's copies). The DMA engine reads
// and writes it directly (a copy from pageable Go memory goes through the
// driver's own bounce buffer and blocks), and an upload returns once its
// last chunk is queued: the caller's slice is already copied, so it may
// change at once. Each half has an event recorded after its copy; the half
// is refilled only after that event. mu serialises the stream's transfers;
// the backend's mutex is taken only for each driver call, and waits poll
// (Backend.poll), so other streams keep launching meanwhile.
type staging struct {
	mu   sync.Mutex
	half [2]unsafe.Pointer
	ev   [2]cu.Event
	n    int64 // bytes per half
}

// openStaging allocates the pinned halves and their events on b's
// context. Call under b.mu.
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

// close frees the halves and events. Call under b.mu, after the stream's
// work.
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

// copyAsync queues one chunk's copy on b's stream (host→device when up)
// and records half h's event after it.
func (s *staging) copyAsync(b *Backend, h int, dev cu.DevicePtr, bytes int64, up bool) error {
	return b.call(func() error {
		if up {
			b.ctx.MemcpyHtoDAsync(dev, s.half[h], bytes, b.stream())
		} else {
			b.ctx.MemcpyDtoHAsync(s.half[h], dev, bytes, b.stream())
		}
		if err := b.ctx.Error(); err != nil {
			return err
		}
		b.ctx.Record(s.ev[h], b.stream())
		return b.ctx.Error()
	})
}

// upload queues host's bytes to dev in chunks through the halves; it
// returns with the copies queued on b's stream (ordered before any later
// kernel there).
func (s *staging) upload(b *Backend, dev cu.DevicePtr, host []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, off := 0, 0; off < len(host); i, off = i+1, off+int(s.n) {
		h, chunk := i%2, host[off:min(off+int(s.n), len(host))]
		if err := b.waitEvent(s.ev[h]); err != nil { // the half's previous copy has left it
			return err
		}
		copy(s.pinned(h), chunk)
		if err := s.copyAsync(b, h, dev+cu.DevicePtr(off), int64(len(chunk)), true); err != nil {
			return err
		}
	}
	return nil
}

// download copies dev's bytes into host through the halves: chunk i+1's
// copy is queued before chunk i is emptied. It returns when host is full.
func (s *staging) download(b *Backend, host []byte, dev cu.DevicePtr) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Half i%2 is free for chunk i: an upload's earlier copy out of it is
	// before this one on the stream (staging is per stream), and chunk i−2
	// has been emptied.
	queue := func(i int) error {
		off := i * int(s.n)
		return s.copyAsync(b, i%2, dev+cu.DevicePtr(off), int64(min(int(s.n), len(host)-off)), false)
	}
	chunks := (len(host) + int(s.n) - 1) / int(s.n)
	if chunks > 0 {
		if err := queue(0); err != nil {
			return err
		}
	}
	for i := 0; i < chunks; i++ {
		if i+1 < chunks {
			if err := queue(i + 1); err != nil {
				return err
			}
		}
		if err := b.waitEvent(s.ev[i%2]); err != nil {
			return err
		}
		off := i * int(s.n)
		copy(host[off:min(off+int(s.n), len(host))], s.pinned(i%2))
	}
	return nil
}
