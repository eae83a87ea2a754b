package index

import (
	"bytes"
	"context"
	"fmt"

	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/models/safetensors"
	"github.com/gleaner-rag/gleaner/models/seeder"
)

// SeedER's files: the config and training record, and the weights (with
// the PCA) as safetensors.
const (
	fSeeder        = "seeder.json"
	fSeederWeights = "seeder.safetensors"
)

// SeederFile is a trained SeedER encoder as stored in the index: its
// shape, the candidate-graph settings it was trained with, the training
// record, and (after loading) the model.
type SeederFile struct {
	Config seeder.Config        `json:"config"`
	K0     int                  `json:"k0"`
	Quotas []int                `json:"khop_quotas"`
	Cap    int                  `json:"khop_cap"`
	Kinds  []string             `json:"graph_kinds,omitempty"`
	Vocab  []string             `json:"vocab,omitempty"` // the question words of Config.Words, by id
	Train  map[string]any       `json:"training"`
	Epochs []seeder.EpochReport `json:"epochs"`
	Model  *seeder.Model        `json:"-"`
}

// SetSeeder stores a trained encoder in the index at dir by an atomic
// rewrite, replacing any earlier one.
func SetSeeder(ctx context.Context, dir string, f *SeederFile) error {
	ix, err := Open(dir, store.OpenOptions{})
	if err != nil {
		return err
	}
	defer ix.Close()
	return ix.StoreSeeder(ctx, dir, f)
}

// StoreSeeder is SetSeeder from an index opened earlier (the one training
// read): when another writer replaced the index at dir since, it fails
// with ErrChanged rather than dropping that writer's work.
func (ix *Index) StoreSeeder(ctx context.Context, dir string, f *SeederFile) error {
	if f.Model == nil {
		return fmt.Errorf("index: storing a SeedER encoder needs a model")
	}
	if err := f.validate(); err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := safetensors.Write(&buf, f.Model.Tensors()); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if d := len(f.Model.PCA.Mean); d != ix.Meta.Dims {
		return fmt.Errorf("index %s: the encoder's PCA reads %d-dimensional vectors, the index has %d", dir, d, ix.Meta.Dims)
	}
	return ix.rewrite(dir, []string{fSeeder, fSeederWeights}, func(w *store.Writer) error {
		if err := w.JSON(fSeeder, f); err != nil {
			return err
		}
		return w.Bytes(fSeederWeights, buf.Bytes())
	}, ix.Meta)
}

// loadSeeder reads the stored encoder. One this gleaner cannot use (an
// older shape) does not stop the index opening, so it can be retrained:
// SeederError says why, and method seeder reports it.
func (ix *Index) loadSeeder() error {
	if !ix.r.Has(fSeeder) {
		return nil
	}
	f, err := ix.readSeeder()
	if err != nil {
		ix.seederErr = fmt.Errorf("index %s: the stored SeedER encoder cannot be used (%w); retrain it: gleaner train seeder --index %s", ix.Dir, err, ix.Dir)
		return nil
	}
	ix.Seeder = f
	return nil
}

// SeederError is why a stored encoder was not loaded (nil when there is
// none, or it loaded).
func (ix *Index) SeederError() error { return ix.seederErr }

func (ix *Index) readSeeder() (*SeederFile, error) {
	var f SeederFile
	if err := ix.r.JSON(fSeeder, &f); err != nil {
		return nil, err
	}
	if err := f.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", fSeeder, err)
	}
	b, err := ix.r.Bytes(fSeederWeights)
	if err != nil {
		return nil, err
	}
	ts, err := safetensors.Parse(b, fSeederWeights)
	if err != nil {
		return nil, err
	}
	if f.Model, err = seeder.FromTensors(f.Config, ts); err != nil {
		return nil, fmt.Errorf("%s: %w", fSeederWeights, err)
	}
	if d := len(f.Model.PCA.Mean); d != ix.Meta.Dims {
		return nil, fmt.Errorf("%s: the PCA reads %d-dimensional vectors, the index has %d", fSeederWeights, d, ix.Meta.Dims)
	}
	return &f, nil
}

// validate checks the config and that the vocabulary matches it.
func (f *SeederFile) validate() error {
	if err := f.Config.Validate(); err != nil {
		return err
	}
	if len(f.Vocab) != f.Config.Words {
		return fmt.Errorf("seeder: %d vocabulary words for a model of %d", len(f.Vocab), f.Config.Words)
	}
	return nil
}
