package graphops

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
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
			newPassage := func() Passage {
				next++
				p := Passage{Key: fmt.Sprintf("p%d", next), Text: "filler"}
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
					list = append(list[:i], list[i+1:]...)
				}
				var add []Passage
				for k := rng.IntN(6); k > 0; k-- {
					add = append(add, newPassage())
				}
				list = append(list, add...)
				s.Add(add, text)
				checkMentions(t, s, list, o, step)
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

// The state keeps copies of the words it indexes: a word cut from a
// passage's text would keep the whole text (and the index in memory that
// holds it) alive for as long as the word is indexed.
func TestMentionsKeepNoCutOfTheText(t *testing.T) {
	s, err := NewMentions(MentionOptions{MinTitleLen: 4})
	if err != nil {
		t.Fatal(err)
	}
	text := "Alice Springs met Bob Marley in Paris."
	s.Add([]Passage{{Key: "p1", Title: "Alice Springs", Text: text}}, func(string) string { return text })
	if len(s.words) == 0 {
		t.Fatal("no word indexed")
	}
	for w := range s.words {
		if within(w, text) {
			t.Errorf("word %q is a cut of the passage's text", w)
		}
	}
	for _, w := range s.pwords["p1"] {
		if within(w, text) {
			t.Errorf("passage word %q is a cut of the passage's text", w)
		}
	}
}
