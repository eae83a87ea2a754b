package models

import (
	"context"
	"fmt"
	"sync"

	"github.com/gleaner-rag/gleaner/engine"
)

// LatentService computes latents for many concurrent queries through one
// engine.Scheduler, so pairs from different retrieval loops share batches.
// It is safe for concurrent use; Close it when done.
type LatentService struct {
	enc   PairEncoder
	sched *engine.Scheduler[pairItem, []float32]
}

type pairItem struct {
	q    Prepared
	node int32
}

// NewLatentService starts the scheduler that batches enc's pairs.
func NewLatentService(enc PairEncoder, opt engine.SchedulerOptions) (*LatentService, error) {
	s := &LatentService{enc: enc}
	sched, err := engine.NewScheduler(s.runBatch, opt)
	if err != nil {
		return nil, err
	}
	s.sched = sched
	return s, nil
}

// runBatch encodes a batch, one Encode call per run of items that share a
// query.
func (s *LatentService) runBatch(ctx context.Context, items []pairItem) ([][]float32, error) {
	d := s.enc.Dim()
	out := make([][]float32, len(items))
	for lo := 0; lo < len(items); {
		hi := lo + 1
		for hi < len(items) && items[hi].q == items[lo].q {
			hi++
		}
		nodes := make([]int32, hi-lo)
		for i := range nodes {
			nodes[i] = items[lo+i].node
		}
		buf := make([]float32, len(nodes)*d)
		if err := s.enc.Encode(ctx, items[lo].q, nodes, buf); err != nil {
			return nil, err
		}
		for i := range nodes {
			out[lo+i] = buf[i*d : (i+1)*d]
		}
		lo = hi
	}
	return out, nil
}

// Close stops the scheduler after finishing queued work (or failing it
// when ctx ends).
func (s *LatentService) Close(ctx context.Context) error { return s.sched.Close(ctx) }

// Metrics reports the scheduler's counters.
func (s *LatentService) Metrics() engine.SchedulerMetrics { return s.sched.Metrics() }

// Session is one query's view of the service, with a cache so a (query,
// node) latent is computed once however often a method re-ranks. A session
// is safe for concurrent use.
type Session struct {
	svc     *LatentService
	q       Prepared
	noCache bool
	mu      sync.Mutex
	cache   map[int32][]float32
	encoded int
}

// Session prepares query once; with noCache every Latents call recomputes
// (for ablations).
func (s *LatentService) Session(ctx context.Context, query string, noCache bool) (*Session, error) {
	q, err := s.enc.Prepare(ctx, query)
	if err != nil {
		return nil, err
	}
	return &Session{svc: s, q: q, noCache: noCache, cache: map[int32][]float32{}}, nil
}

// SessionWithin is Session for a query restricted to sub (nil: every
// node): an encoder whose latents depend on corpus statistics prepares
// the query over the subset alone (SubsetPreparer).
func (s *LatentService) SessionWithin(ctx context.Context, query string, noCache bool, sub NodeSubset) (*Session, error) {
	sp, ok := s.enc.(SubsetPreparer)
	if sub == nil || !ok {
		return s.Session(ctx, query, noCache)
	}
	q, err := sp.PrepareWithin(ctx, query, sub)
	if err != nil {
		return nil, err
	}
	return &Session{svc: s, q: q, noCache: noCache, cache: map[int32][]float32{}}, nil
}

// Encoded is the number of pairs the encoder has computed for this query.
func (se *Session) Encoded() int {
	se.mu.Lock()
	defer se.mu.Unlock()
	return se.encoded
}

// Latents returns the latents of nodes (len(nodes) × Dim), computing only
// those not cached.
func (se *Session) Latents(ctx context.Context, nodes []int32) ([]float32, error) {
	var missing []pairItem
	se.mu.Lock()
	queued := map[int32]bool{}
	for _, n := range nodes {
		if _, ok := se.cache[n]; (!ok || se.noCache) && !queued[n] {
			queued[n] = true
			missing = append(missing, pairItem{q: se.q, node: n})
		}
	}
	se.mu.Unlock()
	if len(missing) > 0 {
		vals, err := se.svc.sched.Do(ctx, missing)
		if err != nil {
			return nil, fmt.Errorf("models: latents: %w", err)
		}
		se.mu.Lock()
		for i, it := range missing {
			se.cache[it.node] = vals[i]
		}
		se.encoded += len(missing)
		se.mu.Unlock()
	}
	d := se.svc.enc.Dim()
	out := make([]float32, len(nodes)*d)
	se.mu.Lock()
	defer se.mu.Unlock()
	for i, n := range nodes {
		copy(out[i*d:(i+1)*d], se.cache[n])
	}
	return out, nil
}
