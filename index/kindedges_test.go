package index

import (
	"context"
	"reflect"
	"testing"

	"github.com/gleaner-rag/gleaner/graphops"
)

type namedKind string

func (k namedKind) Kind() string { return string(k) }
func (namedKind) Update(context.Context, *Index, *Index, *Change) ([]graphops.Edge, error) {
	return nil, nil
}

// TestWithKindEdges: the updaters' edges follow the change's own, each
// with its kind's relation; a lone list with nothing before it is taken
// as it is, its relations set in place.
func TestWithKindEdges(t *testing.T) {
	out := &Index{}
	out.rels.id("links", "cites") // relation 0: the change's own
	own := []graphops.Edge{{Src: 0, Dst: 1, W: 2, Rel: 0}}
	updated := map[string][]graphops.Edge{
		"mentions": {{Src: 1, Dst: 2, W: 1}, {Src: 3, Dst: 2, W: 1}},
		"other":    {{Src: 2, Dst: 0, W: 1}},
	}
	got := out.withKindEdges(own, []KindUpdater{namedKind("mentions"), namedKind("other")}, updated)
	want := []graphops.Edge{{Src: 0, Dst: 1, W: 2, Rel: 0}, {Src: 1, Dst: 2, W: 1, Rel: 1}, {Src: 3, Dst: 2, W: 1, Rel: 1}, {Src: 2, Dst: 0, W: 1, Rel: 2}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("two kinds after the change's edges:\n got %v\nwant %v", got, want)
	}
	lone := []graphops.Edge{{Src: 4, Dst: 5, W: 1}}
	got = out.withKindEdges(nil, []KindUpdater{namedKind("mentions")}, map[string][]graphops.Edge{"mentions": lone})
	if len(got) != 1 || &got[0] != &lone[0] || got[0].Rel != 1 {
		t.Fatalf("a lone list: got %v (shared %v), want the list itself with relation 1", got, len(got) == 1 && &got[0] == &lone[0])
	}
	if got := out.withKindEdges(nil, nil, nil); len(got) != 0 {
		t.Fatalf("no edges at all: got %v", got)
	}
}
