package graphops

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

// TestMentionsFollowChanges adds and removes passages at random and
// compares the state's edges with MentionEdges over the final passages,
// with and without candidate lists, and with the automatic hit limit
// crossing its floor.
func TestMentionsFollowChanges(t *testing.T) {
	names := []string{"Alba Rossi", "Bruno", "Carla Verdi", "Dario", "Elena", "Fabio Neri", "Gino", "Ugo", "Al", "Ines Bianchi", "'Til Tuesday", "AC/DC", "Bruno Mars"}
	for _, o := range []MentionOptions{{MinTitleLen: 4}, {MinTitleLen: 3, MaxTitleHits: 3}} {
		{
			rng := rand.New(rand.NewPCG(5, 9))
			var list []Passage
			next := 0
			var gone []string // removed keys, some added again (a replaced document)
			newPassage := func() Passage {
				next++
				p := Passage{Key: fmt.Sprintf("p%d", next), Text: "filler"}
				if len(gone) > 0 && rng.IntN(3) == 0 {
					p.Key, gone = gone[len(gone)-1], gone[:len(gone)-1]
				}
				if rng.IntN(4) > 0 {
					p.Title = names[rng.IntN(len(names))]
				}
				for k := rng.IntN(4); k > 0; k-- {
					n := names[rng.IntN(len(names))]
					switch rng.IntN(5) {
					case 0:
						n += "s" // not a whole word
					case 1:
						n = strings.ToLower(n) // not the same case
					case 2:
						n = "l'" + n // a whole word the analyser joins to its article
					}
					p.Text += " met " + n + "."
				}
				return p
			}
			s, err := NewMentions(o)
			if err != nil {
				t.Fatal(err)
			}
			rs, err := NewMentions(o) // the same changes, followed by Rows
			if err != nil {
				t.Fatal(err)
			}
			rs.words.least = 2 // its word index compacts often
			var kept keyEdges
			text := func(k string) string {
				for _, p := range list {
					if p.Key == k {
						return p.Text
					}
				}
				t.Fatalf("no passage %s", k)
				return ""
			}
			for step := range 60 {
				for k := rng.IntN(3); k > 0 && len(list) > 0; k-- {
					i := rng.IntN(len(list))
					s.Remove(list[i].Key)
					rs.Remove(list[i].Key)
					gone = append(gone, list[i].Key)
					list = append(list[:i], list[i+1:]...)
				}
				var add []Passage
				for k := rng.IntN(6); k > 0; k-- {
					add = append(add, newPassage())
				}
				list = append(list, add...)
				s.Add(context.Background(), add, text)
				rs.Add(context.Background(), add, text)
				checkMentions(t, s, list, o, step)
				kept = kept.follow(t, rs, list, len(list), step)
				if want := s.Edges(len(list), numbers(list)); !reflect.DeepEqual(kept.numbered(list), want) {
					t.Fatalf("step %d: edges followed by Rows differ from Edges", step)
				}
			}
		}
	}
}

func checkMentions(t *testing.T, s *Mentions, list []Passage, o MentionOptions, step int) {
	t.Helper()
	titles, texts := make([]string, len(list)), make([]string, len(list))
	num := map[string]int32{}
	for i, p := range list {
		titles[i], texts[i], num[p.Key] = p.Title, p.Text, int32(i)
	}
	want, err := MentionEdges(context.Background(), titles, texts, o)
	if err != nil {
		t.Fatal(err)
	}
	got := s.Edges(len(list), func(k string) int32 { return num[k] })
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("step %d (%d passages): %d edges, MentionEdges %d", step, len(list), len(got), len(want))
	}
}

// within reports whether s's bytes lie inside the string of
// [base, base+n).
func within(s, of string) bool {
	if len(s) == 0 || len(of) == 0 {
		return false
	}
	p, lo := uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(unsafe.Pointer(unsafe.StringData(of)))
	return p >= lo && p < lo+uintptr(len(of))
}

// The state keeps copies of the keys and titles it is given, and no
// word of the texts: a string cut from a larger one (an index in memory
// holds its ids, titles and texts so) would keep all of it alive for as
// long as the state holds the cut.
func TestMentionsKeepNoCutOfWhatTheyAreGiven(t *testing.T) {
	s, err := NewMentions(MentionOptions{MinTitleLen: 4})
	if err != nil {
		t.Fatal(err)
	}
	whole := "p0 p1 p2 Alice Springs|Alice Springs met Bob Marley in Paris.|Bob Marley sang in Paris.|Paris, said Alice Springs."
	texts := strings.Split(whole[strings.Index(whole, "|")+1:], "|")
	for i, text := range texts {
		key, title := whole[3*i:3*i+2], whole[9:22]
		s.Add(context.Background(), []Passage{{Key: key, Title: title, Text: text}}, func(string) string { return text })
	}
	if s.passages.Size() != 3 || s.patterns.Size() != 1 {
		t.Fatalf("%d passages and %d patterns, want 3 and 1", s.passages.Size(), s.patterns.Size())
	}
	for v := range int32(3) {
		if k := s.passages.Name(v); within(k, whole) {
			t.Errorf("passage key %q is a cut of the string given", k)
		}
	}
	if p := s.patterns.Name(0); p != "Alice Springs" || within(p, whole) {
		t.Errorf("pattern %q is a cut of the string given", p)
	}
}

// keyEdges are mention edges by passage key, as a caller of Rows keeps
// them from one change to the next.
type keyEdges map[[2]string]bool

func numbers(list []Passage) func(string) int32 {
	num := map[string]int32{}
	for i, p := range list {
		num[p.Key] = int32(i)
	}
	return func(k string) int32 {
		if v, ok := num[k]; ok {
			return v
		}
		return -1
	}
}

// follow applies what Rows says changed: the rows' edges are replaced,
// the others kept (edges of passages gone go with them).
func (k keyEdges) follow(t *testing.T, s *Mentions, list []Passage, n, step int) keyEdges {
	t.Helper()
	rows, es := s.Rows(n, numbers(list))
	replaced := map[string]bool{}
	for _, r := range rows {
		replaced[list[r].Key] = true
	}
	known := map[string]bool{}
	for _, p := range list {
		known[p.Key] = true
	}
	out := keyEdges{}
	for e := range k {
		if known[e[0]] && !replaced[e[0]] {
			if !known[e[1]] {
				t.Fatalf("step %d: kept edge %s → %s leads to a passage gone, and Rows did not name its source", step, e[0], e[1])
			}
			out[e] = true
		}
	}
	for _, e := range es {
		if !replaced[list[e.Src].Key] {
			t.Fatalf("step %d: Rows gave an edge of %s, not among its rows", step, list[e.Src].Key)
		}
		out[[2]string{list[e.Src].Key, list[e.Dst].Key}] = true
	}
	return out
}

func (k keyEdges) numbered(list []Passage) []Edge {
	num := numbers(list)
	var es []Edge
	for e := range k {
		es = append(es, Edge{Src: num(e[0]), Dst: num(e[1]), W: 1})
	}
	sortEdges(es)
	return es
}

// TestMentionRowsFollowTheLimit changes the passage count Rows is told
// (the automatic hit limit grows with it) as passages come and go, so
// titles start and stop giving edges without being touched, and checks
// the followed edges against a new state's at every step.
func TestMentionRowsFollowTheLimit(t *testing.T) {
	var names []string
	for i := range 10 {
		names = append(names, fmt.Sprintf("Name%c Person", 'A'+i))
	}
	o := MentionOptions{MinTitleLen: 4}
	rng := rand.New(rand.NewPCG(8, 13))
	rs, err := NewMentions(o)
	if err != nil {
		t.Fatal(err)
	}
	var list []Passage
	text := func(k string) string {
		for _, p := range list {
			if p.Key == k {
				return p.Text
			}
		}
		return ""
	}
	var kept keyEdges
	next := 0
	for step := range 40 {
		for k := rng.IntN(3); k > 0 && len(list) > 0; k-- {
			i := rng.IntN(len(list))
			rs.Remove(list[i].Key)
			list = append(list[:i], list[i+1:]...)
		}
		var add []Passage
		focus := names[rng.IntN(len(names)):] // most titles go untouched by a step
		focus = focus[:min(2, len(focus))]
		for k := 10 + rng.IntN(20); k > 0; k-- {
			next++
			p := Passage{Key: fmt.Sprintf("p%d", next), Title: names[rng.IntN(len(names))], Text: "saw"}
			if rng.IntN(3) > 0 {
				p.Title = ""
			}
			for j := 1 + rng.IntN(2); j > 0; j-- {
				p.Text += " " + focus[rng.IntN(len(focus))] + "."
			}
			add = append(add, p)
		}
		list = append(list, add...)
		rs.Add(context.Background(), add, text)
		n := 5000 + 100*rng.IntN(80) // limits 50 to 129, around the hitters titles have, often one apart
		kept = kept.follow(t, rs, list, n, step)
		fresh, err := NewMentions(o)
		if err != nil {
			t.Fatal(err)
		}
		fresh.Add(context.Background(), slices.Clone(list), nil)
		if want := fresh.Edges(n, numbers(list)); !reflect.DeepEqual(kept.numbered(list), want) {
			t.Fatalf("step %d (%d passages, limit %d): followed edges differ from a new state's", step, len(list), n/100)
		}
	}
}

// TestMentionRowsAtTheLimitsEdge: a title held by exactly as many
// passages as the new limit starts giving edges when the limit rises to
// it, and stops when it falls below, with nothing else changed.
func TestMentionRowsAtTheLimitsEdge(t *testing.T) {
	s, err := NewMentions(MentionOptions{MinTitleLen: 4})
	if err != nil {
		t.Fatal(err)
	}
	list := []Passage{{Key: "owner", Title: "Zephyr Quill", Text: "a title"}}
	for i := range 60 {
		list = append(list, Passage{Key: fmt.Sprint("h", i), Text: "met Zephyr Quill."})
	}
	s.Add(context.Background(), list, nil)
	num := numbers(list)
	for _, step := range []struct {
		n           int
		rows, edges int // the rows that changed, and their edges
	}{{5900, 0, 0}, {6000, 60, 60}, {5900, 60, 0}, {6100, 60, 60}, {6200, 0, 0}} {
		rows, edges := s.Rows(step.n, num)
		if len(rows) != step.rows || len(edges) != step.edges {
			t.Fatalf("limit %d: %d rows changed with %d edges, want %d and %d", step.n/100, len(rows), len(edges), step.rows, step.edges)
		}
	}
}
