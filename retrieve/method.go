// Package retrieve holds what gleaner's retrieval methods share: the
// Method interfaces, the registry every method, build step and report
// joins (Register, with settings bound by Params), the first stages (bm25,
// vector, hybrid, which are methods too), dense search on the engine, the
// cross-encoder reranker and LLM contexts. The methods themselves live in
// methods/<name>, one folder each.
package retrieve

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/retrieve/filter"
)

// Hit is one ranked node: Index is its number in the index.
type Hit = engine.Hit

// Query is one request. Vector, when set, replaces embedding Text (for
// indexes built on precomputed vectors).
//
// Allow, when set, is the nodes the query may see (filter.Eval of a
// metadata filter, an ACL): a method that honours filters (Info.Filters)
// ranks, scores, walks and quotes no other node, and its results equal
// those of the index with the other nodes deleted; a method that does not
// refuses the query with ErrFilterUnsupported. nil is every node.
type Query struct {
	ID     string
	Text   string
	Vector []float32
	Allow  *filter.Set
}

// ErrFilterUnsupported is returned by a method that cannot honour
// Query.Allow yet; it never answers such a query unfiltered.
var ErrFilterUnsupported = fmt.Errorf("retrieve: the method does not support filters yet (GET /v1/methods and gleaner query --help say which do): %w", ErrInvalid)

// RefuseFilter is the first check of a method that does not honour
// filters: ErrFilterUnsupported, naming it, for a query with Allow set.
func RefuseFilter(q Query, method string) error {
	if q.Allow != nil {
		return fmt.Errorf("%s: %w", method, ErrFilterUnsupported)
	}
	return nil
}

// CheckAllow checks that q.Allow (if set) is a set over ix's nodes.
func CheckAllow(ix *index.Index, q Query) error {
	if q.Allow != nil && q.Allow.N() != ix.N() {
		return fmt.Errorf("retrieve: the query's filter set is over %d nodes, the index has %d: %w", q.Allow.N(), ix.N(), ErrInvalid)
	}
	return nil
}

// Method ranks the index's nodes for a query. Implementations are safe for
// concurrent use.
type Method interface {
	Name() string
	// Retrieve returns up to k hits (node numbers and scores), best first.
	Retrieve(ctx context.Context, q Query, k int) ([]Hit, error)
}

// StreamingMethod emits a ranked list each time it improves (e.g. after
// every reranking round), so a caller can show results at once or stop
// early by returning false from emit. The last list emitted is the result.
type StreamingMethod interface {
	Method
	RetrieveStream(ctx context.Context, q Query, k int, emit func([]Hit) bool) error
}

// BatchMethod is implemented by methods that run many queries faster
// together than one by one.
type BatchMethod interface {
	Method
	RetrieveBatch(ctx context.Context, qs []Query, k int) ([][]Hit, error)
}

// Closer is implemented by methods that hold resources (a scheduler);
// callers close methods when done with them.
type Closer interface {
	Close(ctx context.Context) error
}

// SchedulerReporter is implemented by methods whose engine work goes
// through a scheduler: its metrics (batches, items, queue wait), false
// before the first query started it.
type SchedulerReporter interface {
	SchedulerMetrics() (engine.SchedulerMetrics, bool)
}

// PairCounter is implemented by reranking methods: the (query, node) pairs
// their encoder has computed so far (the "encoder calls" FastInsight's
// paper counts).
type PairCounter interface {
	EncodedPairs() int
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

// ErrEmptyQuery is returned for a query with no text and no vector.
var ErrEmptyQuery = fmt.Errorf("retrieve: empty query: %w", ErrInvalid)

// ErrNoBackend is returned by methods that run engine ops without one.
var ErrNoBackend = errors.New("retrieve: Env.Backend is nil (open one with engine.Open, after importing kernels/cpu)")

// ErrNoGraph is returned when a method needs edges the index lacks.
var ErrNoGraph = &index.MissingError{What: "edges of the kinds a graph method walks",
	Hint: "build the edges with `gleaner graph build --kind mentions|knn --index <dir>` (index.SetGraph), or pick another --graph-kind"}

// GraphKinds binds the graph-kind setting: the edge kinds a graph method
// walks (empty: every kind in the index).
func GraphKinds(p *Params, kinds *[]string) {
	p.Strings(kinds, "graph-kind", "comma-separated edge kinds the method walks (default: all)")
}

// RequireGraph checks that ix has edges of every kind in kinds (none: any
// kind), so a graph method does not silently return its first stage's
// ranking; method names the caller in errors.
func RequireGraph(ix *index.Index, kinds []string, method string) error {
	for _, k := range kinds {
		if !slices.Contains(ix.Meta.GraphKinds, k) {
			hint := ""
			for _, have := range ix.Meta.GraphKinds {
				if strings.HasPrefix(have, k) || strings.HasPrefix(k, have) {
					hint = fmt.Sprintf("; did you mean %q?", have)
				}
			}
			return fmt.Errorf("retrieve: %s: the index has no %q edges (it has %v%s): %w", method, k, ix.Meta.GraphKinds, hint, ErrNoGraph)
		}
	}
	if err := requireFresh(ix, kinds, method); err != nil {
		return err
	}
	if v := ix.View(kinds...); v.Ptr[v.N()] == 0 {
		what := "any kind"
		if len(kinds) > 0 {
			what = fmt.Sprintf("the kinds %v", kinds)
		}
		return fmt.Errorf("retrieve: %s walks the graph, and the index has no edges of %s: %w", method, what, ErrNoGraph)
	}
	return nil
}

// requireFresh refuses edge kinds that changed nodes left stale (walking
// them would silently miss the new nodes' edges): the kinds named, or
// every kind of the index when none is.
func requireFresh(ix *index.Index, kinds []string, method string) error {
	if len(kinds) == 0 {
		kinds = ix.Meta.GraphKinds
	}
	for _, k := range kinds {
		if ix.Meta.StaleKind(k) {
			hint := fmt.Sprintf("gleaner graph build --kind %s --index <dir>", k)
			if slices.Contains(ix.Refreshable(), index.KindLabel(k)) {
				hint = "gleaner refresh --index <dir> builds them again with their settings, as a server with --writes does when the writes pause; or " + hint
			}
			err := &index.StaleError{What: k + " edges", Hint: hint, Changes: ix.Meta.Stale.Changes}
			return fmt.Errorf("retrieve: %s: %w (or walk other kinds with --graph-kind)", method, err)
		}
	}
	return nil
}
