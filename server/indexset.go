package server

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/retrieve"
)

// indexSet is one generation of opened indexes. Requests hold a reference;
// a retired set is closed when the last one is released.
type indexSet struct {
	entries map[string]*entry
	mu      sync.Mutex
	refs    int
	retired bool
	done    chan struct{}
	// onClose tells the server the set is closed (Server.track).
	onClose func()
}

// entry is one served index and the methods made over it, one per option
// set (retrieve.Config.Key). At most limit option sets per method are kept:
// making another drops the least recently used, which is closed when the
// last request using it ends. Methods are made outside the lock, once per
// option set; requests for a set being made wait for it.
type entry struct {
	ix    *index.Index
	env   retrieve.Env
	limit int
	// owned: closing the entry closes ix (a live writer's indexes are
	// the writer's).
	owned bool
	// sets counts the sets holding the entry (a publish carries the
	// other indexes' entries into the new set): the last to close it
	// closes the entry.
	sets atomic.Int32
	// damaged is set by a scrub that found a file changed under the
	// index: it is not served until a reload.
	damaged atomic.Pointer[error]

	mu      sync.Mutex
	methods map[string]*held
	clock   uint64                  // orders uses, for eviction
	retired engine.SchedulerMetrics // the counters of methods closed by eviction
}

// held is one option set's method.
type held struct {
	name    string
	ready   chan struct{} // closed once m or err is set
	m       retrieve.Method
	err     error
	refs    int    // requests using it
	used    uint64 // the clock at its last use
	evicted bool   // dropped from the map: closed when refs reaches 0
}

// openSet opens every index (a live writer's current one under Writes).
func (s *Server) openSet() (*indexSet, error) {
	cfg := s.cfg
	set := &indexSet{entries: map[string]*entry{}, done: make(chan struct{})}
	for name, dir := range cfg.Indexes {
		ix, owned := (*index.Index)(nil), true
		var err error
		if w, ok := s.writers[name]; ok {
			ix, owned = w.Index(), false
		} else if ix, err = index.Open(dir, store.OpenOptions{Copy: cfg.IndexMemory == MemoryCopy}); err != nil {
			set.close()
			return nil, fmt.Errorf("server: index %q: %w", name, err)
		}
		err = checkGraphKinds(cfg.Settings, ix)
		if err == nil {
			err = checkProfile(cfg, ix)
		}
		if err != nil {
			if owned {
				ix.Close()
			}
			set.close()
			return nil, fmt.Errorf("server: index %q: %w", name, err)
		}
		set.entries[name] = s.newEntry(ix, owned)
	}
	return set, nil
}

// newEntry serves ix, held by one set.
func (s *Server) newEntry(ix *index.Index, owned bool) *entry {
	e := &entry{ix: ix, env: retrieve.Env{Backend: s.cfg.Backend, Logger: s.cfg.Logger},
		methods: map[string]*held{}, limit: s.cfg.MaxOptionSets, owned: owned}
	e.sets.Store(1)
	return e
}

// with is a new set holding s's entries but name's, which is e.
func (s *indexSet) with(name string, e *entry) *indexSet {
	set := &indexSet{entries: make(map[string]*entry, len(s.entries)), done: make(chan struct{})}
	for n, old := range s.entries {
		if n != name {
			old.sets.Add(1)
			set.entries[n] = old
		}
	}
	set.entries[name] = e
	return set
}

// checkGraphKinds refuses operator settings that name edge kinds an index
// lacks: every graph request to it would fail.
func checkGraphKinds(settings retrieve.Overrides, ix *index.Index) error {
	text, ok := settings.Get("graph-kind")
	if !ok {
		return nil
	}
	for _, k := range strings.Split(text, ",") {
		if k = strings.TrimSpace(k); k != "" && !slices.Contains(ix.Meta.GraphKinds, k) {
			return fmt.Errorf("setting graph-kind %q: the index has no edges of that kind (it has %v)", k, ix.Meta.GraphKinds)
		}
	}
	return nil
}

// checkProfile makes the profile's method over ix once, so a profile an
// index cannot run (a section or edge kind it lacks) stops the server at
// start rather than failing every request that names no method.
func checkProfile(cfg Config, ix *index.Index) error {
	if cfg.Profile == nil {
		return nil
	}
	mc, err := cfg.methodConfig(cfg.Profile.Method)
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	m, err := retrieve.New(ix, retrieve.Env{Backend: cfg.Backend, Logger: cfg.Logger}, mc)
	if err != nil {
		return fmt.Errorf("profile: method %s cannot run on it: %w", cfg.Profile.Method, err)
	}
	return retrieve.CloseAll(context.Background(), m)
}

func (s *indexSet) ref() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.retired {
		return false
	}
	s.refs++
	return true
}

func (s *indexSet) unref() {
	s.mu.Lock()
	s.refs--
	last := s.retired && s.refs == 0
	s.mu.Unlock()
	if last {
		s.close()
		close(s.done)
	}
}

// retire stops new references and closes the set after the last one.
func (s *indexSet) retire(ctx context.Context) error {
	s.mu.Lock()
	s.retired = true
	idle := s.refs == 0
	s.mu.Unlock()
	if idle {
		s.close()
		close(s.done)
		return nil
	}
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *indexSet) close() {
	for _, e := range s.entries {
		if e.sets.Add(-1) == 0 {
			e.close()
		}
	}
	if s.onClose != nil {
		s.onClose()
	}
}

// close closes the entry's methods, and its index when it owns it.
func (e *entry) close() {
	e.mu.Lock()
	var ms []retrieve.Method
	for _, h := range e.methods {
		if h.m != nil {
			ms = append(ms, h.m)
		}
	}
	e.methods = map[string]*held{}
	e.mu.Unlock()
	retrieve.CloseAll(context.Background(), ms...)
	if e.owned {
		e.ix.Close()
	}
}

// method returns the method cfg configures, made once per option set, and
// the function that releases it when the request is done with it.
func (e *entry) method(ctx context.Context, cfg *retrieve.Config) (retrieve.Method, func(), error) {
	k := cfg.Key()
	e.mu.Lock()
	e.clock++
	h, ok := e.methods[k]
	if !ok {
		h = &held{name: cfg.Name(), ready: make(chan struct{})}
		e.methods[k] = h
	}
	h.refs++
	h.used = e.clock
	e.mu.Unlock()
	if !ok {
		e.make(k, h, cfg)
	}
	select {
	case <-h.ready:
	case <-ctx.Done():
		e.release(h)
		return nil, nil, ctx.Err()
	}
	if h.err != nil {
		e.release(h)
		return nil, nil, h.err
	}
	return h.m, func() { e.release(h) }, nil
}

// make builds h's method (outside the lock: a model may load) and keeps
// it, evicting the least recently used option sets beyond the limit; a
// failure is not kept, so a later request tries again.
func (e *entry) make(k string, h *held, cfg *retrieve.Config) {
	m, err := newMethod(e.ix, e.env, cfg)
	e.mu.Lock()
	h.m, h.err = m, err
	close(h.ready)
	var drop []retrieve.Method
	if err != nil {
		delete(e.methods, k)
	} else {
		drop = e.evict(h.name)
	}
	e.mu.Unlock()
	e.closeMethods(drop)
}

// newMethod is retrieve.New with a panic turned into an error, so a
// method's bug cannot leave its option set waiting forever (requests for it
// would block until their deadline, and every later one too).
func newMethod(ix *index.Index, env retrieve.Env, cfg *retrieve.Config) (m retrieve.Method, err error) {
	defer func() {
		if r := recover(); r != nil {
			m, err = nil, fmt.Errorf("server: making method %s panicked: %v", cfg.Name(), r)
		}
	}()
	return retrieve.New(ix, env, cfg)
}

// evict drops method name's least recently used option sets beyond the
// limit and returns those no request uses, to be closed (the others close
// on release). e.mu is held.
func (e *entry) evict(name string) []retrieve.Method {
	var drop []retrieve.Method
	for {
		var oldest string
		n := 0
		for k, h := range e.methods {
			if h.name != name || h.m == nil {
				continue
			}
			n++
			if oldest == "" || h.used < e.methods[oldest].used {
				oldest = k
			}
		}
		if n <= e.limit {
			return drop
		}
		h := e.methods[oldest]
		delete(e.methods, oldest)
		h.evicted = true
		if h.refs == 0 {
			drop = append(drop, h.m)
		}
	}
}

// release ends one request's use of h, closing h if it was evicted and
// this was its last use.
func (e *entry) release(h *held) {
	e.mu.Lock()
	h.refs--
	last := h.evicted && h.refs == 0 && h.m != nil
	e.mu.Unlock()
	if last {
		e.closeMethods([]retrieve.Method{h.m})
	}
}

// closeMethods closes evicted methods, keeping their scheduler counters so
// that /metrics's totals do not go back.
func (e *entry) closeMethods(ms []retrieve.Method) {
	for _, m := range ms {
		if sr, ok := m.(retrieve.SchedulerReporter); ok {
			if sm, started := sr.SchedulerMetrics(); started {
				e.mu.Lock()
				addScheduler(&e.retired, sm)
				e.mu.Unlock()
			}
		}
		retrieve.CloseAll(context.Background(), m)
	}
}

// schedulers sums the scheduler counters of the methods e holds and of
// those it closed.
func (e *entry) schedulers() (engine.SchedulerMetrics, int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	sum, n := e.retired, 0
	for _, h := range e.methods {
		if h.m == nil {
			continue
		}
		n++
		if sr, ok := h.m.(retrieve.SchedulerReporter); ok {
			if sm, started := sr.SchedulerMetrics(); started {
				addScheduler(&sum, sm)
			}
		}
	}
	return sum, n
}

// addScheduler adds b's counters to a.
func addScheduler(a *engine.SchedulerMetrics, b engine.SchedulerMetrics) {
	a.Batches += b.Batches
	a.Items += b.Items
	a.WaitTotal += b.WaitTotal
	a.Dropped += b.Dropped
	a.Rejected += b.Rejected
}
