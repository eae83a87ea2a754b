package transformer

import (
	"context"
	"fmt"
	"math"
	"path/filepath"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/models"
	"github.com/gleaner-rag/gleaner/models/bert"
	"github.com/gleaner-rag/gleaner/models/tokenize"
)

// Pooling modes of a bi-encoder.
const (
	PoolMean = "mean"
	PoolCLS  = "cls"
)

// BiEncoder embeds texts with a transformer run natively: mean or
// first-token pooling over the real tokens, then L2 normalisation. It
// implements models.Embedder, so it can make an index's vectors
// (index.WithTextEmbedder) and embed its queries (index.OpenWith).
type BiEncoder struct {
	tok    *tokenize.Tokenizer
	m      *bert.Model
	pool   string
	maxLen int
	name   string
}

// LoadBiEncoder opens a model folder (tokenizer.json, config.json,
// model.safetensors) for embedding.
func LoadBiEncoder(dir, pool string, b engine.Backend) (*BiEncoder, error) {
	if pool != PoolMean && pool != PoolCLS {
		return nil, fmt.Errorf("transformer: pooling %q (mean or cls)", pool)
	}
	tok, err := tokenize.Load(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		return nil, err
	}
	m, err := bert.Load(dir, b)
	if err != nil {
		return nil, err
	}
	return &BiEncoder{tok: tok, m: m, pool: pool, maxLen: min(512, m.Cfg.MaxPositions-m.Cfg.PadTokenID-2),
		name: "transformer:" + filepath.Base(dir) + ":" + pool}, nil
}

// Name implements models.Embedder.
func (e *BiEncoder) Name() string { return e.name }

// Dim implements models.Embedder.
func (e *BiEncoder) Dim() int { return e.m.Cfg.Hidden }

// Embed implements models.Embedder.
func (e *BiEncoder) Embed(ctx context.Context, texts []string) ([]float32, error) {
	batch, hidden, s, err := e.forward(ctx, texts)
	if err != nil {
		return nil, err
	}
	h := e.m.Cfg.Hidden
	out := make([]float32, len(texts)*h)
	for i, ids := range batch.IDs {
		row := out[i*h : (i+1)*h]
		n := 1
		if e.pool == PoolMean {
			n = len(ids)
		}
		for p := 0; p < n; p++ {
			for j := 0; j < h; j++ {
				row[j] += hidden[(i*s+p)*h+j] / float32(n)
			}
		}
		normalize(row)
	}
	return out, nil
}

// States returns each text's last hidden states over its real tokens
// (special tokens included), T_i × Dim row-major: FuseRAG's evidence token
// states (fuseattn.EvidenceEncoder).
func (e *BiEncoder) States(ctx context.Context, texts []string) ([][]float32, error) {
	batch, hidden, s, err := e.forward(ctx, texts)
	if err != nil {
		return nil, err
	}
	h := e.m.Cfg.Hidden
	out := make([][]float32, len(texts))
	for i, ids := range batch.IDs {
		out[i] = append([]float32(nil), hidden[i*s*h:(i*s+len(ids))*h]...)
	}
	return out, nil
}

// forward tokenizes texts as single sequences and runs the encoder.
func (e *BiEncoder) forward(ctx context.Context, texts []string) (bert.Batch, []float32, int, error) {
	var batch bert.Batch
	for _, t := range texts {
		ids, err := e.tok.IDs(t)
		if err != nil {
			return batch, nil, 0, err
		}
		seq, types := e.tok.Single(ids, e.maxLen)
		batch.IDs, batch.Types = append(batch.IDs, seq), append(batch.Types, types)
	}
	hidden, s, err := e.m.Forward(ctx, batch)
	return batch, hidden, s, err
}

func normalize(v []float32) {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 {
		return
	}
	inv := float32(1 / math.Sqrt(s))
	for i := range v {
		v[i] *= inv
	}
}

var _ models.Embedder = (*BiEncoder)(nil)
