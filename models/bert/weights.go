package bert

import (
	"fmt"

	"github.com/gleaner-rag/gleaner/models"
	"github.com/gleaner-rag/gleaner/models/safetensors"
)

// layer holds one encoder layer's weights (HuggingFace layout: a linear
// layer's weight is out × in).
type layer struct {
	q, k, v, qb, kb, vb []float32
	o, ob               []float32
	ln1g, ln1b          []float32
	f1, f1b, f2, f2b    []float32
	ln2g, ln2b          []float32
}

// weights is a whole model on the host.
type weights struct {
	word, pos, typ []float32
	embG, embB     []float32
	layers         []layer
	head           *models.Head
}

// pick checks and returns one tensor.
type picker struct {
	t   map[string]safetensors.Tensor
	err error
}

func (p *picker) get(name string, shape ...int) []float32 {
	if p.err != nil {
		return nil
	}
	t, ok := p.t[name]
	if !ok {
		p.err = fmt.Errorf("bert: weight %q is missing", name)
		return nil
	}
	if fmt.Sprint(t.Shape) != fmt.Sprint(shape) {
		p.err = fmt.Errorf("bert: weight %q has shape %v, want %v", name, t.Shape, shape)
		return nil
	}
	return t.Data
}

func loadWeights(c Config, t map[string]safetensors.Tensor) (*weights, error) {
	p := &picker{t: t}
	pre, h, in := c.prefix(), c.Hidden, c.Intermediate
	w := &weights{
		word: p.get(pre+"embeddings.word_embeddings.weight", c.VocabSize, h),
		pos:  p.get(pre+"embeddings.position_embeddings.weight", c.MaxPositions, h),
		typ:  p.get(pre+"embeddings.token_type_embeddings.weight", c.TypeVocabSize, h),
		embG: p.get(pre+"embeddings.LayerNorm.weight", h),
		embB: p.get(pre+"embeddings.LayerNorm.bias", h),
	}
	for i := 0; i < c.Layers; i++ {
		l := fmt.Sprintf("%sencoder.layer.%d.", pre, i)
		w.layers = append(w.layers, layer{
			q: p.get(l+"attention.self.query.weight", h, h), qb: p.get(l+"attention.self.query.bias", h),
			k: p.get(l+"attention.self.key.weight", h, h), kb: p.get(l+"attention.self.key.bias", h),
			v: p.get(l+"attention.self.value.weight", h, h), vb: p.get(l+"attention.self.value.bias", h),
			o: p.get(l+"attention.output.dense.weight", h, h), ob: p.get(l+"attention.output.dense.bias", h),
			ln1g: p.get(l+"attention.output.LayerNorm.weight", h), ln1b: p.get(l+"attention.output.LayerNorm.bias", h),
			f1: p.get(l+"intermediate.dense.weight", in, h), f1b: p.get(l+"intermediate.dense.bias", in),
			f2: p.get(l+"output.dense.weight", h, in), f2b: p.get(l+"output.dense.bias", h),
			ln2g: p.get(l+"output.LayerNorm.weight", h), ln2b: p.get(l+"output.LayerNorm.bias", h),
		})
	}
	w.head = loadHead(c, p)
	return w, p.err
}

// loadHead maps the sequence-classification head to dense → tanh → out:
// XLM-R's classifier.dense / classifier.out_proj, or BERT's pooler.dense /
// classifier. A model without a head (a bi-encoder) returns nil.
func loadHead(c Config, p *picker) *models.Head {
	h := c.Hidden
	dense, denseB, out, outB := "classifier.dense.", "classifier.dense.", "classifier.out_proj.", "classifier.out_proj."
	if c.ModelType == "bert" {
		dense, denseB, out, outB = "bert.pooler.dense.", "bert.pooler.dense.", "classifier.", "classifier."
	}
	if _, ok := p.t[out+"weight"]; !ok {
		return nil
	}
	hd := &models.Head{In: h, Hidden: h, Dense: p.get(dense+"weight", h, h), DenseB: p.get(denseB+"bias", h),
		Out: p.get(out+"weight", 1, h)}
	if b := p.get(outB+"bias", 1); b != nil {
		hd.OutB = b[0]
	}
	return hd
}
