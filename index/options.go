package index

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"

	"github.com/gleaner-rag/gleaner/internal/progress"
	"github.com/gleaner-rag/gleaner/models"
	"github.com/gleaner-rag/gleaner/models/lexical"
)

// Option configures Build. Options are checked when applied and together
// before any work starts.
type Option func(*config) error

type config struct {
	embedder string
	text     models.Embedder
	vectors  string
	metric   string
	lsa      lexical.LSAOptions
	bm25     lexical.BM25Params
	log      *slog.Logger
	progress progress.Reporter
	source   string
	finish   []func(ctx context.Context, staged string) error
	head     *HeadOptions // nil: no head
	headSet  bool         // WithHead was given: a failure to train is an error
}

func defaults() config {
	head := DefaultHeadOptions()
	return config{embedder: EmbedderLSA, metric: MetricCosine, lsa: lexical.DefaultLSA(),
		bm25: lexical.DefaultBM25(), log: slog.New(slog.NewTextHandler(io.Discard, nil)), progress: progress.Nop{}, head: &head}
}

// WithEmbedder selects how node vectors are made: "lsa" (default, fitted at
// index time) or "precomputed" (read from the file given by WithVectors).
func WithEmbedder(name string) Option {
	return func(c *config) error {
		if name != EmbedderLSA && name != EmbedderPrecomputed {
			return fmt.Errorf("index: unknown embedder %q (want %q or %q)", name, EmbedderLSA, EmbedderPrecomputed)
		}
		c.embedder = name
		return nil
	}
}

// WithTextEmbedder makes node vectors with e (e.g. an ONNX bi-encoder),
// embedding node texts (title, then text) in batches. Open the index with
// OpenWith and the same embedder to embed queries.
func WithTextEmbedder(e models.Embedder) Option {
	return func(c *config) error {
		if e == nil || e.Dim() <= 0 {
			return errors.New("index: text embedder is nil or has no dimension")
		}
		if e.Name() == EmbedderLSA || e.Name() == EmbedderPrecomputed {
			return fmt.Errorf("index: text embedder name %q is reserved", e.Name())
		}
		c.embedder, c.text = e.Name(), e
		return nil
	}
}

// WithVectors names the precomputed node vectors (.npy or .jsonl).
func WithVectors(path string) Option {
	return func(c *config) error { c.vectors = path; return nil }
}

// WithMetric selects "cosine" (vectors are normalised, the default) or
// "dot" (precomputed vectors kept as given).
func WithMetric(m string) Option {
	return func(c *config) error {
		if m != MetricCosine && m != MetricDot {
			return fmt.Errorf("index: unknown metric %q (want %q or %q)", m, MetricCosine, MetricDot)
		}
		c.metric = m
		return nil
	}
}

// WithLSA sets LSA fitting options.
func WithLSA(o lexical.LSAOptions) Option {
	return func(c *config) error { c.lsa = o; return o.Validate() }
}

// WithBM25 sets the BM25 parameters recorded as the index's defaults.
func WithBM25(p lexical.BM25Params) Option {
	return func(c *config) error { c.bm25 = p; return p.Validate() }
}

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return errors.New("index: nil logger")
		}
		c.log = l
		return nil
	}
}

// WithProgress sets the progress reporter (default: none).
func WithProgress(p progress.Reporter) Option {
	return func(c *config) error {
		if p == nil {
			return errors.New("index: nil progress reporter")
		}
		c.progress = p
		return nil
	}
}

// WithSource records where the corpus came from (for `index info`, and
// `eval`'s default queries), as an absolute path so the index works from
// any directory.
func WithSource(s string) Option {
	return func(c *config) error {
		abs, err := filepath.Abs(s)
		if err != nil {
			return fmt.Errorf("index: source %q: %w", s, err)
		}
		c.source = abs
		return nil
	}
}

// WithHead trains the embedded lexical cross-encoder's head with o (Build
// trains one with DefaultHeadOptions unless WithoutHead is given); a
// failure to train is then an error.
func WithHead(o HeadOptions) Option {
	return func(c *config) error {
		if err := o.validate(); err != nil {
			return err
		}
		c.head, c.headSet = &o, true
		return nil
	}
}

// WithoutHead builds no head: BM25, vector and PageRank work; the reranking
// methods (re2, gar, fastinsight) need a head (TrainHead, SetHead) or a
// transformer cross-encoder.
func WithoutHead() Option {
	return func(c *config) error { c.head, c.headSet = nil, true; return nil }
}

// WithFinish runs finish on the complete index (in a hidden folder beside
// dir) before it takes dir's place: storing token ids, training a head. The
// index appears at dir only when finish succeeds, so a crash or an error in
// it leaves any previous index at dir as it was.
func WithFinish(finish func(ctx context.Context, staged string) error) Option {
	return func(c *config) error {
		if finish == nil {
			return errors.New("index: nil finish step")
		}
		c.finish = append(c.finish, finish)
		return nil
	}
}

func newConfig(opts []Option) (config, error) {
	c := defaults()
	var errs []error
	for _, o := range opts {
		if err := o(&c); err != nil {
			errs = append(errs, err)
		}
	}
	if c.embedder == EmbedderPrecomputed && c.vectors == "" {
		errs = append(errs, errors.New("index: the precomputed embedder needs a vectors file (WithVectors / --vectors)"))
	}
	if c.embedder == EmbedderLSA && c.vectors != "" {
		errs = append(errs, errors.New("index: a vectors file was given but the embedder is lsa; add --embedder precomputed"))
	}
	if c.embedder == EmbedderLSA && c.metric != MetricCosine {
		errs = append(errs, errors.New("index: lsa vectors are always compared by cosine"))
	}
	return c, errors.Join(errs...)
}
