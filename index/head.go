package index

import (
	"context"
	"errors"
	"fmt"

	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/models"
	"github.com/gleaner-rag/gleaner/models/lexical"
)

// The head section: the trained head of the embedded lexical
// cross-encoder, and the one it replaced (for RestorePreviousHead).
const (
	headSection  = "head"
	fHead        = "current.json"
	fHeadPrev    = "previous.json"
	headVersion  = 1
	headHintText = "train one with `gleaner train head --index <dir>` (index.TrainHead and SetHead), or rebuild with `gleaner index` (it trains one by default)"
)

func init() {
	// The head scores (question, passage) text pairs from features the
	// current postings give, so it serves added passages as it serves the
	// others: it follows changes (retrain it at will).
	MustRegisterSection(SectionType{Name: headSection, Version: headVersion, Update: Incremental,
		Summary: "trained cross-encoder head", Hint: headHintText, Load: loadHead})
}

// HeadFile is a trained head of the embedded lexical cross-encoder, with
// the feature standardisation it was trained on.
type HeadFile struct {
	Encoder  string         `json:"encoder"`
	Features []string       `json:"features"`
	Mean     []float32      `json:"mean"`
	Std      []float32      `json:"std"`
	Hidden   int            `json:"hidden"`
	Dense    []float32      `json:"dense"`
	DenseB   []float32      `json:"dense_bias"`
	Out      []float32      `json:"out"`
	OutB     float32        `json:"out_bias"`
	Training map[string]any `json:"training,omitempty"`
}

// Head returns the head as a models.Head.
func (h *HeadFile) Head() *models.Head {
	return &models.Head{In: len(h.Features), Hidden: h.Hidden, Dense: h.Dense, DenseB: h.DenseB, Out: h.Out, OutB: h.OutB}
}

// validate checks the head against the features this gleaner computes.
func (h *HeadFile) validate() error {
	if h.Encoder != "lexical" {
		return fmt.Errorf("head for encoder %q; this index stores lexical heads only", h.Encoder)
	}
	if len(h.Features) != lexical.NumFeatures || len(h.Mean) != lexical.NumFeatures || len(h.Std) != lexical.NumFeatures {
		return fmt.Errorf("head has %d features, this gleaner computes %d; retrain it (index.TrainHead)", len(h.Features), lexical.NumFeatures)
	}
	for i, f := range lexical.FeatureNames {
		if h.Features[i] != f {
			return fmt.Errorf("head feature %d is %q, this gleaner computes %q; retrain it", i, h.Features[i], f)
		}
	}
	for _, s := range h.Std {
		if !(s > 0) {
			return errors.New("head has a non-positive standard deviation")
		}
	}
	return h.Head().Validate()
}

// ErrNoHead is returned when a method needs the lexical cross-encoder and
// the index has no trained head.
var ErrNoHead = &MissingError{What: "trained cross-encoder head", Hint: headHintText}

// heads is the loaded head section.
type heads struct{ cur, prev *HeadFile }

func loadHead(_ *Index, r *SectionReader) (any, error) {
	var h heads
	for _, f := range []struct {
		name string
		dst  **HeadFile
	}{{fHead, &h.cur}, {fHeadPrev, &h.prev}} {
		if !r.Has(f.name) {
			continue
		}
		var hf HeadFile
		if err := r.JSON(f.name, &hf); err != nil {
			return nil, err
		}
		if err := hf.validate(); err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
		*f.dst = &hf
	}
	if h.cur == nil {
		return nil, fmt.Errorf("no %s", fHead)
	}
	return &h, nil
}

// heads returns the loaded head section (nil when there is none).
func (ix *Index) heads() (*heads, error) {
	v, err := ix.Section(headSection)
	if err != nil {
		return nil, err
	}
	return v.(*heads), nil
}

// HeadFile returns the stored head, or nil.
func (ix *Index) HeadFile() *HeadFile {
	h, err := ix.heads()
	if err != nil {
		return nil
	}
	return h.cur
}

// InteractionModel returns the lexical feature model over this index.
func (ix *Index) InteractionModel() *lexical.InteractionModel {
	m := &lexical.InteractionModel{P: ix.Postings, BM: ix.BM25, Src: ix}
	if ix.Embedder != nil {
		m.EmbedQuery = func(text string) []float32 {
			v, err := ix.EmbedQuery(context.Background(), text)
			if err != nil {
				return nil
			}
			return v
		}
	}
	return m
}

// CrossEncoder returns the embedded lexical cross-encoder with the stored
// head, or ErrNoHead (or why the stored head cannot be used).
func (ix *Index) CrossEncoder() (*models.CrossEncoder, error) {
	h, err := ix.heads()
	if err != nil {
		return nil, err
	}
	enc := &lexical.Encoder{M: ix.InteractionModel(), Mean: h.cur.Mean, Std: h.cur.Std}
	return &models.CrossEncoder{Enc: enc, Head: h.cur.Head()}, nil
}

// SetHead stores a trained head in the index at dir, by an atomic rewrite.
// It returns the head it replaced (nil if none), which stays in the index
// as the previous head: RestorePreviousHead brings it back.
func SetHead(ctx context.Context, dir string, h *HeadFile) (replaced *HeadFile, err error) {
	if err := h.validate(); err != nil {
		return nil, err
	}
	ix, err := Open(dir, store.OpenOptions{})
	if err != nil {
		return nil, err
	}
	defer ix.Close()
	prev := ix.HeadFile()
	return prev, ix.StoreSection(ctx, dir, headSection, map[string]string{"encoder": h.Encoder}, func(w *SectionWriter) error {
		if prev != nil {
			if err := w.JSON(fHeadPrev, prev); err != nil {
				return err
			}
		}
		return w.JSON(fHead, h)
	})
}

// ErrNoPreviousHead is returned by RestorePreviousHead when SetHead never
// replaced a head in this index.
var ErrNoPreviousHead = errors.New("index: no previous head to restore")

// RestorePreviousHead swaps the current head and the one SetHead replaced,
// and returns the restored head.
func RestorePreviousHead(ctx context.Context, dir string) (*HeadFile, error) {
	ix, err := Open(dir, store.OpenOptions{})
	if err != nil {
		return nil, err
	}
	h, err := ix.heads()
	ix.Close()
	if errors.Is(err, ErrNotBuilt) || (err == nil && h.prev == nil) {
		return nil, ErrNoPreviousHead
	}
	if err != nil {
		return nil, err
	}
	_, err = SetHead(ctx, dir, h.prev)
	return h.prev, err
}
