package server

import (
	"context"
	"fmt"
	"sync"

	"github.com/gleaner-rag/gleaner/corpus/store"
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
}

type entry struct {
	ix      *index.Index
	env     retrieve.Env
	mu      sync.Mutex
	methods map[string]retrieve.Method // by configuration (retrieve.Config.Key)
	counts  map[string]int             // option sets kept per method name
	limit   int
}

func openSet(cfg Config) (*indexSet, error) {
	set := &indexSet{entries: map[string]*entry{}, done: make(chan struct{})}
	for name, dir := range cfg.Indexes {
		ix, err := index.Open(dir, store.OpenOptions{})
		if err != nil {
			set.close()
			return nil, fmt.Errorf("server: index %q: %w", name, err)
		}
		set.entries[name] = &entry{ix: ix, env: retrieve.Env{Backend: cfg.Backend, Logger: cfg.Logger},
			methods: map[string]retrieve.Method{}, counts: map[string]int{}, limit: cfg.MaxOptionSets}
	}
	return set, nil
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
		e.mu.Lock()
		for _, m := range e.methods {
			retrieve.CloseAll(context.Background(), m)
		}
		e.mu.Unlock()
		e.ix.Close()
	}
}

// method returns the method cfg configures, made once per configuration.
func (e *entry) method(cfg *retrieve.Config) (retrieve.Method, error) {
	k := cfg.Key()
	e.mu.Lock()
	defer e.mu.Unlock()
	if m, ok := e.methods[k]; ok {
		return m, nil
	}
	if e.counts[cfg.Name()] >= e.limit {
		return nil, &FieldError{Field: "options", Msg: fmt.Sprintf("the server keeps at most %d option sets per method; use the defaults or fewer variants", e.limit)}
	}
	m, err := retrieve.New(e.ix, e.env, cfg)
	if err != nil {
		return nil, err
	}
	e.methods[k] = m
	e.counts[cfg.Name()]++
	return m, nil
}
