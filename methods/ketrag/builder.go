package ketrag

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/graphops/hnsw"
	"github.com/gleaner-rag/gleaner/methods/trigraph"
	"github.com/gleaner-rag/gleaner/models/kgextract"
	"github.com/gleaner-rag/gleaner/models/ner"
	"github.com/gleaner-rag/gleaner/models/tiktoken"
	"github.com/gleaner-rag/gleaner/retrieve"
)

// Extractors of the build step (Settings.Extractor).
const (
	ExtractLocal = "local" // prose's NER per sentence; no network
	ExtractLLM   = "llm"   // an OpenAI-compatible chat-completions server
)

// Settings are the build step's settings: the build's options, and the
// extractor by name with its settings.
type Settings struct {
	Build     BuildOptions
	Extractor string // extractor: ExtractLocal or ExtractLLM
	NER       string // ner: local's entity extractor (prose, titles, both)
	LLM       kgextract.LLMOptions
	KeyEnv    string // llm-key-env: the environment variable holding the API key
	given     map[string]*bool
}

// DefaultSettings: KET-RAG's build, extracted locally by prose.
func DefaultSettings() Settings {
	return Settings{Build: DefaultBuildOptions(), Extractor: ExtractLocal, NER: "prose", LLM: kgextract.DefaultLLMOptions(),
		KeyEnv: "OPENAI_API_KEY", given: map[string]*bool{}}
}

// track marks a setting whose use depends on another's value.
func (s *Settings) track(p *retrieve.Param) {
	b, ok := s.given[p.Name()]
	if !ok { // bound again (a copy validated): keep what was given
		b = new(bool)
		s.given[p.Name()] = b
	}
	p.Track(b)
}

// Params binds the build settings.
func (s *Settings) Params(p *retrieve.Params) {
	o := &s.Build
	p.Float(&o.Beta, "beta", "ketrag: β, the share of chunks the skeleton is extracted from, in (0,1]", retrieve.OpenClosed(0.0, 1.0))
	p.String(&o.Selection, "selection", "ketrag: core chunks by pagerank (KET-RAG-P) or uniform (KET-RAG-U)", retrieve.OneOf(SelectPageRank, SelectUniform))
	s.track(p.Int64(&o.Seed, "seed", "ketrag: seed of --selection uniform"))
	p.Float(&o.Damping, "pr-damping", "ketrag: PageRank's α over the chunk graph, in (0,1)", retrieve.Between(0.0, 1.0))
	p.Int(&o.KNN.Lexical, "k-lex", "lexical neighbours per node in the chunk graph (0: none)", retrieve.AtLeast(0))
	p.Int(&o.KNN.Semantic, "k-sem", "semantic neighbours per node in the chunk graph (0: none)", retrieve.AtLeast(0))
	p.Int64(&o.KNN.LexicalBudget, "lex-budget", graphops.LexicalBudgetUsage, retrieve.AtLeast(int64(0)))
	p.String(&o.Search, "search", "the chunk graph's semantic neighbours: auto (the index's HNSW graph when built and the index has ≥ 100000 nodes, else exact), exact or hnsw", retrieve.OneOf(retrieve.SearchAuto, retrieve.SearchExact, retrieve.SearchHNSW))
	p.Int(&o.Ef, "ef", "the chunk graph's semantic neighbours on the HNSW graph: candidates kept", retrieve.Within(1, hnsw.MaxEf))
	p.Int(&o.UnitTokens, "unit-tokens", "ketrag: tokens per extraction unit (consecutive core chunks merged)", retrieve.AtLeast(1))
	p.Int(&o.PieceTokens, "piece-tokens", "ketrag: tokens per text unit the skeleton channel quotes", retrieve.AtLeast(1))
	p.Int(&o.MaxDescriptions, "max-descriptions", "ketrag: distinct descriptions a merged entity or relationship keeps", retrieve.AtLeast(1))
	s.track(p.Int(&o.Workers, "workers", "NER / extraction workers (ketrag llm: default --llm-concurrency)", retrieve.AtLeast(1)))
	p.String(&s.Extractor, "extractor", "ketrag: local (prose NER, sentence co-occurrence; no network) or llm (an OpenAI-compatible server)", retrieve.OneOf(ExtractLocal, ExtractLLM))
	s.track(p.String(&s.NER, "ner", "entity extractor: "+strings.Join(ner.Names(), ", "), retrieve.OneOf(ner.Names()...)))
	s.llmParams(p)
	p.Check(s.check)
}

// llmParams binds the llm extractor's settings.
func (s *Settings) llmParams(p *retrieve.Params) {
	l := &s.LLM
	s.track(p.String(&l.BaseURL, "llm-url", "ketrag llm: the API root, e.g. http://localhost:8000/v1 (vLLM), http://localhost:11434/v1 (Ollama)"))
	s.track(p.String(&l.Model, "llm-model", "ketrag llm: model name"))
	s.track(p.String(&s.KeyEnv, "llm-key-env", "ketrag llm: environment variable holding the API key (unset or empty: no key)"))
	s.track(p.String(&l.CacheDir, "llm-cache", "ketrag llm: reply cache folder, so an interrupted build resumes without paying twice (default: <index>.llm-cache)").Local())
	s.track(p.Int(&l.Concurrency, "llm-concurrency", "ketrag llm: requests in flight", retrieve.AtLeast(1)))
	s.track(retrieve.Bind(p, &l.Timeout, "llm-timeout", "ketrag llm: timeout of one request", time.Duration.String, time.ParseDuration, func(d time.Duration) error {
		if d <= 0 {
			return errors.New("want a positive duration")
		}
		return nil
	}))
	s.track(p.Int(&l.MaxRetries, "llm-retries", "ketrag llm: retries after a 429, 5xx, timeout or invalid reply", retrieve.AtLeast(0)))
	s.track(p.Int(&l.MaxOutputTokens, "llm-max-tokens", "ketrag llm: max_tokens of a reply", retrieve.AtLeast(1)))
}

// check refuses settings that apply to another choice than the one made,
// so a mistyped command is not silently half-applied.
func (s *Settings) check() error {
	given := func(n string) bool { return *s.given[n] }
	switch {
	case s.Build.Selection == SelectPageRank && given("seed"):
		return &retrieve.ParamError{Name: "seed", Value: fmt.Sprint(s.Build.Seed), Msg: "applies to selection uniform (pagerank's selection is deterministic)"}
	case s.Build.KNN.Lexical+s.Build.KNN.Semantic == 0:
		return &retrieve.ParamError{Name: "k-sem", Value: "0", Msg: "k-lex and k-sem cannot both be 0: the chunk graph needs neighbours"}
	case s.Extractor == ExtractLLM && given("ner"):
		return &retrieve.ParamError{Name: "ner", Value: s.NER, Msg: "applies to extractor local"}
	}
	if s.Extractor == ExtractLocal {
		for _, n := range slices.Sorted(maps.Keys(s.given)) {
			if strings.HasPrefix(n, "llm-") && *s.given[n] {
				return &retrieve.ParamError{Name: n, Value: "(given)", Msg: "applies to extractor llm"}
			}
		}
	}
	return nil
}

func init() {
	retrieve.Must(retrieve.RegisterBuild(retrieve.BuildDef[Settings]{Name: Section, Group: retrieve.BuildGraph, Section: Section,
		Summary: "KET-RAG's skeleton and keyword graph (method ketrag)",
		Long: `KET-RAG's structures (method ketrag; nodes are token chunks, see gleaner chunk): cl100k token
counts; PageRank over the knn chunk graph (--k-lex, --k-sem, --pr-damping) picking the top --beta
share of chunks (or --selection uniform); those merged into ≤ --unit-tokens units; the skeleton
extracted from each unit by --extractor local (--ner entities, sentence co-occurrence) or llm
(an OpenAI-compatible server; key from --llm-key-env; replies cached in --llm-cache) and merged
by normalised name; --piece-tokens text units; the text–keyword graph and keyword vectors.
Stored beside the graph, which it leaves as it is`,
		Defaults: DefaultSettings, Params: (*Settings).Params, Build: build,
		Host: "extraction, lexical neighbours and PageRank run on the host; the semantic neighbours on the backend"}))
}

// build makes the extractor and runs Set.
func build(ctx context.Context, env retrieve.BuildEnv, dir string, s Settings) (string, error) {
	ex, err := s.extractor(env, dir)
	if err != nil {
		return "", err
	}
	o := s.Build
	if s.Extractor == ExtractLLM && !*s.given["workers"] {
		o.Workers = s.LLM.Concurrency // each worker holds one request: as many as may be in flight
	}
	o.Extractor, o.Backend, o.Logger, o.Progress = ex, env.Backend, env.Logger, env.Progress
	m, err := Set(ctx, dir, env.Embedder, o)
	if err != nil {
		return "", err
	}
	line := fmt.Sprintf("ketrag (%s): %d of %d chunks in the skeleton (%s, β %.2f) as %d units; %d entities, %d relationships, %d text units; %d keywords (%d keyword–chunk edges)",
		m.Extractor, m.Core, m.Chunks, m.Selection, m.Beta, m.Units, m.Entities, m.Relationships, m.Pieces, m.Keywords, m.KeywordEdges)
	if u := m.Usage; u.Calls+u.CacheHits > 0 {
		line += fmt.Sprintf("\nllm: %d calls (%d retries), %d input and %d output tokens; %d replies from the cache (%d and %d tokens)",
			u.Calls, u.Retries, u.InputTokens, u.OutputTokens, u.CacheHits, u.CachedInput, u.CachedOutput)
	}
	return line, nil
}

// extractor builds the chosen extractor: local over the named NER (with
// the index's titles when it matches them), or the LLM client.
func (s Settings) extractor(env retrieve.BuildEnv, dir string) (kgextract.Extractor, error) {
	if s.Extractor == ExtractLocal {
		ex, err := trigraph.Extractor(dir, s.NER)
		if err != nil {
			return nil, err
		}
		return kgextract.NewLocal(ex)
	}
	o := s.LLM
	if env.Getenv != nil {
		o.APIKey = env.Getenv(s.KeyEnv)
	}
	o.Logger = env.Logger
	if o.CacheDir == "" {
		o.CacheDir = strings.TrimSuffix(dir, string(os.PathSeparator)) + ".llm-cache"
	}
	if tok, err := tiktoken.CL100K(); err == nil {
		o.Count = tok.Count // servers that report no usage
	}
	return kgextract.NewLLM(o)
}
