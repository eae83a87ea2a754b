// Package synth generates a synthetic multi-hop corpus graph, so gleaner's
// demo and tests run with no dataset: people, cities, countries and bands
// described in short passages that mention each other, linked by
// "mentions" edges, with 2- and 3-hop questions whose gold passages are the
// hops of their answer chain. Generation is seeded and deterministic.
package synth

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/gleaner-rag/gleaner/corpus"
)

// Options sizes the corpus.
type Options struct {
	People    int    // default 600
	Cities    int    // default 120
	Countries int    // default 24
	Bands     int    // default 150
	Queries   int    // default 300
	Seed      uint64 // default 7
}

func (o *Options) fill() {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.People, 600)
	def(&o.Cities, 120)
	def(&o.Countries, 24)
	def(&o.Bands, 150)
	def(&o.Queries, 300)
	if o.Seed == 0 {
		o.Seed = 7
	}
}

type gen struct {
	rng                              *rand.Rand
	c                                *corpus.Corpus
	used                             map[string]bool
	people, cities, countries, bands []int // node positions
	bornIn, capitalOf, inCountry     map[int]int
	founder                          map[int]int
	year                             map[int]int
}

// Generate builds the corpus.
func Generate(o Options) *corpus.Corpus {
	o.fill()
	g := &gen{rng: rand.New(rand.NewPCG(o.Seed, 99)), c: &corpus.Corpus{}, used: map[string]bool{},
		bornIn: map[int]int{}, capitalOf: map[int]int{}, inCountry: map[int]int{}, founder: map[int]int{}, year: map[int]int{}}
	g.countries = g.entities("country", o.Countries, 2)
	g.cities = g.entities("city", o.Cities, 2)
	g.people = g.entities("person", o.People, 3)
	g.bands = g.entities("band", o.Bands, 2)
	g.describe()
	g.questions(o.Queries)
	return g.c
}

var syllables = strings.Fields("ka lo mi ra ten vos dar eli no sa qui bel tor an ul fen gri mo pa zer lin ost rav uma cel dro fi hal jun kev")

var fillers = strings.Fields(`known for long tradition region early later history music festival river
market station school library museum bridge harbor valley northern southern eastern western modern ancient
records album tour award critic season stage audience debut member career university studied worked`)

func (g *gen) name(parts int) string {
	for {
		var words []string
		for w := 0; w < parts; w++ {
			s := ""
			for k := 0; k < 2+g.rng.IntN(2); k++ {
				s += syllables[g.rng.IntN(len(syllables))]
			}
			words = append(words, strings.ToUpper(s[:1])+s[1:])
		}
		n := strings.Join(words, " ")
		if !g.used[n] {
			g.used[n] = true
			return n
		}
	}
}

// entities adds count nodes of one type with multi-word names (the first
// part of a person's name is a given name).
func (g *gen) entities(kind string, count, maxParts int) []int {
	out := make([]int, count)
	for i := range out {
		out[i] = len(g.c.Nodes)
		g.c.Nodes = append(g.c.Nodes, corpus.Node{ID: fmt.Sprintf("%s-%d", kind, i), Title: g.name(1 + g.rng.IntN(maxParts)), Type: kind})
		g.year[out[i]] = 1800 + g.rng.IntN(200)
	}
	return out
}

func (g *gen) pick(s []int) int { return s[g.rng.IntN(len(s))] }

func (g *gen) filler(n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = fillers[g.rng.IntN(len(fillers))]
	}
	return strings.Join(w, " ")
}

func (g *gen) title(i int) string { return g.c.Nodes[i].Title }

// mention records that node a's text names node b.
func (g *gen) mention(a, b int) {
	g.c.Edges = append(g.c.Edges, corpus.Edge{Src: g.c.Nodes[a].ID, Dst: g.c.Nodes[b].ID, Weight: 1, Kind: "mentions"})
}

func (g *gen) describe() {
	for i, c := range g.cities {
		g.inCountry[c] = g.pick(g.countries)
		if i < len(g.countries) {
			g.capitalOf[g.countries[i]] = c
			g.inCountry[c] = g.countries[i]
		}
	}
	for _, p := range g.people {
		g.bornIn[p] = g.pick(g.cities)
	}
	for _, b := range g.bands {
		g.founder[b] = g.pick(g.people)
	}
	for _, n := range g.countries {
		g.text(n, fmt.Sprintf("%s is a country. Its capital is %s. %s.", g.title(n), g.title(g.capitalOf[n]), g.filler(8)), g.capitalOf[n])
	}
	for _, c := range g.cities {
		g.text(c, fmt.Sprintf("%s is a city in %s, founded in %d. %s.", g.title(c), g.title(g.inCountry[c]), g.year[c], g.filler(10)), g.inCountry[c])
	}
	for _, p := range g.people {
		g.text(p, fmt.Sprintf("%s (born %d) is a musician from %s. %s.", g.title(p), g.year[p], g.title(g.bornIn[p]), g.filler(12)), g.bornIn[p])
	}
	for _, b := range g.bands {
		g.text(b, fmt.Sprintf("%s is a band formed in %d by %s. %s.", g.title(b), g.year[b], g.title(g.founder[b]), g.filler(10)), g.founder[b])
	}
}

func (g *gen) text(n int, s string, mentions ...int) {
	g.c.Nodes[n].Text = s
	for _, m := range mentions {
		g.mention(n, m)
	}
}

// questions draws 2-hop (person → city → country), 3-hop (band → founder →
// city) and comparison (two people) questions in a fixed rotation.
func (g *gen) questions(n int) {
	for i := 0; i < n; i++ {
		var q corpus.Query
		switch i % 3 {
		case 0:
			p := g.pick(g.people)
			q = g.query(i, fmt.Sprintf("In which country was %s born?", g.title(p)), p, g.bornIn[p], g.inCountry[g.bornIn[p]])
		case 1:
			b := g.pick(g.bands)
			f := g.founder[b]
			q = g.query(i, fmt.Sprintf("In which city was the founder of %s born?", g.title(b)), b, f, g.bornIn[f])
		default:
			a, b := g.pick(g.people), g.pick(g.people)
			q = g.query(i, fmt.Sprintf("Who was born first, %s or %s?", g.title(a), g.title(b)), a, b)
		}
		g.c.Queries = append(g.c.Queries, q)
	}
}

func (g *gen) query(i int, text string, gold ...int) corpus.Query {
	q := corpus.Query{ID: fmt.Sprintf("q%d", i), Text: text}
	seen := map[int]bool{}
	for _, n := range gold {
		if !seen[n] {
			seen[n] = true
			q.Gold = append(q.Gold, g.c.Nodes[n].ID)
		}
	}
	return q
}
