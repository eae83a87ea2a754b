package seeder

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/gleaner-rag/gleaner/models/safetensors"
)

// Model is a trained encoder with the PCA that reduces the embedder's
// vectors to its inputs. It is read-only after loading and safe for
// concurrent use.
type Model struct {
	Config Config
	PCA    *PCA
	W      *Weights[float32]
}

// Output is one graph's head values, one per candidate row.
type Output struct {
	Policy, Score []float32
}

// Forward runs the encoder over gs as one batch (their disjoint union)
// and returns each graph's policy logits and scores.
func (m *Model) Forward(gs []*Graph) ([]Output, error) {
	b, err := newBatch[float32](m.Config, gs)
	if err != nil {
		return nil, err
	}
	t := forward(m.W, m.Config, b, 0, nil)
	out := make([]Output, len(gs))
	for gi, g := range gs {
		lo, hi := b.first[gi], b.first[gi]+g.Nodes()
		out[gi] = Output{Policy: t.P[lo:hi], Score: t.S[lo:hi]}
	}
	return out, nil
}

// Select is SeedER's inference: the k eligible rows with the largest
// policy logits, sorted by score (ties to the lower row).
func Select(o Output, eligible []bool, k int) []int {
	var rows []int
	for i := range o.Policy {
		if eligible == nil || eligible[i] {
			rows = append(rows, i)
		}
	}
	slices.SortStableFunc(rows, func(a, b int) int { return cmp.Compare(o.Policy[b], o.Policy[a]) })
	rows = rows[:min(k, len(rows))]
	slices.SortStableFunc(rows, func(a, b int) int { return cmp.Or(cmp.Compare(o.Score[b], o.Score[a]), cmp.Compare(a, b)) })
	return rows
}

// Tensors returns the model's weights and PCA as safetensors tensors.
func (m *Model) Tensors() map[string]safetensors.Tensor {
	ts := map[string]safetensors.Tensor{
		"pca.mean":       {Shape: []int{len(m.PCA.Mean)}, Data: m.PCA.Mean},
		"pca.components": {Shape: []int{len(m.PCA.Mean), m.PCA.K}, Data: m.PCA.Components},
	}
	m.W.each(m.Config, func(name string, shape []int, p *[]float32) {
		ts[name] = safetensors.Tensor{Shape: shape, Data: *p}
	})
	return ts
}

// FromTensors rebuilds a model of config c from its tensors, checking
// every name and shape.
func FromTensors(c Config, ts map[string]safetensors.Tensor) (*Model, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	mean, ok1 := ts["pca.mean"]
	comp, ok2 := ts["pca.components"]
	if !ok1 || !ok2 || len(comp.Shape) != 2 || comp.Shape[1] != c.In || len(mean.Data) != comp.Shape[0] || len(comp.Data) != comp.Shape[0]*comp.Shape[1] {
		return nil, fmt.Errorf("seeder: weights lack a PCA of %d components matching the config", c.In)
	}
	m := &Model{Config: c, PCA: &PCA{Mean: mean.Data, Components: comp.Data, K: c.In}, W: &Weights[float32]{}}
	if err := fillTensors(func(fn tensorVisit) { m.W.each(c, fn) }, ts); err != nil {
		return nil, err
	}
	return m, nil
}

// tensorVisit is what a weights type's each calls for every tensor.
type tensorVisit = func(name string, shape []int, p *[]float32)

// fillTensors points each tensor visit names at ts's data, checking that
// every name is there with its shape.
func fillTensors(visit func(tensorVisit), ts map[string]safetensors.Tensor) error {
	var err error
	visit(func(name string, shape []int, p *[]float32) {
		t, ok := ts[name]
		switch {
		case err != nil:
		case !ok:
			err = fmt.Errorf("seeder: weights lack tensor %q", name)
		case !slices.Equal(t.Shape, shape) || len(t.Data) != numel(shape):
			err = fmt.Errorf("seeder: tensor %q has shape %v, the config needs %v", name, t.Shape, shape)
		default:
			*p = t.Data
		}
	})
	return err
}
