package graphops

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestWordIndexFollowsAddsAndRemoves checks holdingAll against a map of
// sets through adds, removes and re-adds of the same keys, across
// compactions.
func TestWordIndexFollowsAddsAndRemoves(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	vocab := []string{"Alpha", "Beta", "Gamma", "Delta", "Eps", "Zeta", "eta", "theta", "Iota", "Kappa", "1990", "Lambda"}
	x := newWordIndex()
	ref := map[int32]map[string]bool{} // key → its words
	compactions := 0
	for step := range 20000 {
		key := int32(rng.IntN(400))
		if _, ok := ref[key]; ok {
			before := len(x.keys)
			x.remove(key)
			delete(ref, key)
			if len(x.keys) < before {
				compactions++
			}
			continue
		}
		var ws []string
		for range 1 + rng.IntN(30) {
			ws = append(ws, vocab[rng.IntN(len(vocab))])
		}
		x.add(key, strings.Join(ws, " "))
		ref[key] = map[string]bool{}
		for _, w := range ws {
			ref[key][w] = true
		}
		if step%97 == 0 {
			q := []string{vocab[rng.IntN(len(vocab))], vocab[rng.IntN(len(vocab))]}
			got := x.holdingAll(q)
			var want []int32
			for k, words := range ref {
				if words[q[0]] && words[q[1]] && !isLowerWord(q[0]) && !isLowerWord(q[1]) {
					want = append(want, k)
				}
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("step %d, %v: got %v, want %v", step, q, got, want)
			}
		}
	}
	if compactions == 0 {
		t.Fatal("no compaction happened: the test does not reach the threshold")
	}
	live := 0
	for _, c := range x.count {
		if c >= 0 {
			live++
		}
	}
	if live != len(ref) || len(x.slot) != len(ref) || x.free > x.entries {
		t.Errorf("%d live slots, %d keys, %d free of %d entries; want %d keys", live, len(x.slot), x.free, x.entries, len(ref))
	}
}

func isLowerWord(w string) bool { return w[0] >= 'a' && w[0] <= 'z' }

// Passages with no indexed word hold no list entry; their removed slots
// are still compacted away, and adding a key again replaces its words.
func TestWordIndexStaysBounded(t *testing.T) {
	x := newWordIndex()
	for i := range 10000 {
		key := int32(i)
		x.add(key, "only lower-case words here")
		x.remove(key)
	}
	if len(x.keys) > 2100 {
		t.Errorf("%d slots after 10,000 adds and removes of passages with no indexed word", len(x.keys))
	}
	const q = 10000
	x.add(q, "Alpha Beta")
	x.add(q, "Gamma")
	if got := x.holdingAll([]string{"Alpha"}); len(got) != 0 {
		t.Errorf("Alpha: %v after q was added again without it", got)
	}
	if got := x.holdingAll([]string{"Gamma"}); !slices.Equal(got, []int32{q}) {
		t.Errorf("Gamma: %v, want [q]", got)
	}
}
