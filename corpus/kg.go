package corpus

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
)

// Knowledge-graph question sets (SeedER, docs/methods.md §3): entities are
// nodes, triples typed edges (Kind "kg", Rel the relation), questions carry
// their topic entity and gold answer entities.

// KGEdgeKind is the edge kind of imported knowledge-graph triples.
const KGEdgeKind = "kg"

// Query split files beside queries.jsonl (the test split) for datasets
// imported with fixed splits.
const (
	TrainQueriesFile = "queries-train.jsonl"
	DevQueriesFile   = "queries-dev.jsonl"
)

// SplitSeed fixes the train/dev/test split of imported question sets.
const SplitSeed = 20181

// PathQuestionSets lists PathQuestion's sets and their knowledge bases.
var PathQuestionSets = map[string]string{"PQ-2H": "2H-kb.txt", "PQ-3H": "3H-kb.txt", "PQL-2H": "PQL2-KB.txt", "PQL-3H": "PQL3-KB.txt"}

// kg builds a knowledge-graph corpus: entities get stable ids (the name
// with spaces as "_", a "#n" suffix on a clash) and readable titles.
type kg struct {
	c      *Corpus
	byName map[string]string // entity name → node id
	ids    map[string]bool
	title  func(string) string
}

func newKG(title func(string) string) *kg {
	return &kg{c: &Corpus{}, byName: map[string]string{}, ids: map[string]bool{}, title: title}
}

// entity returns name's node id, adding the node on first sight.
func (g *kg) entity(name string) string {
	if id, ok := g.byName[name]; ok {
		return id
	}
	base := strings.Join(strings.Fields(name), "_")
	id := base
	for n := 2; g.ids[id]; n++ {
		id = fmt.Sprintf("%s#%d", base, n)
	}
	g.byName[name], g.ids[id] = id, true
	n := Node{ID: id, Title: g.title(name), Text: g.title(name), Type: "entity"}
	if n.Title != name {
		n.Aliases = []string{name}
	}
	g.c.Nodes = append(g.c.Nodes, n)
	return id
}

// readTriples reads a knowledge base of "head sep relation sep tail" lines.
func (g *kg) readTriples(path, sep string) error {
	seen := map[[3]string]bool{}
	return eachLine(path, func(line int, t string) error {
		if strings.TrimSpace(t) == "" {
			return nil
		}
		f := strings.Split(strings.TrimRight(t, "\r"), sep)
		if len(f) != 3 || strings.TrimSpace(f[0]) == "" || strings.TrimSpace(f[1]) == "" || strings.TrimSpace(f[2]) == "" {
			return recErr(path, line, "", fmt.Errorf("%w: want head%srelation%stail, got %d fields", ErrMalformed, sep, sep, len(f)))
		}
		h, r, tl := strings.TrimSpace(f[0]), strings.TrimSpace(f[1]), strings.TrimSpace(f[2])
		if seen[[3]string{h, r, tl}] {
			return nil // a repeated triple is one edge
		}
		seen[[3]string{h, r, tl}] = true
		g.c.Edges = append(g.c.Edges, Edge{Src: g.entity(h), Dst: g.entity(tl), Rel: r, Kind: KGEdgeKind, Weight: 1})
		return nil
	})
}

// ReadPathQuestion reads one PathQuestion set (PQ-2H, PQ-3H, PQL-2H,
// PQL-3H) with its knowledge base from dir: questions "question \t
// answer(ans1/ans2/…) \t e0#r1#e1#…". The topic entity is the path's first
// entity; gold answers are the answer set's entities. Questions are split
// train/dev/test 8:1:1 by a fixed seed (c.Queries is the test split).
func ReadPathQuestion(dir, set string, opt ReadOptions) (*Corpus, error) {
	kbFile, ok := PathQuestionSets[set]
	if !ok {
		return nil, fmt.Errorf("corpus: pathquestion set %q: want one of PQ-2H, PQ-3H, PQL-2H, PQL-3H", set)
	}
	g := newKG(func(s string) string { return strings.ReplaceAll(s, "_", " ") })
	if err := g.readTriples(filepath.Join(dir, kbFile), "\t"); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, set+".txt")
	var qs []Query
	err := eachLine(path, func(line int, t string) error {
		if strings.TrimSpace(t) == "" {
			return nil
		}
		q, rerr := pathQuestion(g, path, line, strings.ToLower(set), t)
		if rerr != nil {
			return opt.reject(rerr)
		}
		qs = append(qs, q)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return g.withSplits(path, qs)
}

func pathQuestion(g *kg, path string, line int, setName, t string) (Query, *RecordError) {
	f := strings.Split(strings.TrimRight(t, "\r"), "\t")
	if len(f) != 3 {
		return Query{}, recErr(path, line, "", fmt.Errorf("%w: want question\\tanswers\\tpath, got %d fields", ErrMalformed, len(f)))
	}
	hops := strings.Split(f[2], "#")
	if len(hops) < 3 || strings.TrimSpace(hops[0]) == "" {
		return Query{}, recErr(path, line, "path", fmt.Errorf("%w: %q is not e0#r1#e1#…", ErrMalformed, f[2]))
	}
	names, ok := answerSet(g, strings.TrimSpace(f[1]))
	if !ok {
		return Query{}, recErr(path, line, "answer", fmt.Errorf("%w: %q is not answer(ans1/ans2/…) over entities of the knowledge base", ErrUnknownID, f[1]))
	}
	q := Query{ID: fmt.Sprintf("%s-%d", setName, line), Text: strings.TrimSpace(f[0])}
	topic, ok := g.byName[strings.TrimSpace(hops[0])]
	if !ok {
		return Query{}, recErr(path, line, "path", fmt.Errorf("%w: topic entity %q is not in the knowledge base", ErrUnknownID, hops[0]))
	}
	q.Topics = []string{topic}
	for _, a := range names {
		q.Gold = append(q.Gold, g.byName[a])
		q.Answers = append(q.Answers, g.title(a))
	}
	if q.Text == "" {
		return Query{}, recErr(path, line, "question", fmt.Errorf("%w: empty question", ErrMissing))
	}
	return q, nil
}

// answerSet parses PathQuestion's "answer(ans1/ans2/…/)". Entity names
// hold parentheses themselves ("PG_(USA)(PG_(USA)/)"), so the first "(" at
// which every name parses as a knowledge-base entity splits it.
func answerSet(g *kg, field string) ([]string, bool) {
	if !strings.HasSuffix(field, ")") {
		return nil, false
	}
	for i := strings.Index(field, "("); i >= 0; {
		names := []string{field[:i]}
		for _, a := range strings.Split(field[i+1:len(field)-1], "/") {
			if a != "" && !slices.Contains(names, a) {
				names = append(names, a)
			}
		}
		if !slices.ContainsFunc(names, func(n string) bool { _, ok := g.byName[n]; return !ok }) {
			return names, true
		}
		j := strings.Index(field[i+1:], "(")
		if j < 0 {
			break
		}
		i += j + 1
	}
	return nil, false
}

// withSplits shuffles qs with SplitSeed and splits them 8:1:1 into train,
// dev and test (c.Queries).
func (g *kg) withSplits(path string, qs []Query) (*Corpus, error) {
	if len(qs) < 10 {
		return nil, recErr(path, 0, "", fmt.Errorf("%w: %d questions, too few to split 8:1:1", ErrMissing, len(qs)))
	}
	order := rand.New(rand.NewPCG(SplitSeed, 0)).Perm(len(qs))
	nTrain, nDev := len(qs)*8/10, len(qs)/10
	pick := func(idx []int) []Query {
		slices.Sort(idx) // file order within a split
		out := make([]Query, len(idx))
		for i, k := range idx {
			out[i] = qs[k]
		}
		return out
	}
	g.c.TrainQueries = pick(order[:nTrain])
	g.c.DevQueries = pick(order[nTrain : nTrain+nDev])
	g.c.Queries = pick(order[nTrain+nDev:])
	return g.c, nil
}

// ReadMetaQA reads MetaQA's knowledge base (kb.txt or kb_partial.txt,
// "head|relation|tail") and the hops-hop test questions ("question with
// [topic] \t ans1|ans2|…") from dir. Questions whose topic is not in the
// knowledge base or whose answers are not all within hops undirected hops
// of it are dropped (their number is returned); the rest are split
// train/dev/test 8:1:1 by a fixed seed, MetaQA's own train and dev files
// not being part of the shared data.
func ReadMetaQA(dir string, hops int, opt ReadOptions) (c *Corpus, dropped int, err error) {
	if hops < 1 || hops > 3 {
		return nil, 0, fmt.Errorf("corpus: metaqa hops %d: want 1, 2 or 3", hops)
	}
	kb, err := firstExisting(dir, "kb.txt", "kb_partial.txt")
	if err != nil {
		return nil, 0, err
	}
	g := newKG(func(s string) string { return s })
	if err := g.readTriples(kb, "|"); err != nil {
		return nil, 0, err
	}
	reach := newReach(g.c)
	path := filepath.Join(dir, fmt.Sprintf("%d-hop", hops), "qa_test.txt")
	var qs []Query
	err = eachLine(path, func(line int, t string) error {
		if strings.TrimSpace(t) == "" {
			return nil
		}
		q, ok, rerr := metaQuestion(g, reach, path, line, hops, t)
		switch {
		case rerr != nil:
			return opt.reject(rerr)
		case !ok:
			dropped++
		default:
			qs = append(qs, q)
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	c, err = g.withSplits(path, qs)
	return c, dropped, err
}

func metaQuestion(g *kg, reach *reach, path string, line, hops int, t string) (Query, bool, *RecordError) {
	f := strings.Split(strings.TrimRight(t, "\r"), "\t")
	if len(f) != 2 {
		return Query{}, false, recErr(path, line, "", fmt.Errorf("%w: want question\\tanswers, got %d fields", ErrMalformed, len(f)))
	}
	open, close := strings.Index(f[0], "["), strings.Index(f[0], "]")
	if open < 0 || close < open {
		return Query{}, false, recErr(path, line, "question", fmt.Errorf("%w: no [topic entity] in %q", ErrMalformed, f[0]))
	}
	q := Query{ID: fmt.Sprintf("metaqa%d-%d", hops, line), Text: strings.TrimSpace(f[0])}
	topic, ok := g.byName[f[0][open+1:close]]
	if !ok {
		return Query{}, false, nil
	}
	q.Topics = []string{topic}
	for _, a := range strings.Split(f[1], "|") {
		if a = strings.TrimSpace(a); a == "" {
			continue
		}
		id, ok := g.byName[a]
		if !ok {
			return Query{}, false, nil
		}
		q.Gold = append(q.Gold, id)
		q.Answers = append(q.Answers, a)
	}
	return q, len(q.Gold) > 0 && reach.all(topic, q.Gold, hops), nil
}

// reach answers "are these entities within h undirected hops of s?" by a
// breadth-first search over dense ids, stopping once all are found.
type reach struct {
	id    map[string]int32
	adj   [][]int32
	stamp []int32 // the search that last visited each entity
	round int32
}

func newReach(c *Corpus) *reach {
	r := &reach{id: make(map[string]int32, len(c.Nodes)), adj: make([][]int32, len(c.Nodes)), stamp: make([]int32, len(c.Nodes))}
	for i, n := range c.Nodes {
		r.id[n.ID] = int32(i)
	}
	for _, e := range c.Edges {
		a, b := r.id[e.Src], r.id[e.Dst]
		r.adj[a], r.adj[b] = append(r.adj[a], b), append(r.adj[b], a)
	}
	return r
}

func (r *reach) all(s string, targets []string, hops int) bool {
	r.round++
	want := map[int32]bool{}
	for _, t := range targets {
		want[r.id[t]] = true
	}
	src := r.id[s]
	r.stamp[src] = r.round
	delete(want, src)
	frontier := []int32{src}
	for h := 0; h < hops && len(want) > 0 && len(frontier) > 0; h++ {
		var next []int32
		for _, u := range frontier {
			for _, v := range r.adj[u] {
				if r.stamp[v] != r.round {
					r.stamp[v] = r.round
					delete(want, v)
					next = append(next, v)
				}
			}
		}
		frontier = next
	}
	return len(want) == 0
}
