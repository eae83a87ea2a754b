package lexical

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// TestPostingsValidateRefusesDisorder: a list whose documents repeat or
// go back is refused (searches gallop and merge over sorted lists), as is
// a document past the last.
func TestPostingsValidateRefusesDisorder(t *testing.T) {
	docs := []string{"apple banana", "apple cherry", "apple banana cherry", "banana"}
	build := func() *Postings {
		p, err := BuildPostings(context.Background(), len(docs), func(i int) string { return docs[i] }, nil)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if err := build().Validate(); err != nil {
		t.Fatalf("fresh postings: %v", err)
	}
	apple := func(p *Postings) []uint32 { t := p.Terms.Lookup("appl"); return p.Doc[p.Ptr[t]:p.Ptr[t+1]] }
	if got := apple(build()); len(got) != 3 {
		t.Fatalf("apple's postings %v, want 3 documents", got)
	}
	for name, c := range map[string]struct {
		edit func([]uint32)
		want string
	}{
		"repeat":  {func(l []uint32) { l[1] = l[0] }, "do not ascend"},
		"back":    {func(l []uint32) { l[0], l[1] = l[1], l[0] }, "do not ascend"},
		"too far": {func(l []uint32) { l[2] = uint32(len(docs)) }, "names document"},
	} {
		p := build()
		c.edit(apple(p))
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", name, err, c.want)
		}
	}
}

// With lists over several of Validate's tasks, the error names the first
// bad term, however the tasks ran.
func TestPostingsValidateNamesTheFirstBadTerm(t *testing.T) {
	words := make([]string, 3*validateTerms)
	for i := range words {
		words[i] = fmt.Sprintf("w%dx", i)
	}
	doc := strings.Join(words, " ")
	p, err := BuildPostings(context.Background(), 2, func(int) string { return doc }, nil)
	if err != nil {
		t.Fatal(err)
	}
	v := p.Terms.Len()
	if v <= 2*validateTerms {
		t.Fatalf("%d terms, want more than two tasks' worth", v)
	}
	for _, term := range []int{v - 3, 5} {
		l := p.Doc[p.Ptr[term]:p.Ptr[term+1]]
		l[0], l[1] = l[1], l[0]
	}
	want := "term 5's documents do not ascend"
	for range 20 {
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("%v, want an error with %q", err, want)
		}
	}
}
