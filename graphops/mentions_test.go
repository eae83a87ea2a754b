package graphops

import (
	"context"
	"reflect"
	"strings"
	"testing"
)

func TestMatcherFindsOverlaps(t *testing.T) {
	m := newMatcher([]string{"he", "she", "his", "hers"})
	var got []string
	text := "ushers"
	m.scan(text, func(id int32, s, e int) { got = append(got, text[s:e]) })
	if strings.Join(got, ",") != "she,he,hers" {
		t.Errorf("matches %v", got)
	}
}

func TestMentionEdges(t *testing.T) {
	titles := []string{"Paris", "Paris Hilton", "Hilton", "Art", "Lyon", "Common Word"}
	texts := []string{
		"Paris Hilton visited Lyon and Parisians.", // Paris Hilton, Paris (whole word), Hilton, Lyon; not "Parisians"
		"She was born in paris.",                   // case-sensitive: no edge
		"Hilton hotels; Art (too short).",
		"", "", "",
	}
	es, err := MentionEdges(context.Background(), titles, texts, MentionOptions{MinTitleLen: 4})
	if err != nil {
		t.Fatal(err)
	}
	want := []Edge{{Src: 0, Dst: 1, W: 1}, {Src: 0, Dst: 2, W: 1}, {Src: 0, Dst: 4, W: 1}}
	if !reflect.DeepEqual(es, want) {
		t.Errorf("edges %v, want %v", es, want)
	}
	// a hub title mentioned by more passages than the cap is dropped
	texts2 := []string{"Lyon", "Lyon", "Lyon", "x", "y", "z"}
	es, _ = MentionEdges(context.Background(), titles, texts2, MentionOptions{MinTitleLen: 4, MaxTitleHits: 2})
	if len(es) != 0 {
		t.Errorf("hub title kept: %v", es)
	}
}
