package synth

import (
	"reflect"
	"strings"
	"testing"
)

func TestScaleIsSeededAndValid(t *testing.T) {
	o := DefaultScale(2000)
	a, err := GenerateScale(o)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := GenerateScale(o)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two runs with one seed differ")
	}
	o.Seed = 2
	c, _ := GenerateScale(o)
	if reflect.DeepEqual(a.Nodes, c.Nodes) {
		t.Fatal("another seed gave the same corpus")
	}
	if len(a.Nodes) != 2000 || len(a.Queries) != 300 || len(a.DevQueries) != 100 {
		t.Fatalf("%d nodes, %d questions, %d dev", len(a.Nodes), len(a.Queries), len(a.DevQueries))
	}
	titles := map[string]bool{}
	for _, n := range a.Nodes {
		if titles[n.Title] {
			t.Fatalf("title %q twice", n.Title)
		}
		titles[n.Title] = true
		if w := len(strings.Fields(n.Text)); w < 80 || w > 130 {
			t.Fatalf("%s has %d words", n.ID, w)
		}
	}
}

// Every question's chain is in the text: the question names the first hop,
// and each hop's passage names the next.
func TestScaleChainsAreStated(t *testing.T) {
	c, err := GenerateScale(DefaultScale(3000))
	if err != nil {
		t.Fatal(err)
	}
	byID := c.NodeIndex()
	for _, q := range append(c.Queries, c.DevQueries...) {
		if len(q.Gold) < 2 {
			t.Fatalf("%s: gold %v", q.ID, q.Gold)
		}
		first := c.Nodes[byID[q.Gold[0]]]
		if !strings.Contains(q.Text, first.Title) {
			t.Fatalf("%s %q does not name %q", q.ID, q.Text, first.Title)
		}
		for i := 1; i < len(q.Gold); i++ {
			prev, next := c.Nodes[byID[q.Gold[i-1]]], c.Nodes[byID[q.Gold[i]]]
			if !strings.Contains(prev.Text, next.Title) && !strings.Contains(c.Nodes[byID[q.Gold[0]]].Text, next.Title) {
				t.Fatalf("%s: no hop to %q", q.ID, next.Title)
			}
		}
	}
}

// Filler words never equal a name word, and popular cities gather far more
// mentions than the average one.
func TestScaleNamesAndDegrees(t *testing.T) {
	c, err := GenerateScale(DefaultScale(5000))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, n := range c.Nodes {
		for _, w := range strings.Fields(n.Title) {
			names[strings.ToLower(w)] = true
		}
	}
	for _, n := range c.Nodes[:500] {
		for _, w := range strings.Fields(n.Text) {
			w = strings.Trim(w, ".,")
			if w == strings.ToLower(w) && names[w] {
				t.Fatalf("%s: filler word %q is a name word", n.ID, w)
			}
		}
	}
	in := map[string]int{}
	for _, e := range c.Edges {
		if strings.HasPrefix(e.Dst, "city-") {
			in[e.Dst]++
		}
	}
	top, total := 0, 0
	for _, d := range in {
		top, total = max(top, d), total+d
	}
	if mean := float64(total) / 500; float64(top) < 10*mean {
		t.Fatalf("top city in-degree %d, mean %.1f: not heavy-tailed", top, mean)
	}
}

func TestScaleRejectsBadOptions(t *testing.T) {
	for _, o := range []ScaleOptions{{}, {Passages: 50, Words: 100, Topics: 1}, {Passages: 1000, Words: 5, Topics: 1},
		{Passages: 1000, Words: 100, Topics: 0}, {Passages: 1000, Words: 100, Topics: 1, Queries: -1}} {
		if _, err := GenerateScale(o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}
