// Package retrieve holds gleaner's retrieval methods, composed from the
// operators below it, behind one Method interface and a registry by name.
// One file per method.
package retrieve

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/kernels"
	"github.com/gleaner-rag/gleaner/models"
)

// Query is one request. Vector, when set, replaces embedding Text (for
// indexes built on precomputed vectors).
type Query struct {
	ID     string
	Text   string
	Vector []float32
}

// Method ranks the index's nodes for a query. Implementations are safe for
// concurrent use.
type Method interface {
	Name() string
	// Retrieve returns up to k hits (node numbers and scores), best first.
	Retrieve(ctx context.Context, q Query, k int) ([]kernels.Hit, error)
}

// StreamingMethod emits a ranked list each time it improves (e.g. after
// every reranking round), so a caller can show results at once or stop
// early by returning false from emit. The last list emitted is the result.
type StreamingMethod interface {
	Method
	RetrieveStream(ctx context.Context, q Query, k int, emit func([]kernels.Hit) bool) error
}

// BatchMethod is implemented by methods that run many queries faster
// together than one by one.
type BatchMethod interface {
	Method
	RetrieveBatch(ctx context.Context, qs []Query, k int) ([][]kernels.Hit, error)
}

// Closer is implemented by methods that hold resources (a scheduler);
// callers close methods when done with them.
type Closer interface {
	Close(ctx context.Context) error
}

// CloseAll closes every method that implements Closer.
func CloseAll(ctx context.Context, ms ...Method) error {
	var errs []error
	for _, m := range ms {
		if c, ok := m.(Closer); ok {
			errs = append(errs, c.Close(ctx))
		}
	}
	return errors.Join(errs...)
}

// ErrNoGraph is returned when a method needs edges the index lacks: add
// them with index.SetGraph (graphops builds mentions and knn graphs).
var ErrNoGraph = errors.New("no such edges in the index")

// requireGraph refuses a graph method over an index without edges of the
// chosen kinds: it would silently return its first stage's ranking.
func requireGraph(ix *index.Index, o Options, method string) error {
	if v := ix.View(o.GraphKinds...); v.Ptr[v.N()] == 0 {
		kinds := "any kind"
		if len(o.GraphKinds) > 0 {
			kinds = fmt.Sprintf("the kinds %v", o.GraphKinds)
		}
		return fmt.Errorf("retrieve: %s walks the graph, and the index has no edges of %s: %w", method, kinds, ErrNoGraph)
	}
	return nil
}

// ErrEmptyQuery is returned for a query with no text and no vector.
var ErrEmptyQuery = errors.New("retrieve: empty query")

// Factory makes a method over an opened index.
type Factory func(ix *index.Index, o Options) (Method, error)

var (
	regMu    sync.RWMutex
	registry = map[string]Factory{}
)

// Register adds a method factory under name; registering a name twice is an
// error.
func Register(name string, f Factory) error {
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := registry[name]; dup {
		return fmt.Errorf("retrieve: method %q registered twice", name)
	}
	registry[name] = f
	return nil
}

func mustRegister(name string, f Factory) {
	if err := Register(name, f); err != nil {
		panic(err) // programming error at init time
	}
}

// Names lists the registered methods, sorted.
func Names() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// New makes the method called name over ix with DefaultOptions.
func New(name string, ix *index.Index) (Method, error) { return NewWith(name, ix, DefaultOptions()) }

// NewWith makes the method called name over ix with o. Unknown graph kinds
// are an error.
func NewWith(name string, ix *index.Index, o Options) (Method, error) {
	for _, k := range o.GraphKinds {
		if !slices.Contains(ix.Meta.GraphKinds, k) {
			hint := ""
			for _, have := range ix.Meta.GraphKinds {
				if strings.HasPrefix(have, k) || strings.HasPrefix(k, have) {
					hint = fmt.Sprintf("; did you mean %q?", have)
				}
			}
			return nil, fmt.Errorf("retrieve: the index has no %q edges (it has %v%s): %w", k, ix.Meta.GraphKinds, hint, ErrNoGraph)
		}
	}
	regMu.RLock()
	f, ok := registry[name]
	regMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("retrieve: unknown method %q (have: %s)", name, strings.Join(Names(), ", "))
	}
	return f(ix, o)
}

// SchedulerMetrics returns the engine scheduler's metrics of a reranking
// method (batches, items, queue wait); false for methods without one or
// before its first query.
func SchedulerMetrics(m Method) (engine.SchedulerMetrics, bool) {
	var r *reranker
	switch x := m.(type) {
	case *fastInsight:
		r = &x.reranker
	case *gar:
		r = &x.reranker
	case *re2:
		r = &x.reranker
	}
	if r == nil || r.svc == nil {
		return engine.SchedulerMetrics{}, false
	}
	return r.svc.Metrics(), true
}

// EncodedPairs is the number of (query, node) pairs a reranking method's
// encoder has computed so far (0 for other methods): the "encoder calls"
// FastInsight's paper counts.
func EncodedPairs(m Method) int {
	var svc *models.LatentService
	switch x := m.(type) {
	case *fastInsight:
		svc = x.svc
	case *gar:
		svc = x.svc
	case *re2:
		svc = x.svc
	}
	if svc == nil {
		return 0
	}
	return int(svc.Metrics().Items)
}
