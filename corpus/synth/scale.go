package synth

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/gleaner-rag/gleaner/corpus"
)

// ScaleOptions sizes a corpus of GenerateScale. Every field must be set;
// DefaultScale gives the benchmark's values.
type ScaleOptions struct {
	Passages int    // passages, one per entity (≥ 100)
	Words    int    // about this many words per passage (≥ 20)
	Queries  int    // test questions (≥ 0)
	Dev      int    // dev questions, drawn apart from the test ones (≥ 0)
	Topics   int    // topics, each with a vocabulary of its own (≥ 1)
	Seed     uint64 // any value; the corpus is a function of the options
}

// DefaultScale is the scale benchmark's corpus of n passages: 100-word
// passages, 300 test and 100 dev questions, a topic per 500 passages.
func DefaultScale(n int) ScaleOptions {
	return ScaleOptions{Passages: n, Words: 100, Queries: 300, Dev: 100, Topics: max(20, n/500), Seed: 1}
}

// Validate rejects options that cannot make a corpus.
func (o ScaleOptions) Validate() error {
	var errs []error
	if o.Passages < 100 || o.Passages > 10_000_000 {
		errs = append(errs, fmt.Errorf("synth: passages %d outside [100, 1e7]", o.Passages))
	}
	if o.Words < 20 || o.Words > 10_000 {
		errs = append(errs, fmt.Errorf("synth: words %d outside [20, 10000]", o.Words))
	}
	if o.Queries < 0 || o.Dev < 0 || o.Queries+o.Dev > 1_000_000 {
		errs = append(errs, fmt.Errorf("synth: queries %d and dev %d must be ≥ 0 and at most 1e6 together", o.Queries, o.Dev))
	}
	if o.Topics < 1 || o.Topics > o.Passages {
		errs = append(errs, fmt.Errorf("synth: topics %d outside [1, passages]", o.Topics))
	}
	return errors.Join(errs...)
}

// GenerateScale builds a seeded corpus for scale measurements: a passage per
// entity (people, works, organisations, cities, countries), each about
// Words words long. A passage states its entity's relations in prose
// (born in a city, member of an organisation, a city's country, a work's
// creator and publisher) and mentions the related entities by title, with a
// "mentions" edge for each; relation targets are drawn with Zipfian
// popularity, so in-degrees are heavy-tailed as in an encyclopaedia. The
// rest of a passage is filler from a Zipfian general vocabulary mixed with
// its topic's own words (organisations set their members' and works'
// topics), so vectors have structure to find. Questions compose two
// relations; their gold passages are the three hops of the chain. Names are
// drawn from a shared syllable stock, so name words recur across entities
// as surnames do, and filler words never collide with name words.
func GenerateScale(o ScaleOptions) (*corpus.Corpus, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	s := newScaleGen(o)
	s.entities()
	s.relate()
	s.describe()
	s.c.Queries = s.questions("q", o.Queries)
	s.c.DevQueries = s.questions("dev", o.Dev)
	return s.c, nil
}

// Entity kinds of the scale corpus.
const (
	kPerson = iota
	kWork
	kOrg
	kCity
	kCountry
	nKinds
)

var kindNames = [nKinds]string{"person", "work", "org", "city", "country"}

type scaleGen struct {
	o      ScaleOptions
	rng    *rand.Rand
	c      *corpus.Corpus
	byKind [nKinds][]int32 // node numbers of each kind
	kind   []uint8
	topic  []int32
	used   map[string]bool
	// relations, by node number (−1: none)
	city, org, country, creator, founder, publisher []int32
	friends                                         [][2]int32
	gen, topicWords, given                          *rand.Zipf
	popular                                         [nKinds]*rand.Zipf
}

// General vocabulary size and each topic's own.
const (
	generalVocab = 20000
	topicVocab   = 300
)

func newScaleGen(o ScaleOptions) *scaleGen {
	rng := rand.New(rand.NewPCG(o.Seed, 0x5ca1e))
	s := &scaleGen{o: o, rng: rng, c: &corpus.Corpus{}, used: make(map[string]bool, o.Passages)}
	s.gen = rand.NewZipf(rng, 1.07, 2, generalVocab-1)
	s.topicWords = rand.NewZipf(rng, 1.1, 1, topicVocab-1)
	s.given = rand.NewZipf(rng, 1.1, 1, 399)
	return s
}

// kindCounts splits the passages: 1 % countries, 10 % cities, 15 %
// organisations, 24 % works and the rest people.
func kindCounts(n int) [nKinds]int {
	var c [nKinds]int
	c[kCountry] = max(2, n/100)
	c[kCity] = max(4, n/10)
	c[kOrg] = max(4, n*15/100)
	c[kWork] = max(4, n*24/100)
	c[kPerson] = n - c[kCountry] - c[kCity] - c[kOrg] - c[kWork]
	return c
}

func (s *scaleGen) entities() {
	counts := kindCounts(s.o.Passages)
	n := s.o.Passages
	s.c.Nodes = make([]corpus.Node, 0, n)
	s.kind = make([]uint8, 0, n)
	for k := nKinds - 1; k >= 0; k-- { // countries first: a world is described from the top
		for i := 0; i < counts[k]; i++ {
			id := int32(len(s.c.Nodes))
			s.byKind[k] = append(s.byKind[k], id)
			s.kind = append(s.kind, uint8(k))
			s.c.Nodes = append(s.c.Nodes, corpus.Node{ID: fmt.Sprintf("%s-%d", kindNames[k], i), Title: s.title(k), Type: kindNames[k]})
		}
	}
	for k := range s.popular {
		// Popularity falls off as (10+rank)^-1.2: a few hubs, a long tail.
		s.popular[k] = rand.NewZipf(s.rng, 1.2, 10, uint64(len(s.byKind[k])-1))
	}
}

// Name stock: syllables of the consonants k l m r t v d n s b. Filler words
// use the other consonants, so no filler word equals a name word.
var nameSyl = func() []string {
	var out []string
	for _, c := range "klmrtvdnsb" {
		for _, v := range []string{"a", "e", "i", "o", "u", "ai", "or", "en"} {
			out = append(out, string(c)+v)
		}
	}
	return out
}()

// nameWord is a capitalised word of 2 or 3 name syllables.
func (s *scaleGen) nameWord() string {
	var b strings.Builder
	for range 2 + s.rng.IntN(2) {
		b.WriteString(nameSyl[s.rng.IntN(len(nameSyl))])
	}
	w := b.String()
	return strings.ToUpper(w[:1]) + w[1:]
}

var orgSuffix = strings.Fields("Records Institute Company Society Press Foundation Guild")

// title is a fresh title for an entity of kind k. People share given names
// drawn from a small Zipfian stock, as people do.
func (s *scaleGen) title(k int) string {
	for {
		var t string
		switch k {
		case kPerson:
			t = s.givenName() + " " + s.nameWord()
		case kWork:
			t = "The " + s.nameWord() + " " + s.nameWord()
		case kOrg:
			t = s.nameWord() + " " + orgSuffix[s.rng.IntN(len(orgSuffix))]
		default:
			t = s.nameWord()
			if s.rng.IntN(3) == 0 {
				t += " " + s.nameWord()
			}
		}
		if !s.used[t] {
			s.used[t] = true
			return t
		}
	}
}

// givenName draws from 400 given names by Zipfian popularity. Name i is
// the syllable pair (i mod 80, (17·⌊i/80⌋ + 3i) mod 80), distinct for
// distinct i.
func (s *scaleGen) givenName() string {
	i := int(s.given.Uint64())
	w := nameSyl[i%len(nameSyl)] + nameSyl[(17*(i/len(nameSyl))+3*i)%len(nameSyl)]
	return strings.ToUpper(w[:1]) + w[1:]
}

// pop draws an entity of kind k by popularity.
func (s *scaleGen) pop(k int) int32 { return s.byKind[k][s.popular[k].Uint64()] }

// uniform draws an entity of kind k uniformly.
func (s *scaleGen) uniform(k int) int32 { return s.byKind[k][s.rng.IntN(len(s.byKind[k]))] }

func (s *scaleGen) relate() {
	n := len(s.c.Nodes)
	none := func() []int32 {
		v := make([]int32, n)
		for i := range v {
			v[i] = -1
		}
		return v
	}
	s.city, s.org, s.country, s.creator, s.founder, s.publisher = none(), none(), none(), none(), none(), none()
	s.friends = make([][2]int32, n)
	s.topic = make([]int32, n)
	for _, c := range s.byKind[kCity] {
		s.country[c] = s.pop(kCountry)
		s.topic[c] = int32(s.rng.IntN(s.o.Topics))
	}
	for _, k := range s.byKind[kCountry] {
		s.city[k] = s.pop(kCity) // the capital
		s.topic[k] = int32(s.rng.IntN(s.o.Topics))
	}
	for _, p := range s.byKind[kPerson] {
		s.city[p], s.org[p] = s.pop(kCity), s.pop(kOrg)
		s.friends[p] = [2]int32{-1, -1}
		for i := range s.rng.IntN(3) {
			if f := s.uniform(kPerson); f != p && f != s.friends[p][0] {
				s.friends[p][i] = f
			}
		}
	}
	for _, o := range s.byKind[kOrg] {
		s.founder[o], s.city[o] = s.uniform(kPerson), s.pop(kCity)
		s.topic[o] = int32(s.rng.IntN(s.o.Topics))
	}
	for _, p := range s.byKind[kPerson] {
		s.topic[p] = s.topic[s.org[p]]
	}
	for _, w := range s.byKind[kWork] {
		s.creator[w], s.publisher[w] = s.uniform(kPerson), s.pop(kOrg)
		s.topic[w] = s.topic[s.publisher[w]]
	}
}

// Filler consonants and vowels: disjoint from the name consonants.
var fillSyl = func() []string {
	var out []string
	for _, c := range "pghwzcfj" {
		for _, v := range "aeiou" {
			out = append(out, string(c)+string(v))
		}
	}
	return out
}()

// fillWord is vocabulary word i spelled in filler syllables (at least 2),
// so frequent words are short.
func fillWord(b *strings.Builder, i int) {
	i += len(fillSyl) // two syllables at least
	for i > 0 {
		b.WriteString(fillSyl[i%len(fillSyl)])
		i /= len(fillSyl)
	}
}

// filler writes about n words of filler sentences for a passage of topic t.
func (s *scaleGen) filler(b *strings.Builder, t int32, n int) {
	for n > 0 {
		m := min(n, 6+s.rng.IntN(10))
		for i := range m {
			if i > 0 {
				b.WriteByte(' ')
			}
			if s.rng.IntN(2) == 0 {
				fillWord(b, generalVocab+int(t)*topicVocab+int(s.topicWords.Uint64()))
			} else {
				fillWord(b, int(s.gen.Uint64()))
			}
		}
		b.WriteString(". ")
		n -= m
	}
}

// Relation sentences, a few wordings each; %[1]s is the subject, %[2]s the
// object.
var (
	bornIn    = []string{"%[1]s was born in %[2]s.", "%[1]s grew up in %[2]s.", "Born in %[2]s, %[1]s"}
	memberOf  = []string{"%[1]s is a member of %[2]s.", "%[1]s worked for %[2]s.", "%[1]s joined %[2]s early."}
	friendOf  = []string{"%[1]s often collaborated with %[2]s.", "%[1]s was a rival of %[2]s."}
	cityIn    = []string{"%[1]s is a city in %[2]s.", "%[1]s lies in %[2]s.", "The city of %[1]s is part of %[2]s."}
	capitalOf = []string{"The capital of %[1]s is %[2]s.", "%[1]s is governed from %[2]s."}
	foundedBy = []string{"%[1]s was founded by %[2]s.", "%[2]s founded %[1]s."}
	basedIn   = []string{"%[1]s is based in %[2]s.", "The headquarters of %[1]s are in %[2]s."}
	madeBy    = []string{"%[1]s was created by %[2]s.", "%[1]s is a work by %[2]s."}
	pubBy     = []string{"%[1]s was published by %[2]s.", "%[2]s released %[1]s."}
)

// relation states one relation of node a with node b and records the
// mention; no relation (b < 0) writes nothing.
func (s *scaleGen) relation(b *strings.Builder, forms []string, a, to int32) {
	if to < 0 {
		return
	}
	f := forms[s.rng.IntN(len(forms))]
	if strings.HasSuffix(f, "%[1]s") { // a participle opening: finish the sentence
		f += " lived there."
	}
	fmt.Fprintf(b, f, s.c.Nodes[a].Title, s.c.Nodes[to].Title)
	b.WriteByte(' ')
	s.c.Edges = append(s.c.Edges, corpus.Edge{Src: s.c.Nodes[a].ID, Dst: s.c.Nodes[to].ID, Weight: 1, Kind: "mentions"})
}

func (s *scaleGen) describe() {
	var b strings.Builder
	for i := range s.c.Nodes {
		a := int32(i)
		b.Reset()
		switch s.kind[i] {
		case kPerson:
			s.relation(&b, bornIn, a, s.city[a])
			s.relation(&b, memberOf, a, s.org[a])
			for _, f := range s.friends[a] {
				s.relation(&b, friendOf, a, f)
			}
		case kWork:
			s.relation(&b, madeBy, a, s.creator[a])
			s.relation(&b, pubBy, a, s.publisher[a])
		case kOrg:
			s.relation(&b, foundedBy, a, s.founder[a])
			s.relation(&b, basedIn, a, s.city[a])
		case kCity:
			s.relation(&b, cityIn, a, s.country[a])
		case kCountry:
			s.relation(&b, capitalOf, a, s.city[a])
		}
		used := len(strings.Fields(b.String()))
		s.filler(&b, s.topic[a], max(10, s.o.Words-used))
		s.c.Nodes[i].Text = strings.TrimSpace(b.String())
	}
}

// questions draws n questions in a fixed rotation of four two-relation
// chains; each question's gold is its chain's three passages.
func (s *scaleGen) questions(prefix string, n int) []corpus.Query {
	qs := make([]corpus.Query, 0, n)
	for i := range n {
		var text string
		var gold [3]int32
		switch i % 4 {
		case 0:
			p := s.uniform(kPerson)
			c := s.city[p]
			gold = [3]int32{p, c, s.country[c]}
			text = fmt.Sprintf("In which country is the city where %s was born?", s.title0(p))
		case 1:
			o := s.uniform(kOrg)
			f := s.founder[o]
			gold = [3]int32{o, f, s.city[f]}
			text = fmt.Sprintf("Where was the founder of %s born?", s.title0(o))
		case 2:
			w := s.uniform(kWork)
			o := s.publisher[w]
			gold = [3]int32{w, o, s.city[o]}
			text = fmt.Sprintf("In which city is the publisher of %s based?", s.title0(w))
		default:
			w := s.uniform(kWork)
			p := s.creator[w]
			gold = [3]int32{w, p, s.org[p]}
			text = fmt.Sprintf("Which organisation does the creator of %s belong to?", s.title0(w))
		}
		q := corpus.Query{ID: fmt.Sprintf("%s%d", prefix, i), Text: text}
		for _, g := range gold { // three kinds: never the same node twice
			q.Gold = append(q.Gold, s.c.Nodes[g].ID)
		}
		qs = append(qs, q)
	}
	return qs
}

func (s *scaleGen) title0(a int32) string { return s.c.Nodes[a].Title }
