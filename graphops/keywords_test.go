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
		Workers:   1,
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

// TestBuildKeywordGraphWorkers: the graph read on several goroutines, over
// several blocks, is the one read on one; no worker is an error.
func TestBuildKeywordGraphWorkers(t *testing.T) {
	words := []string{"ann", "bob", "cy", "dee", "eve", "met", "saw"}
	chunks := make([]string, 2*keywordBlock+77)
	for i := range chunks {
		var b strings.Builder
		for j := range 3 + i%11 {
			b.WriteString(words[(i*7+j*j)%len(words)])
			if j%4 == 3 {
				b.WriteString(". ")
			} else {
				b.WriteString(" ")
			}
		}
		chunks[i] = b.String()
	}
	text := KeywordText{
		Sentences: func(s string) ([]string, error) { return strings.Split(s, ". "), nil },
		Words:     strings.Fields,
		Keep:      func(w string) bool { return w != "met" && w != "saw" },
	}
	var graphs []*KeywordGraph
	for _, w := range []int{1, 3} {
		text.Workers = w
		g, err := BuildKeywordGraph(context.Background(), chunks, text)
		if err != nil {
			t.Fatal(err)
		}
		graphs = append(graphs, g)
	}
	a, b := graphs[0], graphs[1]
	if !slices.Equal(a.Keywords, b.Keywords) || !slices.Equal(a.Parts, b.Parts) || !slices.Equal(a.Mentions.Idx, b.Mentions.Idx) ||
		!slices.Equal(a.Mentions.Ptr, b.Mentions.Ptr) || !slices.Equal(a.Chunks.Idx, b.Chunks.Idx) || !slices.Equal(a.Chunks.Ptr, b.Chunks.Ptr) {
		t.Fatal("three workers built another graph than one")
	}
	if n := len(a.Chunks.Neighbors(0)); n < 2*keywordBlock/2 {
		t.Fatalf("the first keyword is in %d chunks: the blocks were not all read", n)
	}
	text.Workers = 0
	if _, err := BuildKeywordGraph(context.Background(), chunks, text); err == nil {
		t.Fatal("no worker was accepted")
	}
}
