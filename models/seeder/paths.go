package seeder

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/gleaner-rag/gleaner/models/safetensors"
)

// PathConfig shapes the learned text side, an extension to SeedER
// (docs/methods.md §3.5): the question's word and word-pair features are
// embedded and averaged, and for each hop t a query vector q_t scores every
// relation and direction r̃ (its id embedding plus its name's words, read
// through a direction matrix): p_t = softmax_r̃(q_t·z_r̃). The paper's
// frozen text encoder gives sim(q, r) with no notion of which hop a
// relation belongs to; this one is trained on the KG's own answers.
type PathConfig struct {
	Features  int    `json:"features"`  // feature vocabulary (question n-grams and relation-name words)
	Dim       int    `json:"dim"`       // embedding width
	Relations int    `json:"relations"` // relation ids; 2·Relations directions are scored
	Hops      int    `json:"hops"`      // T: hops scored (the K-hop quotas)
	Seed      uint64 `json:"seed"`
}

// MaxPathFeatures bounds the feature vocabulary.
const MaxPathFeatures = 1 << 20

// Validate checks the shape.
func (c PathConfig) Validate() error {
	var errs []error
	if c.Features < 1 || c.Features > MaxPathFeatures {
		errs = append(errs, fmt.Errorf("seeder: path scorer features must be 1..%d, got %d", MaxPathFeatures, c.Features))
	}
	if c.Dim < 1 || c.Dim > MaxWidth {
		errs = append(errs, fmt.Errorf("seeder: path scorer width must be 1..%d, got %d", MaxWidth, c.Dim))
	}
	if c.Relations < 1 || c.Relations > 1<<20 {
		errs = append(errs, fmt.Errorf("seeder: path scorer relations must be 1..%d, got %d", 1<<20, c.Relations))
	}
	if c.Hops < 1 || c.Hops > 64 {
		errs = append(errs, fmt.Errorf("seeder: path scorer hops must be 1..64, got %d", c.Hops))
	}
	return errors.Join(errs...)
}

// PathScorer is a trained text side: its weights and each relation's name
// features. It is read-only after training or loading and safe for
// concurrent use.
type PathScorer struct {
	Config PathConfig
	// Names lists each relation's name features (rows of Emb).
	Names [][]int32
	W     *pathWeights[float32]
	// the relation vectors Read uses, computed once (W no longer changes)
	relOnce sync.Once
	z, nm   []float64
}

// pathWeights are the text side's tensors; matrices are [in, out].
type pathWeights[F Float] struct {
	Emb    []F // Features × Dim
	W0, B0 []F // Dim × Dim, Dim: a = relu(u·W0 + b0)
	HopW   []F // Hops × Dim × Dim: q_t = a·W_t + b_t
	HopB   []F // Hops × Dim
	RelEmb []F // 2·Relations × Dim
	Dir    []F // 2 × Dim × Dim: name words read per direction
	AlphaW []F // Dim × Hops: the answer's hop, α = softmax(a·A + c)
	AlphaB []F // Hops
}

// each visits every tensor in a fixed order.
func (w *pathWeights[F]) each(c PathConfig, fn func(name string, shape []int, p *[]F)) {
	d := c.Dim
	fn("paths.embedding", []int{c.Features, d}, &w.Emb)
	fn("paths.hidden.weight", []int{d, d}, &w.W0)
	fn("paths.hidden.bias", []int{d}, &w.B0)
	fn("paths.hop.weight", []int{c.Hops, d, d}, &w.HopW)
	fn("paths.hop.bias", []int{c.Hops, d}, &w.HopB)
	fn("paths.relation.embedding", []int{2 * c.Relations, d}, &w.RelEmb)
	fn("paths.relation.direction", []int{2, d, d}, &w.Dir)
	fn("paths.alpha.weight", []int{d, c.Hops}, &w.AlphaW)
	fn("paths.alpha.bias", []int{c.Hops}, &w.AlphaB)
}

// newPathScorer initialises a scorer (Xavier-uniform matrices, small
// embeddings, zero biases).
func newPathScorer(c PathConfig, names [][]int32) (*PathScorer, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if err := checkNames(c, names); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(c.Seed, 0x7a7b5))
	w := &pathWeights[float32]{}
	w.each(c, func(name string, shape []int, p *[]float32) {
		*p = make([]float32, numel(shape))
		switch {
		case len(shape) == 1:
		case name == "paths.embedding" || name == "paths.relation.embedding":
			for i := range *p {
				(*p)[i] = float32(rng.NormFloat64() * 0.1)
			}
		default:
			in, out := shape[len(shape)-2], shape[len(shape)-1]
			a := math.Sqrt(6 / float64(in+out))
			for i := range *p {
				(*p)[i] = float32((2*rng.Float64() - 1) * a)
			}
		}
	})
	return &PathScorer{Config: c, Names: names, W: w}, nil
}

func checkNames(c PathConfig, names [][]int32) error {
	if len(names) != c.Relations {
		return fmt.Errorf("seeder: path scorer has %d relation names for %d relations", len(names), c.Relations)
	}
	for r, fs := range names {
		for _, f := range fs {
			if f < 0 || int(f) >= c.Features {
				return fmt.Errorf("seeder: relation %d's name feature %d outside %d features", r, f, c.Features)
			}
		}
	}
	return nil
}

// Tensors returns the scorer's weights as safetensors tensors.
func (s *PathScorer) Tensors() map[string]safetensors.Tensor {
	ts := map[string]safetensors.Tensor{}
	s.W.each(s.Config, func(name string, shape []int, p *[]float32) {
		ts[name] = safetensors.Tensor{Shape: shape, Data: *p}
	})
	return ts
}

// PathScorerFromTensors rebuilds a scorer, checking every name and shape.
func PathScorerFromTensors(c PathConfig, names [][]int32, ts map[string]safetensors.Tensor) (*PathScorer, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if err := checkNames(c, names); err != nil {
		return nil, err
	}
	s := &PathScorer{Config: c, Names: names, W: &pathWeights[float32]{}}
	if err := fillTensors(func(fn tensorVisit) { s.W.each(c, fn) }, ts); err != nil {
		return nil, err
	}
	return s, nil
}

// Paths is one question's reading by the text side: P[t][r̃] is the
// probability that hop t+1 follows relation direction r̃ (2r forward, 2r+1
// inverse), Alpha[t] that the answer lies t+1 hops from the question's
// entities.
type Paths struct {
	P     [][]float64
	Alpha []float64
}

// Rel is P for hop (1-based) along relation r, inverse or not; 0 outside
// the scored hops or relations.
func (p *Paths) Rel(r int32, inverse bool, hop int) float64 {
	if p == nil || hop < 1 || hop > len(p.P) || r < 0 || 2*int(r)+1 >= len(p.P[hop-1]) {
		return 0
	}
	k := 2 * int(r)
	if inverse {
		k++
	}
	return p.P[hop-1][k]
}

// pathTape is a question's forward pass, kept for the backward.
type pathTape struct {
	feats []int32
	u, a  []float64   // mean embedding, hidden (after ReLU)
	q     [][]float64 // Hops × Dim
	z     []float64   // 2R × Dim (shared by the batch)
	nm    []float64   // R × Dim: each relation's mean name embedding
	out   Paths
}

// Read scores a question given its feature ids (ids outside the vocabulary
// are an error; duplicates count twice). It is for a trained scorer: the
// relation vectors are computed on the first call and kept.
func (s *PathScorer) Read(feats []int32) (*Paths, error) {
	for _, f := range feats {
		if f < 0 || int(f) >= s.Config.Features {
			return nil, fmt.Errorf("seeder: question feature %d outside %d", f, s.Config.Features)
		}
	}
	s.relOnce.Do(func() { s.z, s.nm = s.relationVectors() })
	return &s.forward(feats, s.z, s.nm).out, nil
}

// relationVectors are z_r̃ = RelEmb[r̃] + mean(name words)·Dir[dir], and the
// mean name embeddings.
func (s *PathScorer) relationVectors() (z, nm []float64) {
	c, w, d := s.Config, s.W, s.Config.Dim
	nm = make([]float64, c.Relations*d)
	z = make([]float64, 2*c.Relations*d)
	for r, fs := range s.Names {
		n := nm[r*d : (r+1)*d]
		for _, f := range fs {
			for j := range n {
				n[j] += float64(w.Emb[int(f)*d+j])
			}
		}
		if len(fs) > 0 {
			for j := range n {
				n[j] /= float64(len(fs))
			}
		}
		for dir := 0; dir < 2; dir++ {
			zr := z[(2*r+dir)*d : (2*r+dir+1)*d]
			for j := range zr {
				zr[j] = float64(w.RelEmb[(2*r+dir)*d+j])
			}
			vecMat(n, w.Dir[dir*d*d:(dir+1)*d*d], zr)
		}
	}
	return z, nm
}

// forward reads one question.
func (s *PathScorer) forward(feats []int32, z, nm []float64) *pathTape {
	c, w, d := s.Config, s.W, s.Config.Dim
	t := &pathTape{feats: feats, z: z, nm: nm, u: make([]float64, d), a: make([]float64, d)}
	for _, f := range feats {
		for j := range t.u {
			t.u[j] += float64(w.Emb[int(f)*d+j])
		}
	}
	if len(feats) > 0 {
		for j := range t.u {
			t.u[j] /= float64(len(feats))
		}
	}
	for j := range t.a {
		t.a[j] = float64(w.B0[j])
	}
	vecMat(t.u, w.W0, t.a)
	for j, x := range t.a {
		t.a[j] = max(x, 0)
	}
	nr := 2 * c.Relations
	for h := 0; h < c.Hops; h++ {
		q := make([]float64, d)
		for j := range q {
			q[j] = float64(w.HopB[h*d+j])
		}
		vecMat(t.a, w.HopW[h*d*d:(h+1)*d*d], q)
		t.q = append(t.q, q)
		l := make([]float64, nr)
		for r := range l {
			l[r] = dot64(q, z[r*d:(r+1)*d])
		}
		t.out.P = append(t.out.P, softmax64(l))
	}
	al := make([]float64, c.Hops)
	for h := range al {
		al[h] = float64(w.AlphaB[h])
	}
	vecMat(t.a, w.AlphaW, al)
	t.out.Alpha = softmax64(al)
	return t
}

// vecMat adds x·W (W is len(x) × len(y), row-major) to y.
func vecMat(x []float64, w []float32, y []float64) {
	m := len(y)
	for i, xi := range x {
		if xi == 0 {
			continue
		}
		row := w[i*m : (i+1)*m]
		for j := range y {
			y[j] += xi * float64(row[j])
		}
	}
}

func dot64(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// softmax64 is a stable softmax in a new slice.
func softmax64(l []float64) []float64 {
	m := math.Inf(-1)
	for _, x := range l {
		m = max(m, x)
	}
	out := make([]float64, len(l))
	var s float64
	for i, x := range l {
		out[i] = math.Exp(x - m)
		s += out[i]
	}
	for i := range out {
		out[i] /= s
	}
	return out
}
