package engine

import (
	"fmt"
	"math/bits"
	"sync"
	"time"
)

func errBatchLen(got, want int) error {
	return fmt.Errorf("engine: batch function returned %d outputs for %d inputs", got, want)
}

func errPanic(r any) error { return fmt.Errorf("engine: batch function panicked: %v", r) }

// SchedulerMetrics is a snapshot of a scheduler's counters.
type SchedulerMetrics struct {
	Batches   uint64
	Items     uint64
	Dropped   uint64        // cancelled before running
	Rejected  uint64        // refused by a full queue (FailFast)
	BatchHist []uint64      // BatchHist[i] counts batches of size in (2^(i-1), 2^i]
	WaitTotal time.Duration // summed queue wait of executed items
	WaitMax   time.Duration
	Busy      time.Duration // time spent inside the batch function
}

// MeanBatch is the mean executed batch size.
func (m SchedulerMetrics) MeanBatch() float64 {
	if m.Batches == 0 {
		return 0
	}
	return float64(m.Items) / float64(m.Batches)
}

// stats keeps every counter under one mutex.
type stats struct {
	mu sync.Mutex
	m  SchedulerMetrics
}

func (s *stats) init(maxBatch int) {
	s.m.BatchHist = make([]uint64, bits.Len(uint(maxBatch))+1)
}

func (s *stats) batch(n int, busy time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m.Batches++
	s.m.Items += uint64(n)
	s.m.Busy += busy
	s.m.BatchHist[min(bits.Len(uint(n-1)), len(s.m.BatchHist)-1)]++
}

func (s *stats) waited(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m.WaitTotal += d
	s.m.WaitMax = max(s.m.WaitMax, d)
}

func (s *stats) dropped(n int) {
	s.mu.Lock()
	s.m.Dropped += uint64(n)
	s.mu.Unlock()
}

func (s *stats) rejected(n int) {
	s.mu.Lock()
	s.m.Rejected += uint64(n)
	s.mu.Unlock()
}

// Metrics returns a snapshot of the counters.
func (s *Scheduler[In, Out]) Metrics() SchedulerMetrics {
	s.stats.mu.Lock()
	defer s.stats.mu.Unlock()
	m := s.stats.m
	m.BatchHist = append([]uint64(nil), m.BatchHist...)
	return m
}
