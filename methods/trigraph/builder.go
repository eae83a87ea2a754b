package trigraph

import (
	"context"
	"fmt"
	"strings"

	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/graphops/hnsw"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/models/ner"
	"github.com/gleaner-rag/gleaner/retrieve"
)

// Settings are the build step's settings: the extractor by name and the
// build's own options.
type Settings struct {
	NER   string // ner: prose, titles or both
	Build BuildOptions
}

// DefaultSettings: NER by both prose and the corpus's titles (chosen on
// the 2Wiki dev questions), the reference's W.
func DefaultSettings() Settings { return Settings{NER: "both", Build: DefaultBuildOptions()} }

// Params binds the build settings.
func (s *Settings) Params(p *retrieve.Params) {
	p.String(&s.NER, "ner", "entity extractor: "+strings.Join(ner.Names(), ", ")+" (prose: the embedded NER; titles: the corpus's titles and aliases as whole words; both: their union, chosen on the 2Wiki dev questions)",
		retrieve.OneOf(ner.Names()...))
	p.Int(&s.Build.Workers, "workers", "NER / extraction workers", retrieve.AtLeast(1))
	n := &s.Build.Neighbours
	p.Float(&n.CoShare, "co-share", "trigraph W: keep the top max(1, share·nnz) co-occurrence counts per entity", retrieve.OpenClosed(0.0, 1.0))
	p.Int(&n.CoCap, "co-cap", "trigraph W: at most this many co-occurrence counts per entity", retrieve.AtLeast(1))
	p.Int(&n.SimTopK, "sim-topk", "trigraph W: cosine neighbours per entity", retrieve.AtLeast(0))
	p.Int(&n.ANNFrom, "w-ann-from", "trigraph W: from this many entities the cosine neighbours come from an HNSW graph over the entity vectors (0: always exact)", retrieve.AtLeast(0))
	p.Int(&n.Ef, "w-ef", "trigraph W: the HNSW search's candidates (the reference's efSearch 128)", retrieve.Within(1, hnsw.MaxEf))
	p.Int(&n.Kappa, "kappa", "trigraph W: κ, candidates per channel and neighbours kept per entity", retrieve.AtLeast(1))
	p.Float(&n.Alpha, "w-alpha", "trigraph W: α, co-occurrence share of the fused weight", retrieve.Within(0.0, 1.0))
	p.Float(&n.Threshold, "tau", "trigraph W: τ, a neighbour's least fused weight", retrieve.Within(0.0, 1.0))
	p.Bool(&s.Build.BonusWholeWord, "bonus-whole-word", "trigraph: count entities in passages as whole words for the passage bonus (default: lowercased substrings, as the reference)")
}

func init() {
	retrieve.Must(retrieve.RegisterBuild(retrieve.BuildDef[Settings]{Name: Section, Group: retrieve.BuildGraph, Section: Section,
		Summary: "NexusRAG's and LinearRAG's Tri-Graph (methods nexusrag, linearrag)",
		Long: `NexusRAG's and LinearRAG's Tri-Graph (methods nexusrag, linearrag): entities found by --ner
in every sentence, the sentence store, mention counts, entity and sentence vectors from the
index's embedder, and the entity neighbour matrix W (--co-share, --sim-topk, --kappa,
--w-alpha, --tau); stored beside the graph, which it leaves as it is`,
		Defaults: DefaultSettings, Params: (*Settings).Params, Build: build,
		Host: "NER and the co-occurrence counts run on the host; the cosine neighbours on the backend"}))
}

// build runs the build step: the extractor by name (with the index's
// titles for titles and both), then Set.
func build(ctx context.Context, env retrieve.BuildEnv, dir string, s Settings) (string, error) {
	ex, err := Extractor(dir, s.NER)
	if err != nil {
		return "", err
	}
	o := s.Build
	o.Extractor, o.Backend, o.Logger, o.Progress = ex, env.Backend, env.Logger, env.Progress
	m, err := Set(ctx, dir, env.Embedder, o)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("trigraph (%s): %d entities, %d sentences, %d passage–entity mentions; W: %.2f neighbours per entity, %.1f%% with none",
		m.NER, m.Entities, m.Sentences, m.Mentions, m.MeanNeighbours, 100*m.ZeroNeighbours), nil
}

// Extractor makes the entity extractor called name, with the titles and
// aliases of the index at dir when it matches them.
func Extractor(dir, name string) (ner.EntityExtractor, error) {
	var titles []string
	if name == "titles" || name == "both" {
		ix, err := index.Open(dir, store.OpenOptions{})
		if err != nil {
			return nil, err
		}
		titles = ix.Names()
		ix.Close()
	}
	ex, err := ner.New(name, titles)
	if err != nil {
		return nil, fmt.Errorf("ner: %w", err)
	}
	return ex, nil
}
