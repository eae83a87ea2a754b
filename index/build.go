package index

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/models"
	"github.com/gleaner-rag/gleaner/models/headtrain"
	"github.com/gleaner-rag/gleaner/models/lexical"
)

// built holds everything Build computes before writing.
type built struct {
	post  *lexical.Postings
	lsa   *lexical.LSA
	vecs  []float32
	dims  int
	graph *graphops.Graph
	rels  relationTable
}

// Build indexes c into dir. The index is written to a temporary sibling
// folder, finished there (WithFinish) and renamed into place only when
// complete; on error nothing is left behind and an existing index at dir is
// untouched. A dir that holds something other than a gleaner index is
// refused before any work; files of the user's inside an existing index
// folder are kept (store.Promote).
func Build(ctx context.Context, c *corpus.Corpus, dir string, opts ...Option) error {
	cfg, err := newConfig(opts)
	if err != nil {
		return err
	}
	if err := store.CheckTarget(dir); err != nil {
		return err
	}
	if err := checkNoWriter(dir); err != nil {
		return err
	}
	prev := previousMeta(dir)
	warnDroppedSections(cfg.log, dir, prev)
	if _, err := os.Stat(LogDir(dir)); err == nil {
		cfg.log.Warn("the index being replaced has an update log; the new index starts afresh and live updates will refuse the old log until it is moved away", "log", LogDir(dir))
	}
	if lost := droppedKinds(prev, c); len(lost) > 0 {
		cfg.log.Warn("the index being replaced has graph kinds this corpus does not; build them again (gleaner graph build, or index.SetGraph)", "dir", dir, "kinds", lost)
	}
	CleanDebris(cfg.log, dir)
	if len(c.Nodes) == 0 {
		return fmt.Errorf("index: the corpus has no nodes")
	}
	if len(c.Nodes) > math.MaxInt32 {
		return fmt.Errorf("index: %d nodes exceed the 2³¹−1 limit", len(c.Nodes))
	}
	b := &built{}
	steps := []func(context.Context, *corpus.Corpus, *config, *built) error{buildPostings, buildVectors, buildGraph}
	for _, step := range steps {
		if err := step(ctx, c, &cfg, b); err != nil {
			return err
		}
	}
	finish := cfg.finish
	if cfg.head != nil {
		finish = append(finish, cfg.trainHead)
	}
	if len(finish) == 0 {
		return write(ctx, c, dir, &cfg, b)
	}
	staged, err := store.StageDir(dir)
	if err != nil {
		return err
	}
	defer os.RemoveAll(staged)                // gone once promoted; removed on any error
	if err := os.Remove(staged); err != nil { // write creates it afresh
		return err
	}
	if err := write(ctx, c, staged, &cfg, b); err != nil {
		return err
	}
	releaseBuilt(b)
	// A concurrent build must not take the staged folder for debris. Each
	// finish step swaps a new folder in at that path and the lock stays
	// with the old one, so it is taken again after each.
	release := store.Hold(staged)
	defer func() { release() }()
	for _, f := range finish {
		if err := f(ctx, staged); err != nil {
			return err
		}
		next := store.Hold(staged)
		release()
		release = next
	}
	return store.Promote(staged, dir)
}

// releaseBuilt drops what the build held once it is written, and hands the
// freed memory back to the OS: the finish steps map the staged index's
// files, and at 10⁶ passages the build's garbage and those pages together
// were what set the peak RSS (10.3 GiB; the corpus is the caller's to drop).
func releaseBuilt(b *built) {
	*b = built{}
	debug.FreeOSMemory()
}

// previousMeta reads the description of the index a build is about to
// replace (nil when there is none or it cannot be read).
func previousMeta(dir string) *Meta {
	b, err := os.ReadFile(filepath.Join(dir, store.ManifestFile))
	if err != nil {
		return nil
	}
	var m struct {
		Meta struct {
			Index Meta `json:"index"`
		} `json:"meta"`
	}
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	return &m.Meta.Index
}

// warnDroppedSections names the sections of the index being replaced: a
// build from a corpus starts the index afresh, and sections whose policy
// is to be rebuilt must be built again (the head is trained anew by
// default).
func warnDroppedSections(log *slog.Logger, dir string, prev *Meta) {
	if prev == nil {
		return
	}
	for _, name := range slices.Sorted(maps.Keys(prev.Sections)) {
		if name == headSection {
			continue
		}
		hint := "build it again"
		if t, ok := LookupSection(name); ok {
			hint = t.Hint
		}
		log.Warn("the index being replaced has a section this build does not carry over", "dir", dir, "section", name,
			"update", prev.Sections[name].Update, "rebuild", hint)
	}
}

// droppedKinds lists the graph kinds of the replaced index that the
// corpus's own edges do not have (built later by graph builders): a
// rebuild does not carry them over.
func droppedKinds(prev *Meta, c *corpus.Corpus) []string {
	if prev == nil {
		return nil
	}
	have := map[string]bool{}
	for _, e := range c.Edges {
		have[e.Kind] = true
	}
	var lost []string
	for _, k := range prev.GraphKinds {
		if !have[k] {
			lost = append(lost, k)
		}
	}
	return lost
}

// trainHead trains the lexical head on the staged index. By default a
// corpus too small to train on gets no head and a warning; with WithHead
// that is an error.
func (cfg *config) trainHead(ctx context.Context, staged string) error {
	cfg.progress.Stage("head", 0)
	defer cfg.progress.Finish()
	ix, err := Open(staged, store.OpenOptions{SkipChecksums: true})
	if err != nil {
		return err
	}
	hf, rep, err := TrainHead(ctx, ix, *cfg.head)
	ix.Close()
	if errors.Is(err, headtrain.ErrTooFewGroups) && !cfg.headSet {
		cfg.log.Warn("no cross-encoder head: the corpus is too small to train one; re2, gar and fastinsight need a head or a transformer model", "err", err)
		return nil
	}
	if errors.Is(err, headtrain.ErrUnavailable) && !cfg.headSet {
		cfg.log.Warn("no cross-encoder head: this build cannot train one; re2, gar and fastinsight need a head (gleaner train head, in a default build) or a transformer model", "err", err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("index: training the cross-encoder head: %w", err)
	}
	cfg.log.Info("head trained", "groups", rep.Groups, "heldout_accuracy", math.Round(rep.Accuracy*1e4)/1e4, "bm25_accuracy", math.Round(rep.BM25Accuracy*1e4)/1e4)
	_, err = SetHead(ctx, staged, hf)
	return err
}

// IndexText is the text BM25 and LSA see for a node: title then text.
func IndexText(n *corpus.Node) string {
	if n.Title == "" {
		return n.Text
	}
	return n.Title + "\n" + n.Text
}

func buildPostings(ctx context.Context, c *corpus.Corpus, cfg *config, b *built) error {
	cfg.progress.Stage("analyze", len(c.Nodes))
	p, err := lexical.BuildPostings(ctx, len(c.Nodes), func(i int) string { return IndexText(&c.Nodes[i]) }, cfg.progress.Set)
	cfg.progress.Finish()
	if err != nil {
		return err
	}
	cfg.log.Info("postings built", "terms", p.Terms.Len(), "postings", len(p.Doc))
	b.post = p
	return nil
}

func buildVectors(ctx context.Context, c *corpus.Corpus, cfg *config, b *built) error {
	switch {
	case cfg.text != nil:
		return embedTexts(ctx, c, cfg, b)
	case cfg.embedder == EmbedderPrecomputed:
		return readPrecomputed(c, cfg, b)
	}
	cfg.progress.Stage("lsa fit", 0)
	m, err := lexical.FitLSA(ctx, b.post, cfg.lsa)
	cfg.progress.Finish()
	if err != nil {
		return err
	}
	b.lsa, b.dims = m, m.Dims
	b.vecs = make([]float32, len(c.Nodes)*m.Dims)
	cfg.progress.Stage("lsa embed", 0)
	m.EmbedDocs(b.post, b.vecs)
	cfg.progress.Finish()
	if m.Dims < cfg.lsa.Dims {
		cfg.log.Info("lsa: fewer dimensions than asked, as the fitted documents have no more (harmless)", "asked", cfg.lsa.Dims, "dims", m.Dims)
	}
	cfg.log.Info("lsa fitted", "dims", m.Dims, "terms", len(m.IDF), "fit_docs", m.FitDocs)
	return nil
}

// embedBatch is how many node texts one Embed call receives.
const embedBatch = 64

func embedTexts(ctx context.Context, c *corpus.Corpus, cfg *config, b *built) error {
	e, d := cfg.text, cfg.text.Dim()
	b.vecs, b.dims = make([]float32, 0, len(c.Nodes)*d), d
	cfg.progress.Stage("embed", len(c.Nodes))
	defer cfg.progress.Finish()
	for lo := 0; lo < len(c.Nodes); lo += embedBatch {
		hi := min(lo+embedBatch, len(c.Nodes))
		texts := make([]string, 0, hi-lo)
		for i := lo; i < hi; i++ {
			texts = append(texts, IndexText(&c.Nodes[i]))
		}
		v, err := e.Embed(ctx, texts)
		if err != nil {
			return fmt.Errorf("index: embedding nodes %d–%d with %s: %w", lo, hi-1, e.Name(), err)
		}
		if len(v) != len(texts)*d {
			return fmt.Errorf("index: embedder %s returned %d values for %d texts of %d dims", e.Name(), len(v), len(texts), d)
		}
		if err := models.CheckFinite(v, d); err != nil {
			return fmt.Errorf("index: embedder %s, nodes from %q: %w", e.Name(), c.Nodes[lo].ID, err)
		}
		if cfg.metric == MetricCosine {
			for i := 0; i < len(texts); i++ {
				normalize(v[i*d : (i+1)*d])
			}
		}
		b.vecs = append(b.vecs, v...)
		cfg.progress.Set(hi)
	}
	return nil
}

func readPrecomputed(c *corpus.Corpus, cfg *config, b *built) error {
	ids := make([]string, len(c.Nodes))
	for i := range c.Nodes {
		ids[i] = c.Nodes[i].ID
	}
	v, d, err := models.ReadVectors(cfg.vectors, ids)
	if err != nil {
		return err
	}
	if cfg.metric == MetricCosine {
		for i := range ids {
			if !normalize(v[i*d : (i+1)*d]) {
				return &corpus.RecordError{File: cfg.vectors, Line: i + 1, Field: "vector", Err: fmt.Errorf("vector of %q is all zeros; cosine is undefined", ids[i])}
			}
		}
	}
	b.vecs, b.dims = v, d
	return nil
}

// normalize scales v to unit length; it reports false for a zero vector.
func normalize(v []float32) bool {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 {
		return false
	}
	inv := 1 / math.Sqrt(s)
	for i := range v {
		v[i] = float32(float64(v[i]) * inv)
	}
	return true
}

func buildGraph(_ context.Context, c *corpus.Corpus, cfg *config, b *built) error {
	ids := c.NodeIndex()
	relID := map[[2]string]int32{}
	kinds := map[string]bool{}
	edges := make([]graphops.Edge, len(c.Edges))
	for i, e := range c.Edges {
		key := [2]string{e.Kind, e.Rel}
		r, ok := relID[key]
		if !ok {
			r = int32(len(b.rels.Relations))
			relID[key] = r
			b.rels.Relations = append(b.rels.Relations, e.Rel)
			b.rels.Kinds = append(b.rels.Kinds, e.Kind)
		}
		kinds[e.Kind] = true
		w := e.Weight
		if w == 0 {
			w = 1
		}
		edges[i] = graphops.Edge{Src: int32(ids[e.Src]), Dst: int32(ids[e.Dst]), W: float32(w), Rel: r}
	}
	g, err := graphops.Build(len(c.Nodes), edges, true)
	if err != nil {
		return err
	}
	b.graph = g
	cfg.log.Info("graph built", "edges", len(edges), "relations", len(b.rels.Relations))
	return nil
}

func write(ctx context.Context, c *corpus.Corpus, dir string, cfg *config, b *built) error {
	cfg.progress.Stage("write", 0)
	defer cfg.progress.Finish()
	return store.Build(dir, func(w *store.Writer) (map[string]any, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for _, f := range []func(*store.Writer) error{
			func(w *store.Writer) error { return writeNodes(w, c.Nodes) },
			func(w *store.Writer) error { return writeProvenance(w, c.Nodes) },
			b.writeGraph, b.writePostings, b.writeVectors,
		} {
			if err := f(w); err != nil {
				return nil, err
			}
		}
		return b.meta(c, cfg), nil
	})
}

func writeNodes(w *store.Writer, nodes []corpus.Node) error {
	off := make([]int64, 0, len(nodes)*nodeFields+1)
	off = append(off, 0)
	err := w.Stream(fNodeStrings, store.KindBytes, func(out io.Writer) error {
		var pos int64
		for i := range nodes {
			n := &nodes[i]
			for _, s := range [nodeFields]string{n.ID, n.Title, n.Text, n.Type, strings.Join(n.Aliases, aliasSep)} {
				k, err := io.WriteString(out, s)
				if err != nil {
					return err
				}
				pos += int64(k)
				off = append(off, pos)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return w.I64(fNodeOff, off)
}

func (b *built) writeGraph(w *store.Writer) error {
	g := b.graph
	return firstErr(
		w.I64(fOutPtr, g.Out.Ptr), w.I32(fOutIdx, g.Out.Idx), w.F32(fOutW, g.Out.W), w.I32(fOutRel, g.Out.Rel),
		w.I64(fInPtr, g.In.Ptr), w.I32(fInIdx, g.In.Idx), w.F32(fInW, g.In.W), w.I32(fInRel, g.In.Rel),
		w.JSON(fRelations, b.rels),
	)
}

func (b *built) writePostings(w *store.Writer) error {
	p := b.post
	return firstErr(
		w.Bytes(fTermBlob, p.Terms.Blob), w.I64(fTermOff, p.Terms.Off), w.I64(fPostPtr, p.Ptr),
		w.U32(fPostDoc, p.Doc), w.U32(fPostTF, p.TF), w.U32(fDocLen, p.DocLen),
	)
}

func (b *built) writeVectors(w *store.Writer) error {
	if err := w.F32(fVectors, b.vecs); err != nil {
		return err
	}
	if b.lsa == nil {
		return nil
	}
	return firstErr(w.I32(fLSARow, b.lsa.Row), w.F32(fLSAIDF, b.lsa.IDF), w.F32(fLSAV, b.lsa.V))
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func (b *built) meta(c *corpus.Corpus, cfg *config) map[string]any {
	m := Meta{Nodes: len(c.Nodes), Edges: len(c.Edges), Dims: b.dims, Embedder: cfg.embedder, Metric: cfg.metric,
		BM25:  map[string]any{"k1": cfg.bm25.K1, "b": cfg.bm25.B},
		Terms: b.post.Terms.Len(), Postings: len(b.post.Doc), Relations: len(b.rels.Relations), Source: cfg.source}
	if b.lsa != nil {
		m.LSA = map[string]any{"dims": b.lsa.Dims, "asked_dims": cfg.lsa.Dims, "terms": len(b.lsa.IDF), "min_df": cfg.lsa.MinDF,
			"max_df_ratio": cfg.lsa.MaxDFRatio, "oversample": cfg.lsa.Oversample, "power_iters": cfg.lsa.PowerIters, "seed": cfg.lsa.Seed,
			"sample_docs": cfg.lsa.SampleDocs, "fit_docs": b.lsa.FitDocs}
	}
	m.GraphKinds = b.rels.kindList()
	return map[string]any{"index": m}
}

// kindList lists the distinct edge kinds in first-seen order.
func (t relationTable) kindList() []string {
	var out []string
	for _, k := range t.Kinds {
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// CleanDebris removes what interrupted writes of dir left behind (a kill
// -9 cannot clean up after itself) and says so; folders another process
// is still writing are named and kept.
func CleanDebris(log *slog.Logger, dir string) {
	removed, restored, busy := store.CleanDebris(dir)
	if len(restored) > 0 {
		log.Warn("moved your files back into the index folder from where an interrupted write left them", "files", restored)
	}
	if len(removed) > 0 {
		log.Warn("removed hidden folders left by interrupted writes", "folders", removed)
	}
	if len(busy) > 0 {
		log.Warn("hidden folders left alone: writes still running in another process, or folders holding versions of your files (not the index's) that differ from those in the index folder; compare them and remove the folder by hand", "folders", busy)
	}
}
