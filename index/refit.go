package index

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/gleaner-rag/gleaner/models/lexical"
)

// Live changes fold added passages into the LSA basis fitted at build
// time, so an index that has changed much answers vector queries from a
// basis fitted on another corpus. Refit fits the basis again on the
// index's passages as they are, as a build of them would.

// ErrNotLSA is returned by Refit for an index whose vectors do not come
// from LSA.
var ErrNotLSA = errors.New("its vectors are not LSA's")

// LSAOptions are the LSA options the index was built with (Meta.LSA), for
// a refit; false when its vectors are not LSA's.
func (ix *Index) LSAOptions() (lexical.LSAOptions, bool) {
	if ix.Meta.Embedder != EmbedderLSA || ix.Meta.LSA == nil {
		return lexical.LSAOptions{}, false
	}
	o := lexical.DefaultLSA()
	num := func(k string, def float64) float64 {
		if v, ok := ix.Meta.LSA[k].(float64); ok {
			return v
		}
		return def
	}
	o.Dims = int(num("asked_dims", num("dims", float64(o.Dims))))
	o.MinDF = int(num("min_df", float64(o.MinDF)))
	o.MaxDFRatio = num("max_df_ratio", o.MaxDFRatio)
	o.Oversample = int(num("oversample", float64(o.Oversample)))
	o.PowerIters = int(num("power_iters", float64(o.PowerIters)))
	o.Seed = uint64(num("seed", float64(o.Seed)))
	o.SampleDocs = int(num("sample_docs", float64(o.SampleDocs)))
	return o, true
}

// Refit returns ix with its LSA basis fitted again on its passages and
// every vector made anew from it, as `gleaner index` fits and embeds a
// corpus. What was derived from the vectors goes stale: sections whose
// type says so (SectionType.FromVectors) and derived edge kinds that no
// updater keeps (knn); a refresh builds them again. ix is not changed;
// the result shares ix's other data (ix must stay open while it is used).
// An index with deleted nodes is compacted first: the basis is fitted on
// the live passages alone, as a rebuild fits it.
func (ix *Index) Refit(ctx context.Context) (*Index, error) {
	if ix.ndead > 0 {
		c, err := ix.Compact(ctx)
		if err != nil {
			return nil, err
		}
		return c.Refit(ctx)
	}
	o, ok := ix.LSAOptions()
	if !ok {
		return nil, fmt.Errorf("index %s: %w: they come from %q; a refit applies to LSA (rebuild the index to change its embedder)", ix.Dir, ErrNotLSA, ix.Meta.Embedder)
	}
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("index %s: its recorded LSA options: %w", ix.Dir, err)
	}
	if s, ok := ix.Meta.LSA["seed"].(float64); ok && s >= 1<<53 {
		return nil, fmt.Errorf("index %s: its LSA seed %v is not recorded exactly (a JSON number past 2^53): rebuild the index to refit it", ix.Dir, s)
	}
	p := ix.Postings.Flat() // the fitted rows are over p's term ids
	m, err := lexical.FitLSA(ctx, p, o)
	if err != nil {
		return nil, err
	}
	vecs := make([]float32, ix.N()*m.Dims)
	m.EmbedDocs(p, vecs)
	if m.Dims == ix.Meta.Dims && slices.Equal(vecs, ix.Vectors) {
		return ix.successor(), nil // the same basis: nothing derived from the vectors changes
	}
	out := ix.successor()
	if p != ix.Postings {
		if out.BM25, err = lexical.NewBM25(p, ix.BM25Params()); err != nil {
			return nil, err
		}
		out.Postings = p
	}
	out.LSA, out.Vectors, out.Embedder = m, vecs, &lexical.LSAEmbedder{M: m, Terms: p.Terms}
	out.Meta.Dims = m.Dims
	out.Meta.LSA = maps.Clone(ix.Meta.LSA)
	out.Meta.LSA["dims"], out.Meta.LSA["terms"], out.Meta.LSA["fit_docs"] = float64(m.Dims), float64(len(m.IDF)), float64(m.FitDocs)
	out.staleFromVectors(ix)
	return out, nil
}

// staleFromVectors marks stale what ix derived from its vectors.
func (out *Index) staleFromVectors(ix *Index) {
	st := out.staleSections(ix, func(name string, _ SectionRecord) bool {
		t, ok := LookupSection(name)
		return ok && t.FromVectors
	})
	for _, k := range ix.Meta.GraphKinds {
		if ix.DerivedKind(k) && !hasKindUpdater(k) && !slices.Contains(st.GraphKinds, k) {
			st.GraphKinds = append(st.GraphKinds, k)
		}
	}
	st.Changes++
	if len(st.Sections)+len(st.GraphKinds) > 0 {
		out.Meta.Stale = st
	}
}

// hasKindUpdater reports whether kind's edges follow changes (and so are
// made from the text, not the vectors: mentions).
func hasKindUpdater(kind string) bool {
	kindMu.RLock()
	defer kindMu.RUnlock()
	_, ok := kindUpdaters[kind]
	return ok
}
