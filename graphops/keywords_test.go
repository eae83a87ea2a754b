package graphops

import (
	"context"
	"slices"
	"strings"
	"testing"
)

func TestBuildKeywordGraph(t *testing.T) {
	chunks := []string{"Ann met Bob. Bob met Bob", "Cy met Ann"}
	stop := map[string]bool{"met": true}
	g, err := BuildKeywordGraph(context.Background(), chunks, KeywordText{
		Sentences: func(s string) ([]string, error) { return strings.Split(s, ". "), nil },
		Words:     strings.Fields,
		Keep:      func(w string) bool { return !stop[w] },
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(g.Keywords, []string{"Ann", "Bob", "Cy"}) || !slices.Equal(g.Parts, []string{"Ann met Bob", "Bob met Bob", "Cy met Ann"}) {
		t.Fatalf("keywords %q parts %q", g.Keywords, g.Parts)
	}
	if got := g.Mentions.Neighbors(1); !slices.Equal(got, []int32{0, 1, 1}) {
		t.Fatalf("Bob's mentions %v: each occurrence counts", got)
	}
	if got := g.Chunks.Neighbors(0); !slices.Equal(got, []int32{0, 1}) {
		t.Fatalf("Ann's chunks %v", got)
	}
	if got := g.Chunks.Neighbors(1); !slices.Equal(got, []int32{0}) {
		t.Fatalf("Bob's chunks %v", got)
	}
	vecs := []float32{1, 0, 0, 1, 3, 3} // parts' 2-d vectors
	m := MeanRows(g.Mentions, vecs, 2)
	if want := []float32{2, 1.5, 1.0 / 3, 2.0 / 3, 3, 3}; !slices.Equal(m, want) {
		t.Fatalf("means %v, want %v", m, want)
	}
}
