package seeder

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/index"
	encoder "github.com/gleaner-rag/gleaner/models/seeder"
)

// The learned text side (docs/methods.md §3.5, an extension): a question's
// words and word pairs, with the entity mentions dictionary linking found
// replaced by one placeholder, read by encoder.PathScorer into per-hop
// relation probabilities. They drive the K-hop filter's relation term and
// add path features to the encoder's inputs.

// mentionToken stands for a linked entity mention in the question.
const mentionToken = "<e>"

// questionTokens are the question's link tokens with every linked span
// replaced by mentionToken.
func questionTokens(text string, ms []linkMatch) []string {
	toks := linkTokens(text)
	in := make([]bool, len(toks))
	start := make([]bool, len(toks))
	for _, m := range ms {
		start[m.start] = true
		for i := m.start; i < m.end; i++ {
			in[i] = true
		}
	}
	var out []string
	for i, t := range toks {
		switch {
		case start[i]:
			out = append(out, mentionToken)
		case !in[i]:
			out = append(out, t)
		}
	}
	return out
}

// ngrams are a token list's features: each word, and each adjacent pair
// with the question's start and end.
func ngrams(toks []string) []string {
	out := make([]string, 0, 2*len(toks)+1)
	for _, t := range toks {
		out = append(out, "w "+t)
	}
	prev := "^"
	for _, t := range append(slices.Clone(toks), "$") {
		out = append(out, "b "+prev+" "+t)
		prev = t
	}
	return out
}

// relationWords are a relation name's words ("__film__directed_by" →
// film, directed, by) as features.
func relationWords(name string) []string {
	var out []string
	for _, t := range linkTokens(name) {
		out = append(out, "w "+t)
	}
	return out
}

// pathVocabulary is every relation-name word, then the training
// questions' features found in at least minCount of them, the maxFeatures
// most frequent (ties by feature).
func pathVocabulary(ix *index.Index, questions [][]string, minCount, maxFeatures int) []string {
	var vocab []string
	seen := map[string]bool{}
	for r := 0; r < ix.Meta.Relations; r++ {
		_, name := ix.RelationName(int32(r))
		for _, f := range relationWords(name) {
			if !seen[f] {
				seen[f] = true
				vocab = append(vocab, f)
			}
		}
	}
	df := map[string]int{}
	for _, fs := range questions {
		once := map[string]bool{}
		for _, f := range fs {
			if !once[f] {
				once[f] = true
				df[f]++
			}
		}
	}
	var qf []string
	for f, n := range df {
		if n >= minCount && !seen[f] {
			qf = append(qf, f)
		}
	}
	slices.SortFunc(qf, func(a, b string) int { return cmp.Or(cmp.Compare(df[b], df[a]), cmp.Compare(a, b)) })
	return append(vocab, qf[:min(len(qf), max(0, maxFeatures-len(vocab)))]...)
}

// pathText is what the scorer needs from an index: its vocabulary, and
// each relation's name features.
type pathText struct {
	ids   map[string]int32
	names [][]int32
}

func newPathText(ix *index.Index, vocab []string) *pathText {
	p := &pathText{ids: make(map[string]int32, len(vocab)), names: make([][]int32, ix.Meta.Relations)}
	for i, f := range vocab {
		p.ids[f] = int32(i)
	}
	for r := range p.names {
		_, name := ix.RelationName(int32(r))
		p.names[r] = p.lookup(relationWords(name))
	}
	return p
}

// lookup maps features to ids, dropping unknown ones.
func (p *pathText) lookup(fs []string) []int32 {
	var out []int32
	for _, f := range fs {
		if id, ok := p.ids[f]; ok {
			out = append(out, id)
		}
	}
	return out
}

// pathGraph is the index's KG as the scorer spreads over it: every edge
// of a followed kind from both ends, typed by relation and direction.
func pathGraph(ix *index.Index, keep func(r int32) bool) *encoder.PathGraph {
	n := ix.N()
	g := &encoder.PathGraph{Ptr: make([]int64, n+1)}
	out, in := &ix.Graph().Out, &ix.Graph().In
	for v := 0; v < n; v++ {
		for _, dir := range []struct {
			csr *graphops.CSR
			inv int32
		}{{out, 0}, {in, 1}} {
			c := dir.csr
			if c.Rel == nil {
				continue
			}
			for p := c.Ptr[v]; p < c.Ptr[v+1]; p++ {
				r := c.Rel[p]
				if r < 0 || !keep(r) {
					continue
				}
				g.Dst, g.Dir = append(g.Dst, c.Idx[p]), append(g.Dir, 2*r+dir.inv)
			}
		}
		g.Ptr[v+1] = int64(len(g.Dst))
	}
	return g
}

// pathModel is a trained text side with its vocabulary.
type pathModel struct {
	sc   *encoder.PathScorer
	text *pathText
}

// read is the question's reading: its features after masking the
// mentions l links.
func (pm *pathModel) read(l *entityLinker, text string) (*encoder.Paths, error) {
	return pm.sc.Read(pm.text.lookup(ngrams(questionTokens(text, l.link(text)))))
}

// linkedNodes are the distinct nodes of the question's dictionary
// matches, longest span first (ties by node id), at most k0: the seeds
// the text side's training spreads from.
func linkedNodes(ms []linkMatch, k0 int) []int32 {
	slices.SortFunc(ms, func(a, b linkMatch) int {
		return cmp.Or(cmp.Compare(b.end-b.start, a.end-a.start), cmp.Compare(a.node, b.node))
	})
	var out []int32
	for _, m := range ms {
		if len(out) < k0 && !slices.Contains(out, m.node) {
			out = append(out, m.node)
		}
	}
	return out
}

// pathFile is a trained text side as Train returns it.
type pathFile struct {
	model  *pathModel
	vocab  []string
	epochs []encoder.PathEpoch
}

// trainPaths trains the text side on the KG's answers: each question
// spreads from its dictionary-linked nodes (at most k0) over the whole
// graph of followed kinds. Questions with no linked node or no gold node
// in the index are left out of its training.
func trainPaths(ctx context.Context, km *kgMethod, so TrainOptions, train, dev []corpus.Query, log *slog.Logger) (*pathFile, error) {
	ix := km.ix
	if ix.Meta.Relations == 0 {
		return nil, fmt.Errorf("seeder: the learned text side (--paths) reads relations, and the index's graph has none; train with --paths=false")
	}
	type read struct {
		feats []string
		seeds []int32
		gold  []int32
	}
	reads := func(qs []corpus.Query) []read {
		out := make([]read, 0, len(qs))
		for _, q := range qs {
			ms := km.linker.link(q.Text)
			r := read{feats: ngrams(questionTokens(q.Text, ms)), seeds: linkedNodes(ms, km.o.K0)}
			for _, id := range q.Gold {
				if v, ok := ix.Lookup(id); ok {
					r.gold = append(r.gold, v)
				}
			}
			out = append(out, r)
		}
		return out
	}
	trR, devR := reads(train), reads(dev)
	var trFeats [][]string
	for _, r := range trR {
		trFeats = append(trFeats, r.feats)
	}
	vocab := pathVocabulary(ix, trFeats, so.PathMinCount, so.PathMaxFeatures)
	text := newPathText(ix, vocab)
	examples := func(rs []read) []encoder.PathExample {
		var out []encoder.PathExample
		for _, r := range rs {
			if len(r.seeds) > 0 && len(r.gold) > 0 {
				out = append(out, encoder.PathExample{Feats: text.lookup(r.feats), Seeds: r.seeds, Gold: r.gold})
			}
		}
		return out
	}
	trEx, devEx := examples(trR), examples(devR)
	log.Info("seeder: training the text side", "questions", len(trEx), "left_out", len(trR)-len(trEx), "dev", len(devEx), "features", len(vocab))
	c := encoder.PathConfig{Features: len(vocab), Dim: so.PathDim, Relations: ix.Meta.Relations, Hops: len(km.o.KHop.Quotas), Seed: so.Train.Seed}
	sc, reps, err := encoder.TrainPaths(ctx, c, text.names, pathGraph(ix, km.keepEdge), trEx, devEx, so.PathTrain, so.PathProgress)
	if err != nil {
		return nil, err
	}
	return &pathFile{model: &pathModel{sc: sc, text: text}, vocab: vocab, epochs: reps}, nil
}

// pathEdge is a directed edge between candidate rows along a relation
// direction (2r forward, 2r+1 backward).
type pathEdge struct{ src, dst, dir int32 }

// localPathGraph is n rows' path graph over edges (any order).
func localPathGraph(n int, edges []pathEdge) *encoder.PathGraph {
	slices.SortStableFunc(edges, func(a, b pathEdge) int { return cmp.Compare(a.src, b.src) })
	g := &encoder.PathGraph{Ptr: make([]int64, n+1), Dst: make([]int32, 0, len(edges)), Dir: make([]int32, 0, len(edges))}
	for _, e := range edges {
		g.Ptr[e.src+1]++
		g.Dst, g.Dir = append(g.Dst, e.dst), append(g.Dir, e.dir)
	}
	for i := 0; i < n; i++ {
		g.Ptr[i+1] += g.Ptr[i]
	}
	return g
}

// candidatePathGraph is the candidates' induced path graph over m's
// followed kinds (rows in c.nodes order), every KG edge from both ends.
func (m *kgMethod) candidatePathGraph(c *kgCandidates) *encoder.PathGraph {
	local := make(map[int32]int32, len(c.nodes))
	for i, v := range c.nodes {
		local[v] = int32(i)
	}
	out := &m.ix.Graph().Out
	var edges []pathEdge
	for i, v := range c.nodes {
		if out.Rel == nil {
			break
		}
		for p := out.Ptr[v]; p < out.Ptr[v+1]; p++ {
			j, ok := local[out.Idx[p]]
			r := out.Rel[p]
			if !ok || r < 0 || !m.keepEdge(r) {
				continue
			}
			edges = append(edges, pathEdge{int32(i), j, 2 * r}, pathEdge{j, int32(i), 2*r + 1})
		}
	}
	return localPathGraph(len(c.nodes), edges)
}

// linkedRows are the rows of the linked seeds, or of the hop-0 seeds when
// the question linked none: where the answer mass starts.
func linkedRows(linked []bool, hops []int) []int32 {
	var rows []int32
	for i, l := range linked {
		if l {
			rows = append(rows, int32(i))
		}
	}
	if len(rows) == 0 {
		for i, h := range hops {
			if h == 0 {
				rows = append(rows, int32(i))
			}
		}
	}
	return rows
}
