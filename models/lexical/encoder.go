package lexical

import (
	"context"
	"fmt"
	"math"

	"github.com/gleaner-rag/gleaner/models"
)

// Encoder is the embedded lexical cross-encoder: its latent for a (query,
// node) pair is the interaction feature vector, standardised with the
// training statistics Mean and Std so that GRanker's smoothing and the
// head see comparable scales.
type Encoder struct {
	M         *InteractionModel
	Mean, Std []float32
}

// Name implements models.PairEncoder.
func (e *Encoder) Name() string { return "lexical" }

// Dim implements models.PairEncoder.
func (e *Encoder) Dim() int { return NumFeatures }

type prepared struct {
	text string
	q    *QueryState
}

func (p *prepared) Query() string { return p.text }

// Prepare implements models.PairEncoder.
func (e *Encoder) Prepare(_ context.Context, query string) (models.Prepared, error) {
	return &prepared{text: query, q: e.M.Prepare(query)}, nil
}

// PrepareWithin implements models.SubsetPreparer: the query's features
// over the subset alone (InteractionModel.PrepareWithin).
func (e *Encoder) PrepareWithin(_ context.Context, query string, set models.NodeSubset) (models.Prepared, error) {
	sub, err := SubsetOf(e.M.BM, set)
	if err != nil {
		return nil, err
	}
	return &prepared{text: query, q: e.M.PrepareWithin(query, sub)}, nil
}

// Encode implements models.PairEncoder.
func (e *Encoder) Encode(ctx context.Context, p models.Prepared, nodes []int32, out []float32) error {
	pq, ok := p.(*prepared)
	if !ok {
		return fmt.Errorf("lexical: query prepared by another encoder (%T)", p)
	}
	if len(out) < len(nodes)*NumFeatures {
		return fmt.Errorf("lexical: output has room for %d latents, want %d", len(out)/NumFeatures, len(nodes))
	}
	for i, n := range nodes {
		if i%256 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		row := out[i*NumFeatures : (i+1)*NumFeatures]
		e.M.Features(pq.q, int(n), row)
		e.standardize(row)
	}
	return nil
}

func (e *Encoder) standardize(row []float32) {
	if e.Mean == nil {
		return
	}
	for j := range row {
		row[j] = (row[j] - e.Mean[j]) / e.Std[j]
	}
}

// FitStandardization sets Mean and Std from raw feature rows (n × NumFeatures);
// a constant feature gets Std 1.
func (e *Encoder) FitStandardization(raw []float32, n int) {
	e.Mean, e.Std = make([]float32, NumFeatures), make([]float32, NumFeatures)
	for j := 0; j < NumFeatures; j++ {
		var s, ss float64
		for i := 0; i < n; i++ {
			x := float64(raw[i*NumFeatures+j])
			s += x
			ss += x * x
		}
		mean := s / float64(max(n, 1))
		sd := math.Sqrt(max(ss/float64(max(n, 1))-mean*mean, 0))
		if sd < 1e-6 {
			sd = 1
		}
		e.Mean[j], e.Std[j] = float32(mean), float32(sd)
	}
}

var (
	_ models.PairEncoder    = (*Encoder)(nil)
	_ models.SubsetPreparer = (*Encoder)(nil)
)
