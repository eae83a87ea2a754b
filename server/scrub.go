package server

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Scrub rechecks every served index's files against their checksums
// (index.Index.Scrub). An index whose files changed under it is marked
// damaged: its requests get 503 and /readyz fails until a reload opens it
// afresh. It returns what it found.
func (s *Server) Scrub(ctx context.Context) error {
	set, release := s.acquire()
	if set == nil {
		return nil
	}
	defer release()
	var errs []error
	for name, e := range set.entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := e.ix.Scrub()
		if err == nil {
			continue
		}
		err = fmt.Errorf("index %q: %w", name, err)
		if e.damaged.CompareAndSwap(nil, &err) {
			s.cfg.Logger.Error("index changed on disk; not serving it until a reload", "index", name, "err", err)
			s.metrics.damaged.WithLabelValues(name).Set(1)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// scrubEvery runs Scrub every interval until stop is closed.
func (s *Server) scrubEvery(interval time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			s.Scrub(context.Background())
		}
	}
}

// damagedIndex is the first damaged index's error, for /readyz.
func (s *Server) damagedIndex() error {
	set, release := s.acquire()
	if set == nil {
		return nil
	}
	defer release()
	for _, e := range set.entries {
		if d := e.damaged.Load(); d != nil {
			return *d
		}
	}
	return nil
}
