package filter_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/index/indextest"
	"github.com/gleaner-rag/gleaner/retrieve/filter"
)

// metaIndex is five nodes with assorted metadata.
func metaIndex(t *testing.T) *index.Index {
	t.Helper()
	c := &corpus.Corpus{Nodes: []corpus.Node{
		{ID: "a", Text: "alpha one", Meta: map[string]any{"team": "red", "year": 2019, "tags": []any{"x", "y"}}},
		{ID: "b", Text: "beta two", Meta: map[string]any{"team": "blue", "year": 2021, "draft": true}},
		{ID: "c", Text: "gamma three", Meta: map[string]any{"team": "red", "year": 2023, "tags": []any{"y"}, "date": "2024-05-01"}},
		{ID: "d", Text: "delta four", Doc: "doc1"},
		{ID: "e", Text: "epsilon five", Doc: "doc1", Meta: map[string]any{"year": "2020", "date": "2023-01-31"}},
		{ID: "f", Text: "zeta six", Meta: map[string]any{"team": []any{}}},
		{ID: "g", Text: "eta seven", Meta: map[string]any{"team": nil}},
	}}
	dir := filepath.Join(t.TempDir(), "ix")
	if err := index.Build(context.Background(), c, dir, index.WithoutHead()); err != nil {
		t.Fatal(err)
	}
	return indextest.Open(t, dir)
}

func ids(ix *index.Index, s *filter.Set) []string {
	var out []string
	for i := range ix.N() {
		if s.Has(i) {
			out = append(out, ix.NodeID(i))
		}
	}
	return out
}

func TestEval(t *testing.T) {
	ix := metaIndex(t)
	cases := map[string]string{
		`{"field":"team","eq":"red"}`:                                      "a c",
		`{"field":"tags","eq":"y"}`:                                        "a c",
		`{"field":"tags","in":["x","z"]}`:                                  "a",
		`{"field":"year","gte":2020,"lt":2023}`:                            "b", // "2020" is text, not a number
		`{"field":"year","gt":2019}`:                                       "b c",
		`{"field":"date","lte":"2023-12-31"}`:                              "e",
		`{"field":"draft","eq":true}`:                                      "b",
		`{"field":"draft","eq":"true"}`:                                    "",
		`{"field":"team","exists":false}`:                                  "d e",
		`{"field":"team","exists":true}`:                                   "a b c f g", // [] and null are present
		`{"not":{"field":"team","eq":"red"}}`:                              "b d e f g",
		`{"field":"document","eq":"doc1"}`:                                 "d e",
		`{"or":[{"field":"team","eq":"blue"},{"field":"tags","eq":"x"}]}`:  "a b",
		`{"and":[{"field":"team","eq":"red"},{"field":"year","lt":2020}]}`: "a",
		`{"field":"nothing","eq":1}`:                                       "",
	}
	for src, want := range cases {
		f, err := filter.Parse([]byte(src))
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		s, err := filter.Eval(ix, f)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(ids(ix, s), " "); got != want {
			t.Errorf("%s: %q, want %q", src, got, want)
		}
		if s.Len() != len(strings.Fields(want)) {
			t.Errorf("%s: Len %d", src, s.Len())
		}
	}
	if s, err := filter.Eval(ix, nil); s != nil || err != nil || !s.Has(3) {
		t.Errorf("nil filter: %v %v", s, err)
	}
}

func TestACL(t *testing.T) {
	ix := metaIndex(t)
	// "team" as the ACL field: a and c are red's, b blue's, d and e public;
	// f and g have the field but no group (`team: []`, `team:`), so nobody's.
	for groups, want := range map[string]string{"": "d e", "red": "a c d e", "red blue": "a b c d e", "green": "d e"} {
		s, err := filter.Eval(ix, filter.ACL("team", strings.Fields(groups)))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(ids(ix, s), " "); got != want {
			t.Errorf("groups %q: %q, want %q", groups, got, want)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for src, want := range map[string]string{
		`{}`:                                 "exactly one of field",
		`{"field":"a","eq":1,"in":[1]}`:      "exactly one of eq",
		`{"field":"a","gt":1,"gte":2}`:       "gt with gte",
		`{"field":"a","eq":{"x":1}}`:         "want text",
		`{"field":"a","in":[[1]]}`:           "want text",
		`{"field":"a","eq":1,"and":[]}`:      "exactly one of field",
		`{"or":[{"field":"a","eq":1},null]}`: "or[1]: null",
		`{"field":"a","eq":1} x`:             "",
		`{"field":"","eq":1}`:                "field",
		`[1]`:                                "",
		`{"and":[{"not":{"field":"a"}}]}`:    "and[0].not",
	} {
		_, err := filter.Parse([]byte(src))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error with %q", src, err, want)
		}
	}
	many := `{"or":[` + strings.TrimSuffix(strings.Repeat(`{"field":"a","eq":1},`, 300), ",") + `]}`
	if _, err := filter.Parse([]byte(many)); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("300 operators: %v", err)
	}
	if _, err := filter.Parse([]byte(strings.Repeat(" ", filter.MaxBytes+1))); err == nil {
		t.Error("an oversize filter parsed")
	}
}

func TestSetOps(t *testing.T) {
	a := filter.NewSet(130, 0, 64, 129)
	if a.Len() != 3 || !a.Has(129) || a.Has(128) || a.Has(-1) || a.Has(130) {
		t.Fatalf("set %v", a)
	}
	all := filter.All(130)
	if all.Len() != 130 || filter.Intersect(all, a).Len() != 3 || filter.Intersect(nil, a) != a {
		t.Error("intersections")
	}
	if !slices.Equal([]bool{a.Keep()(64), a.Keep()(63)}, []bool{true, false}) {
		t.Error("Keep")
	}
}
