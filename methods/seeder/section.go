package seeder

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/models/safetensors"
	encoder "github.com/gleaner-rag/gleaner/models/seeder"
)

// SeedER's section: the config and training record, and the weights (with
// the PCA) as safetensors.
const (
	Section        = "seeder"
	sectionVersion = 1
	fConfig        = "encoder.json"
	fWeights       = "encoder.safetensors"
	trainHint      = "train one with `gleaner train seeder --index <dir>` (seeder.Train and seeder.Set)"
)

// ErrNoSeeder is returned by method seeder over an index without a
// trained encoder.
var ErrNoSeeder = &index.MissingError{What: "trained SeedER encoder", Hint: trainHint}

func init() {
	index.MustRegisterSection(index.SectionType{Name: Section, Version: sectionVersion, Update: index.Rebuild,
		Summary: "trained SeedER encoder", Hint: trainHint, Load: load, FromVectors: true})
}

// File is a trained SeedER encoder as stored in the index: its shape, the
// candidate-graph settings it was trained with, the training record, and
// (after loading) the model.
type File struct {
	Config encoder.Config        `json:"config"`
	K0     int                   `json:"k0"`
	Quotas []int                 `json:"khop_quotas"`
	Cap    int                   `json:"khop_cap"`
	Kinds  []string              `json:"graph_kinds,omitempty"`
	Vocab  []string              `json:"vocab,omitempty"` // the question words of Config.Words, by id
	Train  map[string]any        `json:"training"`
	Epochs []encoder.EpochReport `json:"epochs"`
	Model  *encoder.Model        `json:"-"`
	// Paths is the learned text side's shape (nil: none), PathVocab its
	// features by id, PathEpochs its training record; its tensors sit in
	// the weights file beside the encoder's.
	Paths      *encoder.PathConfig `json:"paths,omitempty"`
	PathVocab  []string            `json:"path_vocab,omitempty"`
	PathEpochs []encoder.PathEpoch `json:"path_epochs,omitempty"`
	paths      *pathModel
}

// Of returns the index's trained encoder, ErrNoSeeder, or why the stored
// one cannot be used (an older shape: retrain it; the index still opens).
func Of(ix *index.Index) (*File, error) {
	v, err := ix.Section(Section)
	if err != nil {
		return nil, err
	}
	return v.(*File), nil
}

// Set stores a trained encoder in the index at dir by an atomic rewrite,
// replacing any earlier one.
func Set(ctx context.Context, dir string, f *File) error {
	return index.SetSectionFunc(ctx, dir, func(ix *index.Index) error { return Store(ctx, ix, dir, f) })
}

// Store is Set from an index opened earlier (the one training read): when
// another writer replaced the index at dir since, it fails with
// index.ErrChanged rather than dropping that writer's work.
func Store(ctx context.Context, ix *index.Index, dir string, f *File) error {
	if f.Model == nil {
		return errors.New("seeder: storing an encoder needs a model")
	}
	if (f.Paths != nil) != (f.paths != nil) {
		return errors.New("seeder: storing a text side needs both its config and its trained scorer (seeder.Train gives both)")
	}
	if err := f.validate(); err != nil {
		return err
	}
	if d := len(f.Model.PCA.Mean); d != ix.Meta.Dims {
		return fmt.Errorf("index %s: the encoder's PCA reads %d-dimensional vectors, the index has %d", dir, d, ix.Meta.Dims)
	}
	ts := f.Model.Tensors()
	if f.paths != nil {
		maps.Copy(ts, f.paths.sc.Tensors())
	}
	var buf bytes.Buffer
	if err := safetensors.Write(&buf, ts); err != nil {
		return err
	}
	return ix.StoreSection(ctx, dir, Section, map[string]any{"epochs": len(f.Epochs), "config": f.Config}, func(w *index.SectionWriter) error {
		if err := w.JSON(fConfig, f); err != nil {
			return err
		}
		return w.Bytes(fWeights, buf.Bytes())
	})
}

// load reads the stored encoder.
func load(ix *index.Index, r *index.SectionReader) (any, error) {
	var f File
	if err := r.JSON(fConfig, &f); err != nil {
		return nil, err
	}
	if err := f.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", fConfig, err)
	}
	b, err := r.Bytes(fWeights)
	if err != nil {
		return nil, err
	}
	ts, err := safetensors.Parse(b, fWeights)
	if err != nil {
		return nil, err
	}
	if f.Model, err = encoder.FromTensors(f.Config, ts); err != nil {
		return nil, fmt.Errorf("%s: %w", fWeights, err)
	}
	if d := len(f.Model.PCA.Mean); d != ix.Meta.Dims {
		return nil, fmt.Errorf("%s: the PCA reads %d-dimensional vectors, the index has %d", fWeights, d, ix.Meta.Dims)
	}
	if f.Paths != nil {
		if f.Paths.Relations != ix.Meta.Relations {
			return nil, fmt.Errorf("%s: the text side knows %d relations, the index has %d", fConfig, f.Paths.Relations, ix.Meta.Relations)
		}
		text := newPathText(ix, f.PathVocab)
		sc, err := encoder.PathScorerFromTensors(*f.Paths, text.names, ts)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fWeights, err)
		}
		f.paths = &pathModel{sc: sc, text: text}
	}
	return &f, nil
}

// validate checks the config and that the vocabulary matches it.
func (f *File) validate() error {
	if err := f.Config.Validate(); err != nil {
		return err
	}
	if len(f.Vocab) != f.Config.Words {
		return fmt.Errorf("seeder: %d vocabulary words for a model of %d", len(f.Vocab), f.Config.Words)
	}
	switch {
	case f.Paths == nil && f.Config.Paths != 0:
		return fmt.Errorf("seeder: the encoder reads %d hops of path features and there is no text side", f.Config.Paths)
	case f.Paths != nil && f.Paths.Features != len(f.PathVocab):
		return fmt.Errorf("seeder: %d text-side features for a scorer of %d", len(f.PathVocab), f.Paths.Features)
	case f.Paths != nil && f.Paths.Hops != f.Config.Paths:
		return fmt.Errorf("seeder: the text side scores %d hops, the encoder reads %d", f.Paths.Hops, f.Config.Paths)
	}
	return nil
}
