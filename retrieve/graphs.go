package retrieve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/graphops/hnsw"
	"github.com/gleaner-rag/gleaner/index"
)

// The graph kinds gleaner builds itself, as build steps: their edges join
// the index's graph (index.SetGraph), tagged with their kind, for every
// graph method to walk.

// MentionSettings configure the mentions graph.
type MentionSettings struct{ graphops.MentionOptions }

// Params binds the mention graph's settings.
func (s *MentionSettings) Params(p *Params) {
	p.Int(&s.MinTitleLen, "min-title-len", "mentions: shortest title matched, in runes", AtLeast(1))
	p.Int(&s.MaxTitleHits, "max-title-hits", "mentions: skip titles found in more passages than this (0: max(50, 1% of passages))", AtLeast(0))
}

// KNNSettings configure the knn graph.
type KNNSettings struct {
	graphops.KNNOptions
	Search string // search: the semantic neighbours' search, as method vector's (SearchAuto, SearchExact, SearchHNSW)
	Ef     int    // ef: candidates an HNSW search keeps
}

// DefaultKNNSettings are KET-RAG's neighbours, found on the index's HNSW
// graph when it has one. A node's own vector is in the graph, so its
// neighbours are found with a far smaller ef than a question's.
func DefaultKNNSettings() KNNSettings {
	return KNNSettings{KNNOptions: graphops.DefaultKNNOptions(), Search: SearchAuto, Ef: 64}
}

// Params binds the knn graph's settings.
func (s *KNNSettings) Params(p *Params) {
	p.Int(&s.Lexical, "k-lex", "lexical neighbours per node in the chunk graph (0: none)", AtLeast(0))
	p.Int(&s.Semantic, "k-sem", "semantic neighbours per node in the chunk graph (0: none)", AtLeast(0))
	p.Int64(&s.LexicalBudget, "lex-budget", graphops.LexicalBudgetUsage, AtLeast(int64(0)))
	p.String(&s.Search, "search", "semantic neighbours: auto (the index's HNSW graph when built and the index has ≥ 100000 nodes, else exact), exact or hnsw", OneOf(SearchAuto, SearchExact, SearchHNSW))
	p.Int(&s.Ef, "ef", "semantic neighbours on the HNSW graph: candidates kept", Within(1, hnsw.MaxEf))
	p.Check(func() error {
		if s.Lexical+s.Semantic == 0 {
			return &ParamError{Name: "k-sem", Value: "0", Msg: "k-lex and k-sem cannot both be 0: the graph needs neighbours"}
		}
		return nil
	})
}

func init() {
	Must(RegisterBuild(BuildDef[MentionSettings]{Name: "mentions", Group: BuildGraph,
		Summary: "passage A → passage B when A's text contains B's title as a whole word",
		Long: `passage A → passage B when A's text contains B's title as a whole word, case-sensitively
(one Aho–Corasick pass; titles shorter than --min-title-len runes and titles found in more
than --max-title-hits passages are skipped); passages cut from a document (gleaner import files)
are found by the document's title, which links to its first passage`,
		Defaults: func() MentionSettings { return MentionSettings{graphops.MentionOptions{MinTitleLen: 4}} },
		Params:   (*MentionSettings).Params, Host: "string matching runs on the host",
		Build: func(ctx context.Context, _ BuildEnv, dir string, s MentionSettings) (string, error) {
			return buildEdgesWith(ctx, dir, "mentions", s.MentionOptions, func(ix *index.Index) ([]graphops.Edge, error) {
				titles, texts := mentionTargets(ix)
				return graphops.MentionEdges(ctx, titles, texts, s.MentionOptions)
			})
		}}))
	Must(RegisterBuild(BuildDef[KNNSettings]{Name: "knn", Group: BuildGraph,
		Summary: "KET-RAG's chunk graph: each node's top lexical and semantic neighbours",
		Long: `KET-RAG's chunk graph: each node's top --k-lex lexical neighbours (most shared index terms;
rarest first, --lex-budget postings read in full per node, past which only the best candidates met
are counted) and top --k-sem semantic neighbours (vector cosine: exact, or on the index's HNSW graph with --search
hnsw, or with auto when the index has one and ≥ 100000 nodes; --ef), undirected`,
		Defaults: DefaultKNNSettings,
		Params:   (*KNNSettings).Params, Host: "the lexical neighbours are counted on the host (the semantic ones run on the backend, or on the host's HNSW graph)",
		Build: func(ctx context.Context, env BuildEnv, dir string, s KNNSettings) (string, error) {
			return buildEdgesWith(ctx, dir, "knn", s, func(ix *index.Index) ([]graphops.Edge, error) {
				s.Progress = env.Progress
				return knnEdges(ctx, ix, env.Backend, s)
			})
		}}))
	Must(index.RegisterKindRefresher("knn", refreshKNN))
}

// knnEdges makes the knn graph of ix.
func knnEdges(ctx context.Context, ix *index.Index, be engine.Backend, s KNNSettings) ([]graphops.Edge, error) {
	o := s.KNNOptions
	nearest, err := NearestRows(ix, be, s.Search, s.Ef)
	if err != nil {
		return nil, err
	}
	o.Nearest = nearest
	return graphops.KNNEdges(ctx, be, ix.TermDocs(), ix.Vectors, ix.Meta.Dims, o)
}

// refreshKNN builds the knn edges again over ix with their recorded
// settings (a live writer's stale ones). While the HNSW graph is stale
// too, the semantic neighbours are found exactly.
func refreshKNN(ctx context.Context, ix *index.Index, settings json.RawMessage, env index.RefreshEnv) ([]graphops.Edge, error) {
	s := DefaultKNNSettings()
	s.LexicalBudget = -1
	if err := json.Unmarshal(settings, &s); err != nil {
		return nil, fmt.Errorf("%w: its recorded settings do not read: %v", index.ErrNotRefreshable, err)
	}
	s.LexicalBudget = graphops.RecordedBudget(s.LexicalBudget)
	if _, err := HNSWOf(ix); errors.Is(err, index.ErrNotBuilt) {
		s.Search = SearchExact
	}
	return knnEdges(ctx, ix, env.Backend, s)
}

// knnGraphFrom is the size from which search auto finds the knn graph's
// semantic neighbours on the HNSW graph. Every real dataset measured in
// benchmarks/RESULTS.md is smaller and keeps its exact neighbours; from
// 10⁵ nodes the exact all-pairs scan (n²·d multiply-adds) takes minutes.
const knnGraphFrom = 100_000

// NearestRows is a node's nearest rows on the index's HNSW graph under
// search (SearchAuto, SearchExact, SearchHNSW) with ef candidates, for the
// graph builders that need each node's neighbours (graphops.KNNOptions's
// Nearest); nil for exact search. auto is the HNSW graph from 10⁵ nodes
// when the index has one.
func NearestRows(ix *index.Index, be engine.Backend, search string, ef int) (func(int32, int) ([]engine.Hit, error), error) {
	if search == SearchAuto && ix.N() < knnGraphFrom {
		return nil, nil
	}
	g, err := graphFor(ix, search)
	if g == nil || err != nil {
		return nil, err
	}
	d, dot := ix.Meta.Dims, engine.DotRowsOf(be)
	return func(row int32, k int) ([]engine.Hit, error) {
		return g.Search(ix.Vectors, ix.Vectors[int(row)*d:(int(row)+1)*d], k, ef, dot)
	}, nil
}

// buildEdges makes a kind's edges over the index at dir and stores them,
// replacing that kind's edges.
func buildEdges(ctx context.Context, dir, kind string, make func(*index.Index) ([]graphops.Edge, error)) (string, error) {
	return buildEdgesWith(ctx, dir, kind, nil, make)
}

// buildEdgesWith is buildEdges recording the kind's settings.
func buildEdgesWith(ctx context.Context, dir, kind string, settings any, make func(*index.Index) ([]graphops.Edge, error)) (string, error) {
	ix, err := index.Open(dir, store.OpenOptions{})
	if err != nil {
		return "", err
	}
	edges, err := make(ix)
	ix.Close()
	if err != nil {
		return "", err
	}
	if err := index.SetGraphWith(ctx, dir, kind, edges, settings); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s graph: %d edges", kind, len(edges)), nil
}

// mentionTargets are the titles the mentions graph looks for and the
// texts it looks in. A passage cut from a document is found by its
// document's title, and only the document's first passage carries it, so
// a mention of a page links to the page's opening rather than to every
// section of it.
func mentionTargets(ix *index.Index) (titles, texts []string) {
	titles, texts = make([]string, ix.N()), make([]string, ix.N())
	seen := map[string]bool{}
	for i := range titles {
		texts[i] = ix.Text(i)
		if !ix.HasDocuments() {
			titles[i] = ix.Title(i)
			continue
		}
		if d := ix.Document(i); !seen[d] {
			seen[d] = true
			titles[i] = ix.DocumentTitle(i)
		}
	}
	return titles, texts
}

// AllowedView is the graph a query may walk: adj itself, or under a filter
// (q.Allow) the subgraph of the allowed nodes, every edge touching another
// removed and degrees recounted, so a walk, a neighbourhood or a degree
// equals one on the index without the other nodes. It costs one pass over
// the edges per filtered query. Under a live set alone (Visible over an
// index with deleted nodes, filter.Set.Isolated) adj is that subgraph
// already, when it is a view of the same index's graph: a live change
// drops a deleted node's edges.
func AllowedView(adj *graphops.Adjacency, q Query) *graphops.Adjacency {
	if q.Allow == nil || q.Allow.Isolated() {
		return adj
	}
	return adj.Induced(q.Allow.Keep())
}
