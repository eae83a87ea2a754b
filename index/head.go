package index

import (
	"context"
	"errors"
	"fmt"

	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/models"
	"github.com/gleaner-rag/gleaner/models/lexical"
)

const (
	fHead     = "head.json"
	fHeadPrev = "head.previous.json" // the head SetHead replaced, for RestorePreviousHead
)

// HeadFile is a trained head of the embedded lexical cross-encoder, with
// the feature standardisation it was trained on, stored as head.json.
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
var ErrNoHead = errors.New("index: no trained cross-encoder head (index.Build trains one unless WithoutHead; TrainHead and SetHead add one to an index)")

func (ix *Index) loadHead() error {
	if !ix.r.Has(fHead) {
		return nil
	}
	var h HeadFile
	if err := ix.r.JSON(fHead, &h); err != nil {
		return err
	}
	if err := h.validate(); err != nil {
		return err
	}
	ix.head = &h
	return nil
}

// HeadFile returns the stored head, or nil.
func (ix *Index) HeadFile() *HeadFile { return ix.head }

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
// head, or ErrNoHead.
func (ix *Index) CrossEncoder() (*models.CrossEncoder, error) {
	if ix.head == nil {
		return nil, ErrNoHead
	}
	enc := &lexical.Encoder{M: ix.InteractionModel(), Mean: ix.head.Mean, Std: ix.head.Std}
	return &models.CrossEncoder{Enc: enc, Head: ix.head.Head()}, nil
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
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	meta := ix.Meta
	meta.Head = h.Encoder
	prev := ix.head
	return prev, ix.rewrite(dir, []string{fHead, fHeadPrev}, func(w *store.Writer) error {
		if prev != nil {
			if err := w.JSON(fHeadPrev, prev); err != nil {
				return err
			}
		}
		return w.JSON(fHead, h)
	}, meta)
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
	if !ix.r.Has(fHeadPrev) {
		ix.Close()
		return nil, ErrNoPreviousHead
	}
	var prev HeadFile
	err = ix.r.JSON(fHeadPrev, &prev)
	ix.Close()
	if err != nil {
		return nil, err
	}
	_, err = SetHead(ctx, dir, &prev)
	return &prev, err
}
