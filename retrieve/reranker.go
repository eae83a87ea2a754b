package retrieve

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"go.opentelemetry.io/otel/attribute"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/models"
	"github.com/gleaner-rag/gleaner/models/transformer"
)

// EncoderOptions choose a reranking method's cross-encoder.
type EncoderOptions struct {
	// Model is a cross-encoder folder (tokenizer.json, config.json and
	// model.safetensors and/or model.onnx); empty means the embedded
	// lexical cross-encoder with the index's trained head.
	Model string
	// Runtime runs Model: "native" (engine ops) or "ort" (ONNX Runtime);
	// empty picks native when model.safetensors exists.
	Runtime string
	// Precision is what Model's GEMMs may use on the native runtime (the
	// zero value is float32; TF32 and bfloat16 let a GPU use tensor cores).
	Precision engine.Precision
}

// modelFolder wants no folder (the embedded encoder) or one with a
// tokenizer.json: checked when the setting is made, so a server given a
// wrong --model refuses to start instead of failing every request.
func modelFolder(dir string) error {
	if dir == "" {
		return nil
	}
	st, err := os.Stat(filepath.Join(dir, "tokenizer.json"))
	switch {
	case err != nil:
		return fmt.Errorf("want a model folder with a tokenizer.json: %v", err)
	case st.IsDir():
		return fmt.Errorf("want a model folder with a tokenizer.json file: %s is a folder", filepath.Join(dir, "tokenizer.json"))
	}
	return nil
}

// Params binds the encoder settings. They name files and memory of the
// machine gleaner runs on: local, never a request's.
func (o *EncoderOptions) Params(p *Params) {
	p.String(&o.Model, "model", "cross-encoder folder (tokenizer.json, config.json, model.safetensors and/or model.onnx); default: the embedded lexical encoder", modelFolder).Local()
	p.String(&o.Runtime, "runtime", "runtime for --model: native or ort (default: native when model.safetensors exists)", OneOf("", "native", "ort")).Local()
	Bind(p, &o.Precision, "precision", "GEMM precision --model's native runtime may use: fp32, tf32 or bf16 (tensor cores on a GPU; the cpu backend computes fp32)",
		engine.Precision.String, engine.ParsePrecision).Local()
	p.Check(func() error {
		if o.Precision != engine.PrecisionF32 && o.Model == "" {
			return &ParamError{Name: "precision", Value: o.Precision.String(), Msg: "applies to a --model cross-encoder (the lexical one has no GEMMs)"}
		}
		return nil
	})
}

// Reranker is what every cross-encoder method holds: the model, the latent
// service (started on first use) and what to release on Close. A method
// that embeds it is a Closer, a SchedulerReporter and a PairCounter.
type Reranker struct {
	CE      *models.CrossEncoder
	enc     interface{ Close() error } // a transformer encoder to release, if any
	workers int                        // the latent scheduler's (engine.QueueWorkers of the backend)
	once    sync.Once
	svc     *models.LatentService
	err     error
}

// NewReranker loads the cross-encoder o names (the index's lexical one by
// default) on be.
func NewReranker(ix *index.Index, be engine.Backend, o EncoderOptions) (*Reranker, error) {
	if err := Validate(&o, (*EncoderOptions).Params); err != nil {
		return nil, err
	}
	if be == nil {
		return nil, ErrNoBackend
	}
	ce, closer, err := crossEncoder(ix, be, o)
	if err != nil {
		return nil, err
	}
	return &Reranker{CE: ce, enc: closer, workers: engine.QueueWorkers(be)}, nil
}

// crossEncoder returns the transformer folder in o.Model, else the index's
// lexical cross-encoder. closer, when not nil, releases the model.
func crossEncoder(ix *index.Index, be engine.Backend, o EncoderOptions) (*models.CrossEncoder, interface{ Close() error }, error) {
	if o.Model == "" {
		ce, err := ix.CrossEncoder()
		return ce, nil, err
	}
	texts := func(n int32) string {
		node := corpus.Node{Title: ix.Title(int(n)), Text: ix.Text(int(n))}
		return index.IndexText(&node)
	}
	enc, head, err := transformer.Load(o.Model, o.Runtime, be, texts, 0)
	if err != nil {
		return nil, nil, err
	}
	if err := enc.SetPrecision(o.Precision); err != nil {
		enc.Close()
		return nil, nil, err
	}
	if _, hash, ok := ix.Tokens(0); ok {
		enc.UseStoredTokens(hash, func(n int32) []int32 { ids, _, _ := ix.Tokens(int(n)); return ids })
	}
	return &models.CrossEncoder{Enc: enc, Head: head}, enc, nil
}

// Service starts the latent service once.
func (r *Reranker) Service() (*models.LatentService, error) {
	r.once.Do(func() { r.svc, r.err = models.NewLatentService(r.CE.Enc, engine.SchedulerOptions{Workers: r.workers}) })
	return r.svc, r.err
}

// Close stops the scheduler and releases the model.
func (r *Reranker) Close(ctx context.Context) error {
	var errs []error
	if r.svc != nil {
		errs = append(errs, r.svc.Close(ctx))
	}
	if r.enc != nil {
		errs = append(errs, r.enc.Close())
	}
	return errors.Join(errs...)
}

// SchedulerMetrics implements SchedulerReporter.
func (r *Reranker) SchedulerMetrics() (engine.SchedulerMetrics, bool) {
	if r.svc == nil {
		return engine.SchedulerMetrics{}, false
	}
	return r.svc.Metrics(), true
}

// EncodedPairs implements PairCounter.
func (r *Reranker) EncodedPairs() int {
	if r.svc == nil {
		return 0
	}
	return int(r.svc.Metrics().Items)
}

// ScoreNodes scores nodes with a session's latents and a head.
func ScoreNodes(ctx context.Context, sess *models.Session, h *models.Head, nodes []int32) (_ []float32, err error) {
	ctx, end := StartSpan(ctx, "rerank batch", attribute.Int("gleaner.nodes", len(nodes)))
	defer func() { end(err) }()
	H, err := sess.Latents(ctx, nodes)
	if err != nil {
		return nil, err
	}
	s := make([]float32, len(nodes))
	return s, h.Score(H, len(nodes), s)
}

// BMax binds the reranking budget every reranking method reads from one
// setting, bmax: FastInsight's b_max, GAR's budget c and re2's rerank
// depth, so one flag compares them at equal cost. The CLI's help joins
// each method's usage.
func BMax(p *Params, v *int, usage string) {
	p.Int(v, "bmax", usage, AtLeast(1))
}

// Batch binds the per-round batch FastInsight and GAR share
// (FastInsight's BATCH, GAR's b).
func Batch(p *Params, v *int, usage string) {
	p.Int(v, "batch", usage, AtLeast(1))
}
