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
	Train  map[string]any       `json:"training"`
	Epochs []seeder.EpochReport `json:"epochs"`
	Model  *seeder.Model        `json:"-"`
}

// SetSeeder stores a trained encoder in the index at dir by an atomic
// rewrite, replacing any earlier one.
func SetSeeder(ctx context.Context, dir string, f *SeederFile) error {
	if f.Model == nil {
		return fmt.Errorf("index: SetSeeder needs a model")
	}
	if err := f.Config.Validate(); err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := safetensors.Write(&buf, f.Model.Tensors()); err != nil {
		return err
	}
	ix, err := Open(dir, store.OpenOptions{})
	if err != nil {
		return err
	}
	defer ix.Close()
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

func (ix *Index) loadSeeder() error {
	if !ix.r.Has(fSeeder) {
		return nil
	}
	var f SeederFile
	if err := ix.r.JSON(fSeeder, &f); err != nil {
		return err
	}
	b, err := ix.r.Bytes(fSeederWeights)
	if err != nil {
		return err
	}
	ts, err := safetensors.Parse(b, fSeederWeights)
	if err != nil {
		return err
	}
	if f.Model, err = seeder.FromTensors(f.Config, ts); err != nil {
		return fmt.Errorf("%s: %w", fSeederWeights, err)
	}
	if d := len(f.Model.PCA.Mean); d != ix.Meta.Dims {
		return fmt.Errorf("%s: the PCA reads %d-dimensional vectors, the index has %d", fSeederWeights, d, ix.Meta.Dims)
	}
	ix.Seeder = &f
	return nil
}
