package lexical

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
)

// TestUpdateEqualsBuild checks Postings.Update against BuildPostings over
// the final texts, through random deletes and additions.
func TestUpdateEqualsBuild(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	words := []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu"}
	text := func() string {
		s := ""
		for k := rng.IntN(12); k >= 0; k-- {
			s += words[rng.IntN(len(words))] + fmt.Sprint(rng.IntN(3)) + " "
		}
		if rng.IntN(4) == 0 {
			s += fmt.Sprintf("novel%d ", rng.IntN(1000)) // a word the postings may not have yet
		}
		return s
	}
	ctx := context.Background()
	var texts []string
	for range 30 {
		texts = append(texts, text())
	}
	p, err := BuildPostings(ctx, len(texts), func(i int) string { return texts[i] }, nil)
	if err != nil {
		t.Fatal(err)
	}
	for step := range 40 {
		remap := make([]int32, len(texts))
		var next []string
		for d := range texts {
			remap[d] = -1
			if step%2 == 1 || rng.IntN(5) > 0 { // odd steps keep every document: the append path
				remap[d] = int32(len(next))
				next = append(next, texts[d])
			}
		}
		var added []string
		for k := rng.IntN(8); k > 0; k-- {
			added = append(added, text())
		}
		q, err := p.Update(ctx, remap, added)
		if err != nil {
			t.Fatal(err)
		}
		texts = append(next, added...)
		want, err := BuildPostings(ctx, len(texts), func(i int) string { return texts[i] }, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(q, want) {
			t.Fatalf("step %d: updated postings differ from a build of the final texts", step)
		}
		p = q
	}
}

func TestUpdateRefusesBadRemap(t *testing.T) {
	p, err := BuildPostings(context.Background(), 3, func(i int) string { return "a b" }, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, remap := range [][]int32{{0, 1}, {1, 0, 2}, {0, 2, -1}} {
		if _, err := p.Update(context.Background(), remap, nil); err == nil {
			t.Errorf("remap %v accepted", remap)
		}
	}
}
