package index

import (
	"context"
	"errors"
	"fmt"

	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/models"
)

// ketragStrings, ketragI32, ketragF32 and ketragCSRs name KET-RAG's files
// (docs/index-format.md): strings as prefix.bytes + prefix_off.i64, CSRs
// as prefix_ptr.i64 + prefix_idx.i32.
var (
	ketragStrings = []struct {
		prefix string
		get    func(*KETRAG) *Strings
	}{
		{"ketrag_pieces", func(k *KETRAG) *Strings { return &k.Pieces }},
		{"ketrag_entity_names", func(k *KETRAG) *Strings { return &k.EntityNames }},
		{"ketrag_entity_types", func(k *KETRAG) *Strings { return &k.EntityTypes }},
		{"ketrag_entity_descs", func(k *KETRAG) *Strings { return &k.EntityDescs }},
		{"ketrag_rel_descs", func(k *KETRAG) *Strings { return &k.RelDescs }},
		{"ketrag_keywords", func(k *KETRAG) *Strings { return &k.Keywords }},
	}
	ketragI32 = []struct {
		name string
		get  func(*KETRAG) *[]int32
	}{
		{"ketrag_node_tokens.i32", func(k *KETRAG) *[]int32 { return &k.NodeTokens }},
		{"ketrag_core.i32", func(k *KETRAG) *[]int32 { return &k.Core }},
		{"ketrag_rank_order.i32", func(k *KETRAG) *[]int32 { return &k.RankOrder }},
		{"ketrag_piece_tokens.i32", func(k *KETRAG) *[]int32 { return &k.PieceTokens }},
		{"ketrag_piece_unit.i32", func(k *KETRAG) *[]int32 { return &k.PieceUnit }},
		{"ketrag_entity_rank.i32", func(k *KETRAG) *[]int32 { return &k.EntityRank }},
		{"ketrag_rel_src.i32", func(k *KETRAG) *[]int32 { return &k.RelSrc }},
		{"ketrag_rel_dst.i32", func(k *KETRAG) *[]int32 { return &k.RelDst }},
	}
	ketragF32 = []struct {
		name string
		get  func(*KETRAG) *[]float32
	}{
		{"ketrag_pagerank.f32", func(k *KETRAG) *[]float32 { return &k.PageRank }},
		{"ketrag_entity_vectors.f32", func(k *KETRAG) *[]float32 { return &k.EntityVecs }},
		{"ketrag_rel_weight.f32", func(k *KETRAG) *[]float32 { return &k.RelWeight }},
		{"ketrag_rel_vectors.f32", func(k *KETRAG) *[]float32 { return &k.RelVecs }},
		{"ketrag_keyword_vectors.f32", func(k *KETRAG) *[]float32 { return &k.KeywordVecs }},
	}
	ketragCSRs = []struct {
		prefix string
		get    func(*KETRAG) *graphops.CSR
	}{
		{"ketrag_entity_pieces", func(k *KETRAG) *graphops.CSR { return &k.EntityPieces }},
		{"ketrag_rel_pieces", func(k *KETRAG) *graphops.CSR { return &k.RelPieces }},
		{"ketrag_keyword_chunks", func(k *KETRAG) *graphops.CSR { return &k.KeywordChunks }},
	}
)

const fKETRAGUnitPtr = "ketrag_unit_ptr.i64"

// ketragFiles lists every KET-RAG file (what SetKETRAG replaces).
func ketragFiles() []string {
	fs := []string{fKETRAGUnitPtr}
	for _, s := range ketragStrings {
		fs = append(fs, s.prefix+".bytes", s.prefix+"_off.i64")
	}
	for _, a := range ketragI32 {
		fs = append(fs, a.name)
	}
	for _, a := range ketragF32 {
		fs = append(fs, a.name)
	}
	for _, c := range ketragCSRs {
		fs = append(fs, c.prefix+"_ptr.i64", c.prefix+"_idx.i32")
	}
	return fs
}

// SetKETRAG builds KET-RAG's structures for the index at dir and stores
// them in the index, replacing earlier ones; the rewrite is atomic (a
// crash leaves the old index). e is the index's embedder when it is not
// LSA (nil: the index's own).
func SetKETRAG(ctx context.Context, dir string, e models.Embedder, o KETRAGOptions) (*KETRAGMeta, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	ix, err := openWithEmbedder(dir, e)
	if err != nil {
		return nil, err
	}
	defer ix.Close()
	k, err := BuildKETRAG(ctx, ix, o)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	meta := ix.Meta
	meta.KETRAG = &k.Meta
	o.Progress.Stage("write", 0)
	defer o.Progress.Finish()
	return &k.Meta, ix.rewrite(dir, ketragFiles(), k.write, meta)
}

func (k *KETRAG) write(w *store.Writer) error {
	errs := []error{w.I64(fKETRAGUnitPtr, k.UnitPtr)}
	for _, s := range ketragStrings {
		st := s.get(k)
		errs = append(errs, w.Bytes(s.prefix+".bytes", st.blob), w.I64(s.prefix+"_off.i64", st.off))
	}
	for _, a := range ketragI32 {
		errs = append(errs, w.I32(a.name, *a.get(k)))
	}
	for _, a := range ketragF32 {
		errs = append(errs, w.F32(a.name, *a.get(k)))
	}
	for _, c := range ketragCSRs {
		g := c.get(k)
		errs = append(errs, w.I64(c.prefix+"_ptr.i64", g.Ptr), w.I32(c.prefix+"_idx.i32", g.Idx))
	}
	return errors.Join(errs...)
}

// loadKETRAG maps the KET-RAG structures when the manifest describes them.
func (ix *Index) loadKETRAG() error {
	if ix.Meta.KETRAG == nil {
		return nil
	}
	k := &KETRAG{Meta: *ix.Meta.KETRAG}
	var errs []error
	var err error
	k.UnitPtr, err = ix.r.I64(fKETRAGUnitPtr)
	errs = append(errs, err)
	for _, s := range ketragStrings {
		st := s.get(k)
		st.blob, err = ix.r.Bytes(s.prefix + ".bytes")
		errs = append(errs, err)
		st.off, err = ix.r.I64(s.prefix + "_off.i64")
		errs = append(errs, err)
	}
	for _, a := range ketragI32 {
		*a.get(k), err = ix.r.I32(a.name)
		errs = append(errs, err)
	}
	for _, a := range ketragF32 {
		*a.get(k), err = ix.r.F32(a.name)
		errs = append(errs, err)
	}
	for _, c := range ketragCSRs {
		g := c.get(k)
		g.Ptr, err = ix.r.I64(c.prefix + "_ptr.i64")
		errs = append(errs, err)
		g.Idx, err = ix.r.I32(c.prefix + "_idx.i32")
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("ketrag: %w", err)
	}
	if err := k.check(ix.N(), ix.Meta.Dims); err != nil {
		return fmt.Errorf("index %s: ketrag: %w", ix.Dir, err)
	}
	k.deriveEntityRels()
	ix.KETRAG = k
	return nil
}

// check validates every array against the manifest's counts, so a
// damaged or crafted index is an error, never a panic at query time.
func (k *KETRAG) check(n, dims int) error {
	m := k.Meta
	for _, s := range []struct {
		name string
		st   Strings
		want int
	}{{"pieces", k.Pieces, m.Pieces}, {"entity names", k.EntityNames, m.Entities}, {"entity types", k.EntityTypes, m.Entities},
		{"entity descriptions", k.EntityDescs, m.Entities}, {"relationship descriptions", k.RelDescs, m.Relationships}, {"keywords", k.Keywords, m.Keywords}} {
		if err := s.st.check(s.want); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	lens := []struct {
		name      string
		got, want int
	}{
		{"node tokens", len(k.NodeTokens), n}, {"pagerank", len(k.PageRank), n}, {"rank order", len(k.RankOrder), n}, {"core", len(k.Core), m.Core},
		{"unit pointers", len(k.UnitPtr), m.Units + 1}, {"piece tokens", len(k.PieceTokens), m.Pieces}, {"piece units", len(k.PieceUnit), m.Pieces},
		{"entity ranks", len(k.EntityRank), m.Entities}, {"entity vectors", len(k.EntityVecs), m.Entities * dims},
		{"relationship sources", len(k.RelSrc), m.Relationships}, {"relationship targets", len(k.RelDst), m.Relationships},
		{"relationship weights", len(k.RelWeight), m.Relationships}, {"relationship vectors", len(k.RelVecs), m.Relationships * dims},
		{"keyword vectors", len(k.KeywordVecs), m.Keywords * dims},
	}
	for _, l := range lens {
		if l.got != l.want {
			return fmt.Errorf("%s: %d values, the manifest implies %d", l.name, l.got, l.want)
		}
	}
	for _, ids := range []struct {
		name string
		v    []int32
		max  int
	}{{"core", k.Core, n}, {"rank order", k.RankOrder, n}, {"piece units", k.PieceUnit, m.Units}, {"relationship sources", k.RelSrc, m.Entities}, {"relationship targets", k.RelDst, m.Entities}} {
		for i, x := range ids.v {
			if x < 0 || int(x) >= ids.max {
				return fmt.Errorf("%s[%d] = %d: out of range [0, %d)", ids.name, i, x, ids.max)
			}
		}
	}
	for i := 0; i < m.Units; i++ {
		if k.UnitPtr[i] > k.UnitPtr[i+1] || k.UnitPtr[0] != 0 || k.UnitPtr[m.Units] != int64(m.Core) {
			return fmt.Errorf("unit pointers do not cover the %d core chunks in order", m.Core)
		}
	}
	for _, c := range []struct {
		name       string
		g          graphops.CSR
		rows, cols int
	}{{"entity pieces", k.EntityPieces, m.Entities, m.Pieces}, {"relationship pieces", k.RelPieces, m.Relationships, m.Pieces},
		{"keyword chunks", k.KeywordChunks, m.Keywords, n}} {
		if err := checkRect(c.g, c.rows, c.cols); err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
	}
	return nil
}

func (s Strings) check(n int) error {
	if len(s.off) != n+1 || s.off[0] != 0 || s.off[n] != int64(len(s.blob)) {
		return fmt.Errorf("offsets do not match %d strings", n)
	}
	for i := 0; i < n; i++ {
		if s.off[i] > s.off[i+1] {
			return fmt.Errorf("offsets decrease at %d", i)
		}
	}
	return nil
}

// checkRect validates an unweighted rows × cols CSR read from disk.
func checkRect(g graphops.CSR, rows, cols int) error {
	if len(g.Ptr) != rows+1 || g.Ptr[0] != 0 || g.Ptr[rows] != int64(len(g.Idx)) {
		return fmt.Errorf("pointers do not cover %d rows and %d entries", rows, len(g.Idx))
	}
	for v := 0; v < rows; v++ {
		if g.Ptr[v] > g.Ptr[v+1] {
			return fmt.Errorf("pointers decrease at row %d", v)
		}
	}
	for i, u := range g.Idx {
		if u < 0 || int(u) >= cols {
			return fmt.Errorf("entry %d names column %d of %d", i, u, cols)
		}
	}
	return nil
}
