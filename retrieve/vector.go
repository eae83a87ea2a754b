package retrieve

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/graphops/hnsw"
	"github.com/gleaner-rag/gleaner/graphops/ivf"
	"github.com/gleaner-rag/gleaner/index"
)

// NoOptions are the options of a method without settings.
type NoOptions struct{}

// Params binds nothing.
func (*NoOptions) Params(*Params) {}

// The dense searches of method vector (VectorOptions.Search).
const (
	SearchAuto  = "auto"  // the HNSW graph or inverted file when the index has one and is large enough for it to pay, else exact
	SearchExact = "exact" // every vector scored (on the backend)
	SearchHNSW  = "hnsw"  // the HNSW graph; an index without one is an error
	SearchIVF   = "ivf"   // the inverted file; an index without one is an error
	// SearchSeeded probes the inverted file and walks the HNSW graph's
	// bottom layer from its answer; an index without both is an error.
	SearchSeeded = "seeded"
	// SearchQuantized scans the index's quantized vectors and rescores the
	// best candidates exactly; an index without them is an error.
	SearchQuantized = "quantized"
)

// VectorOptions configure method vector.
type VectorOptions struct {
	Search string // search: SearchAuto, SearchExact, SearchHNSW, SearchIVF, SearchSeeded or SearchQuantized
	Ef     int    // ef: candidates an HNSW search keeps (raised to k)
	// SeededEf: candidates the walk from the inverted file's answer keeps
	// (raised to k).
	SeededEf int
	// Nprobe: an inverted-file search scores the rows of the Nprobe lists
	// whose centroids score best.
	Nprobe int
	// SearchWorkers share an inverted-file search's lists (the hits do
	// not depend on them).
	SearchWorkers int
	// Rescore: a quantized scan keeps Rescore·k candidates per query and
	// scores them again over the float32 vectors.
	Rescore int
}

// DefaultVector walks the HNSW graph from the top (where the inverted file
// does not pay), keeping 1536 candidates: the smallest ef whose recall@10
// against exact search reaches 0.95 on the scale benchmark's dev questions
// at 10⁵ passages (benchmarks/ann); LSA question vectors are far from
// every passage, which makes the graph walk long.
//
// An inverted file probes 96 lists, on every CPU (at most 64): the
// smallest nprobe (of 32, 48, 64, 80, 96, 128) whose recall@10 against
// exact search reaches 0.95 on the scale benchmark's dev questions at 10⁶
// passages in 4,096 lists (benchmarks/ann).
//
// A seeded search probes the file as above and walks from its answer
// keeping 64 candidates: with nprobe 96, the smallest walk ef (of 64, 128,
// 192, 256) whose recall@10 against exact search reached 0.95 on the
// scale benchmark's dev questions at 10⁴, 10⁵ and 10⁶ passages (0.974,
// 0.977, 1.000), where the file alone found 0.697, 0.711 and 1.000 and
// the walk from the top at ef 1536 0.993, 0.956 and 0.955.
//
// A quantized scan rescores 4·k candidates: recall@10 against exact search
// was 1.000 at int8 and bf16 on the peer benchmark's 10⁶ seeded vectors
// (benchmarks/peers) and on the scale benchmark's dev questions.
func DefaultVector() VectorOptions {
	return VectorOptions{Search: SearchAuto, Ef: 1536, SeededEf: 64, Nprobe: 96, SearchWorkers: min(runtime.GOMAXPROCS(0), maxSearchWorkers), Rescore: 4}
}

// Params binds the vector settings.
func (o *VectorOptions) Params(p *Params) {
	p.String(&o.Search, "search", "dense search: auto (seeded when the index has its inverted file and its HNSW graph, nprobe is at most an eighth of the lists and the rows kept (k, or rescore·k over codes) at most an eighth of the nodes; else the HNSW graph when built and the index has at least 32·ef nodes; else the inverted file when built and it pays as above; else its quantized vectors when built, the backend can scan them and the index has at least 64·rescore·k nodes; else exact), exact, hnsw, ivf, seeded (the inverted file's answer, improved by a walk of the HNSW graph's bottom layer from it; past hnsw's largest ef, a scan) or quantized", OneOf(SearchAuto, SearchExact, SearchHNSW, SearchIVF, SearchSeeded, SearchQuantized))
	p.Int(&o.Ef, "ef", "hnsw search: candidates kept (raised to k); more finds more of the exact top k, slower", Within(1, hnsw.MaxEf))
	p.Int(&o.SeededEf, "seeded-ef", "seeded search: candidates the walk from the inverted file's answer keeps (raised to k); more finds more of the exact top k, slower", Within(1, hnsw.MaxEf))
	p.Int(&o.Nprobe, "nprobe", "ivf search: lists scored, best centroids first; more finds more of the exact top k, slower", Within(1, ivf.MaxProbe))
	p.Int(&o.SearchWorkers, "search-workers", "ivf search: goroutines sharing one question's lists", Within(1, maxSearchWorkers))
	p.Int(&o.Rescore, "rescore", "quantized search, and ivf search over int8 codes: candidates per hit scored again over the float32 vectors (rescore·k in all); more finds more of the exact top k, slower", Within(1, maxRescore))
}

func init() {
	Must(Register(Def[VectorOptions]{Name: "vector", Summary: "dense search over the index's vectors: exact on the backend, or on its inverted file or HNSW graph",
		Defaults: DefaultVector, Params: (*VectorOptions).Params, Tune: &Tuning{}, Filters: true,
		New: func(ix *index.Index, env Env, o VectorOptions) (Method, error) { return NewVector(ix, env.Backend, o) }}))
}

// maxRescore bounds Rescore: past it a quantized scan is slower than the
// exact one it stands for.
const maxRescore = 1024

// maxSearchWorkers bounds SearchWorkers: each is a goroutine per question
// (and a request may set it), and past the cores they only wait.
const maxSearchWorkers = 64

// Vector is dense search (O_vs) over the index's vector matrix: exact on
// the backend (engine.FlatIPOp), or approximate on the index's HNSW graph,
// its inverted file, both (seeded) or its quantized vectors (on the CPU
// backend their scores equal exact search's, so only which nodes are
// found can differ). A filtered query is always exact.
type Vector struct {
	ix *index.Index
	be engine.Backend
	g  *hnsw.Graph // nil: exact
	ef int
	// seededEf is the walk's ef where it starts from the file's answer.
	seededEf int
	// file, when its index is not nil, is searched instead of the graph
	// (search ivf, or auto where it pays), or before it (seeded).
	file fileSearch
	// quant, with qs, scans the quantized vectors where the graph is not
	// walked; nil: exact.
	quant   *engine.QuantRows
	qs      engine.QuantSearcher
	rescore int
	dot     hnsw.Dot // the backend's row scorer, so the graph's scores are the scan's
	// mode is the search option: ivf, hnsw, seeded or quantized searches
	// the inverted file, walks the graph, walks it from the file's answer or
	// scans the quantized vectors whatever the index's size; auto uses them
	// only where that pays (seeded, denseOn, quantPays).
	mode string
}

// graphPays says whether a walk keeping ef candidates beats scanning n
// vectors on the CPU backend. On the scale benchmark (256 dimensions, 2
// cores) the scan grows as N^1.5–1.7 and the walk at ef 1536 as N^0.30,
// crossing near N = 35·ef; below 32·ef the scan is used. search auto
// never walks on a device backend (one without engine.RowDotter): its
// exact scan is a GEMM, and the walk would run on the host.
func graphPays(n, ef int) bool { return n >= 32*ef }

// denseOn says which structure a dense search ranks on: SearchHNSW (a
// walk keeping walkEf candidates), SearchIVF (the inverted file probed
// for fileHits rows) or "" (every vector scored, or the quantized scan).
// search is the method's option: a structure it names is used whenever
// it is built and the walk's list fits; auto uses one only where it pays,
// and only on a backend that scores rows (dot not nil). seeded names
// neither alone: where its walk does not fit, every vector is scored.
func denseOn(search string, g *hnsw.Graph, file fileSearch, dot hnsw.Dot, n, walkEf, fileHits int) string {
	switch {
	case search == SearchSeeded:
		return ""
	case g != nil && walkEf <= hnsw.MaxEf && (search == SearchHNSW || dot != nil && graphPays(n, walkEf)):
		return SearchHNSW
	case file.f != nil && (search == SearchIVF || dot != nil && file.pays(fileHits)):
		return SearchIVF
	}
	return ""
}

// NewVector is method vector over ix on be.
func NewVector(ix *index.Index, be engine.Backend, o VectorOptions) (*Vector, error) {
	if err := Validate(&o, (*VectorOptions).Params); err != nil {
		return nil, err
	}
	if be == nil {
		return nil, ErrNoBackend
	}
	g, err := graphFor(ix, o.Search)
	if err != nil {
		return nil, err
	}
	f, err := sectionFor(ix, o.Search, SearchIVF, IVFOf)
	if err != nil {
		return nil, err
	}
	m := &Vector{ix: ix, be: be, ef: o.Ef, seededEf: o.SeededEf, dot: engine.DotRowsOf(be), g: g, mode: o.Search, rescore: o.Rescore,
		file: newFileSearch(f, be, o.Nprobe, o.SearchWorkers, o.Rescore)}
	if m.quant, m.qs, err = quantizedFor(ix, be, o.Search); err != nil {
		return nil, err
	}
	return m, nil
}

// quantizedFor is the quantized scan a search mode uses: under
// SearchQuantized the index's quantized vectors (an error without them or
// on a backend that cannot scan them), under SearchAuto those when the
// index has them and the backend can scan them, else none.
func quantizedFor(ix *index.Index, be engine.Backend, search string) (*engine.QuantRows, engine.QuantSearcher, error) {
	if search != SearchQuantized && search != SearchAuto {
		return nil, nil, nil
	}
	qs := engine.QuantSearcherOf(be)
	if qs == nil {
		if search == SearchQuantized {
			return nil, nil, fmt.Errorf("vector: search quantized: the %s backend cannot scan quantized vectors (the cpu backend can)", be.Name())
		}
		return nil, nil, nil
	}
	m, err := sectionFor(ix, search, SearchQuantized, QuantizedOf)
	if m == nil || err != nil {
		return nil, nil, err
	}
	return m, qs, nil
}

// Name implements Method.
func (m *Vector) Name() string { return "vector" }

// Retrieve implements Method.
func (m *Vector) Retrieve(ctx context.Context, q Query, k int) ([]Hit, error) {
	res, err := m.RetrieveBatch(ctx, []Query{q}, k)
	if err != nil {
		return nil, err
	}
	return res[0], nil
}

// RetrieveBatch embeds the queries and scans the matrix once for all of
// them. A query whose terms are all outside the LSA vocabulary gets no hits.
// A filtered query (Query.Allow) is ranked on its own over its nodes.
func (m *Vector) RetrieveBatch(ctx context.Context, qs []Query, k int) ([][]Hit, error) {
	qs = slices.Clone(qs)
	for i := range qs {
		qs[i] = Visible(m.ix, qs[i]) // deleted nodes stay out
	}
	for _, q := range qs {
		if err := CheckAllow(m.ix, q); err != nil {
			return nil, err
		}
	}
	for _, q := range qs {
		if q.Allow != nil && !q.Allow.Isolated() {
			return m.filtered(ctx, qs, k)
		}
	}
	d := m.ix.Meta.Dims
	batch := make([]float32, 0, len(qs)*d)
	empty := make([]bool, len(qs))
	for i, q := range qs {
		v, err := EmbedQuery(ctx, m.ix, q)
		switch {
		case errors.Is(err, index.ErrEmptyEmbedding):
			empty[i] = true
			v = make([]float32, d)
		case err != nil && len(qs) > 1: // name the query in a batch (a caller of Retrieve names its own)
			return nil, fmt.Errorf("batch query %d (id %q): %w", i, q.ID, err)
		case err != nil:
			return nil, err
		}
		batch = append(batch, v...)
	}
	if k <= 0 { // nothing to find: no scan
		return make([][]Hit, len(qs)), nil
	}
	if m.ix.Deleted() == 0 {
		return m.search(ctx, batch, empty, k)
	}
	return m.liveSearch(ctx, batch, empty, k)
}

// liveSearch is the exact scan over an index with nodes deleted in place,
// whose queries only the live set narrows (Visible, the same for all):
// the first k live nodes of the top depth of every node are the top k
// live ones once depth holds k of them, as it does at k + Deleted().
// Deleted nodes are few (a share the writer bounds), so a depth a little
// over k mostly does. (The HNSW graph, the inverted file and the quantized
// vectors are stale, so not loaded, while any node is deleted in place.)
func (m *Vector) liveSearch(ctx context.Context, batch []float32, empty []bool, k int) ([][]Hit, error) {
	k = min(k, m.ix.Live())
	bound := min(m.ix.N(), k+m.ix.Deleted()) // holds k live nodes
	for depth := min(bound, 2*k+16); ; depth = min(bound, 4*depth) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		hits, err := DenseTopK(ctx, m.be, m.ix, batch, len(empty), depth)
		if err != nil {
			return nil, err
		}
		enough := true
		for i := range hits {
			switch {
			case empty[i]:
				hits[i] = nil
			default:
				if hits[i] = liveHits(m.ix, hits[i], k); len(hits[i]) < k {
					enough = false
				}
			}
		}
		if enough || depth == bound {
			return hits, nil
		}
	}
}

// search finds each embedded query's top k (an empty query: none) by the
// walk from the inverted file's answer where that is chosen (seeded), else
// on the HNSW graph or the inverted file where it pays, else by a
// (quantized) scan. Under search seeded a k too large for the walk is
// scanned, as under search hnsw.
func (m *Vector) search(ctx context.Context, batch []float32, empty []bool, k int) ([][]Hit, error) {
	var hits [][]Hit
	var err error
	switch on := denseOn(m.mode, m.g, m.file, m.dot, m.ix.N(), max(m.ef, k), k); {
	case m.seeded(k):
		hits, err = m.searchSeeded(ctx, batch, empty, k)
	case on == SearchHNSW:
		hits, err = m.searchGraph(ctx, batch, empty, k)
	case on == SearchIVF:
		hits, err = m.searchIVF(ctx, batch, empty, k)
	case m.quant != nil && (m.mode == SearchQuantized || quantPays(m.ix.N(), m.candidates(k))):
		hits, err = m.qs.SearchQuantized(ctx, m.quant, m.ix.Vectors, batch, len(empty), k, m.candidates(k))
	default:
		hits, err = DenseTopK(ctx, m.be, m.ix, batch, len(empty), k)
	}
	if err != nil {
		return nil, err
	}
	for i := range hits {
		if empty[i] {
			hits[i] = nil
		}
	}
	return hits, nil
}

// liveHits is the first k of hits that are not deleted nodes.
func liveHits(ix *index.Index, hits []Hit, k int) []Hit {
	out := hits[:0]
	for _, h := range hits {
		if len(out) == k {
			break
		}
		if !ix.IsDeleted(int(h.Index)) {
			out = append(out, h)
		}
	}
	return out
}

// filtered ranks each query over its allowed nodes: every node's score,
// then the top k of those in the set.
func (m *Vector) filtered(ctx context.Context, qs []Query, k int) ([][]Hit, error) {
	st := &Stage{ix: m.ix, be: m.be, kind: StageVector}
	out := make([][]Hit, len(qs))
	for i, q := range qs {
		if strings.TrimSpace(q.Text) == "" && q.Vector == nil {
			return nil, ErrEmptyQuery
		}
		sc, err := st.vector(ctx, q)
		if err != nil {
			return nil, err
		}
		out[i] = st.Ranking(sc, k)
	}
	return out, nil
}

// quantPays says whether a quantized scan that rescores c candidates
// beats the exact scan of n float32 vectors: on 256 dimensions and 2
// cores (kernels' benchmark sweep) the int8 scan broke even near n = 50·c
// at 40 candidates and n = 80·c at 400, its rescoring and larger heaps
// costing what the smaller reads save; search auto scans it from n = 64·c.
func quantPays(n, c int) bool { return n >= 64*c }

// candidates is how many rows a quantized scan rescores for k hits:
// rescore·k, at most every node (k may be huge).
func (m *Vector) candidates(k int) int {
	if n := m.ix.N(); k >= n/m.rescore {
		return n
	}
	return m.rescore * k
}

// searchIVF answers each embedded query (row-major in batch) on the
// inverted file; an empty one gets no hits.
func (m *Vector) searchIVF(ctx context.Context, batch []float32, empty []bool, k int) ([][]Hit, error) {
	return m.eachQuery(ctx, batch, empty, func(q []float32) ([]Hit, error) {
		return m.file.top(m.ix.Vectors, q, k, m.file.nprobe)
	})
}

// seeded says whether a search for k hits probes the file and walks the
// graph from its answer: under search seeded, and under auto where the
// file pays and the backend scores rows (as denseOn asks), whenever both
// are built and the walk's list fits. It comes before denseOn's choice:
// at 10⁵ and 10⁶ passages of the scale benchmark it found more of the
// exact top 10 than the file or the walk from the top, in less time than
// that walk (DefaultVector); at 10⁴ the file does not pay.
func (m *Vector) seeded(k int) bool {
	return m.g != nil && m.file.f != nil && max(m.seededEf, k) <= hnsw.MaxEf &&
		(m.mode == SearchSeeded || m.mode == SearchAuto && m.dot != nil && m.file.pays(k))
}

// searchSeeded answers each embedded query (row-major in batch) by a walk
// of the HNSW graph's bottom layer from the inverted file's top k; an
// empty one gets no hits.
func (m *Vector) searchSeeded(ctx context.Context, batch []float32, empty []bool, k int) ([][]Hit, error) {
	return m.eachQuery(ctx, batch, empty, func(q []float32) ([]Hit, error) {
		found, err := m.file.top(m.ix.Vectors, q, k, m.file.nprobe)
		if err != nil {
			return nil, err
		}
		from := make([]int32, len(found))
		for i, h := range found {
			from[i] = h.Index
		}
		return m.g.SearchFrom(m.ix.Vectors, q, from, k, m.seededEf, m.dot)
	})
}

// searchGraph answers each embedded query (row-major in batch) on the
// HNSW graph; an empty one gets no hits.
func (m *Vector) searchGraph(ctx context.Context, batch []float32, empty []bool, k int) ([][]Hit, error) {
	return m.eachQuery(ctx, batch, empty, func(q []float32) ([]Hit, error) {
		return m.g.Search(m.ix.Vectors, q, k, m.ef, m.dot)
	})
}

// eachQuery answers the embedded queries one at a time with search,
// checking ctx between them; an empty one gets no hits.
func (m *Vector) eachQuery(ctx context.Context, batch []float32, empty []bool, search func(q []float32) ([]Hit, error)) ([][]Hit, error) {
	d := m.ix.Meta.Dims
	out := make([][]Hit, len(empty))
	for i := range out {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if empty[i] {
			continue
		}
		hits, err := search(batch[i*d : (i+1)*d])
		if err != nil {
			return nil, err
		}
		out[i] = hits
	}
	return out, nil
}
