package retrieve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/graphops/hnsw"
	"github.com/gleaner-rag/gleaner/index"
)

// SectionHNSW is the index section holding an HNSW graph over the index's
// vectors: approximate dense search for method vector (search auto or
// hnsw). It is rebuilt with the vectors.
const SectionHNSW = "hnsw"

const hnswVersion = 1

// errNoHNSW says how to build the graph.
var errNoHNSW = &index.MissingError{What: "HNSW graph", Hint: "gleaner graph build --kind hnsw --index <dir>"}

// hnswMeta is the section's description: the build's settings (so a
// comparison or a rebuild can use the same) and the graph's shape.
type hnswMeta struct {
	M              int    `json:"m"`
	EfConstruction int    `json:"ef_construction"`
	Seed           uint64 `json:"seed"`
	KeepPruned     bool   `json:"keep_pruned,omitempty"`
	Codes          string `json:"codes,omitempty"` // what the build's searches scored; none when absent (before codes)
	Nodes          int    `json:"nodes"`
	Dims           int    `json:"dims"`
	Entry          int32  `json:"entry"`
}

func init() {
	index.MustRegisterSection(index.SectionType{Name: SectionHNSW, Version: hnswVersion, Update: index.Rebuild,
		Summary: errNoHNSW.What, Hint: errNoHNSW.Hint, Load: loadHNSW, Refresh: refreshHNSW, FromVectors: true,
		CanRefresh: func(_ *index.Index, settings json.RawMessage) error {
			_, err := hnswRefreshSettings(settings)
			return err
		}})
	Must(RegisterBuild(BuildDef[HNSWSettings]{Name: SectionHNSW, Group: BuildGraph, Section: SectionHNSW,
		Summary: "an HNSW graph over the index's vectors: approximate dense search for method vector",
		Long: `an HNSW graph over the index's vectors (--m links per node, 2m on layer 0;
--ef-construction candidates per insertion; --seed draws the layers; --codes int8 lets the
insertions' searches read int8 codes of the vectors, links still chosen on exact scores), with which method vector
searches in about log N instead of scanning every vector (its --search and --ef); the graph is
the same whatever the number of CPUs`,
		Defaults: DefaultHNSWSettings, Params: (*HNSWSettings).Params, Build: buildHNSW,
		Host: "the graph is built and searched on the host"}))
}

// HNSWSettings configure the HNSW build step: Codes is CodesInt8
// (hnsw.Options.SearchCodes) or CodesNone; the other fields are
// hnsw.Options'.
type HNSWSettings struct {
	hnsw.Options
	Codes string
}

// DefaultHNSWSettings are hnsw.DefaultOptions with M 32 and
// efConstruction 200: LSA question vectors sit far from every passage
// (cosines of 0.2–0.5 with flat tops), where the sparser default graph
// needs a much larger ef for the same recall (benchmarks/ann). The build
// searches on int8 codes: at 10⁶ rows the searches wait on memory, and
// codes read a quarter of the bytes (benchmarks/RESULTS.md, "HNSW builds
// on int8 codes").
func DefaultHNSWSettings() HNSWSettings {
	o := hnsw.DefaultOptions()
	o.M, o.EfConstruction = 32, 200
	return HNSWSettings{Options: o, Codes: CodesInt8}
}

// Params binds the HNSW settings.
func (s *HNSWSettings) Params(p *Params) {
	p.Int(&s.M, "m", "hnsw: links per node on the upper layers (2m on layer 0)", Within(2, hnsw.MaxM))
	p.Int(&s.EfConstruction, "ef-construction", "hnsw: candidates kept per insertion", Within(1, hnsw.MaxEfConstruction))
	p.Uint64(&s.Seed, "seed", "hnsw: seed of the layer draws", Within[uint64](0, maxSeed))
	p.Int(&s.Workers, "workers", "hnsw: build threads (the graph does not depend on them)", Within(1, hnsw.MaxWorkers))
	p.Bool(&s.KeepPruned, "keep-pruned", "hnsw: fill each node's free link slots with the closest candidates the heuristic dropped (slower build, higher recall per ef)")
	p.String(&s.Codes, "codes", "hnsw: int8 (the build's searches score int8 codes of the vectors, a quarter of the bytes, and links are chosen on exact scores) or none", OneOf(CodesInt8, CodesNone))
}

// buildHNSW builds the graph over the vectors of the index at dir and
// stores it as the section.
func buildHNSW(ctx context.Context, env BuildEnv, dir string, s HNSWSettings) (string, error) {
	ix, err := index.Open(dir, store.OpenOptions{})
	if err != nil {
		return "", err
	}
	defer ix.Close()
	var report func(int)
	if env.Progress != nil {
		env.Progress.Stage("hnsw", ix.N())
		defer env.Progress.Finish()
		report = env.Progress.Set
	}
	b, g, err := builtHNSW(ctx, ix, s, env.Backend, report)
	if err != nil {
		return "", err
	}
	if err := ix.StoreSection(ctx, dir, SectionHNSW, b.Meta, b.Write); err != nil {
		return "", err
	}
	top := 0
	if g.N > 0 {
		top = int(g.Levels[g.Entry])
	}
	return fmt.Sprintf("hnsw graph: %d nodes, M %d, efConstruction %d, top layer %d", g.N, g.M, s.EfConstruction, top), nil
}

// builtHNSW builds the graph over ix's vectors, as its section.
func builtHNSW(ctx context.Context, ix *index.Index, s HNSWSettings, be engine.Backend, report func(int)) (*index.BuiltSection, *hnsw.Graph, error) {
	if s.Codes != CodesInt8 && s.Codes != CodesNone {
		return nil, nil, fmt.Errorf("hnsw: codes %q, want %s or %s", s.Codes, CodesInt8, CodesNone)
	}
	o := s.Options
	o.Dot = engine.DotRowsOf(be)
	o.SearchCodes, o.CodeDot = s.Codes == CodesInt8, engine.CodeRowScorerOf(be)
	g, err := hnsw.Build(ctx, ix.Vectors, ix.N(), ix.Meta.Dims, o, report)
	if err != nil {
		return nil, nil, err
	}
	meta := hnswMeta{M: g.M, EfConstruction: s.EfConstruction, Seed: s.Seed, KeepPruned: s.KeepPruned, Codes: s.Codes, Nodes: g.N, Dims: g.Dims, Entry: g.Entry}
	write := func(w *index.SectionWriter) error {
		return errors.Join(w.Bytes("levels.bytes", g.Levels), w.I32("layer0.i32", g.Layer0),
			w.I32("upper.i32", g.Upper), w.I64("upper_off.i64", g.UpperOff))
	}
	return &index.BuiltSection{Name: SectionHNSW, Meta: meta, Write: write}, g, nil
}

// refreshHNSW builds the graph again over ix's vectors with the settings
// its description recorded (a live writer's stale one).
func refreshHNSW(ctx context.Context, ix *index.Index, settings json.RawMessage, env index.RefreshEnv) (*index.BuiltSection, error) {
	s, err := hnswRefreshSettings(settings)
	if err != nil {
		return nil, err
	}
	s.Workers = env.WorkersOr(s.Workers)
	b, _, err := builtHNSW(ctx, ix, s, env.Backend, nil)
	return b, err
}

// hnswRefreshSettings reads the settings a stale graph was built with,
// or says why a refresh cannot build it (index.ErrNotRefreshable).
func hnswRefreshSettings(settings json.RawMessage) (HNSWSettings, error) {
	s := DefaultHNSWSettings()
	m := hnswMeta{M: s.M, EfConstruction: s.EfConstruction, Seed: s.Seed}
	if err := json.Unmarshal(settings, &m); err != nil {
		return s, fmt.Errorf("%w: its recorded settings do not read: %v", index.ErrNotRefreshable, err)
	}
	s.M, s.EfConstruction, s.Seed, s.KeepPruned, s.Codes = m.M, m.EfConstruction, m.Seed, m.KeepPruned, m.Codes
	switch s.Codes {
	case "": // a graph from before codes, built on the vectors
		s.Codes = CodesNone
	case CodesInt8, CodesNone:
	default:
		return s, fmt.Errorf("%w: its recorded codes %q are none of %s, %s", index.ErrNotRefreshable, s.Codes, CodesInt8, CodesNone)
	}
	if err := s.Options.Validate(); err != nil {
		return s, fmt.Errorf("%w: its recorded settings: %v", index.ErrNotRefreshable, err)
	}
	return s, nil
}

// loadHNSW reads the graph and checks it against the index's vectors.
func loadHNSW(ix *index.Index, r *index.SectionReader) (any, error) {
	var m hnswMeta
	if err := r.Meta(&m); err != nil {
		return nil, err
	}
	g := &hnsw.Graph{N: m.Nodes, Dims: m.Dims, M: m.M, Entry: m.Entry}
	levels, e1 := r.Bytes("levels.bytes")
	var e2, e3, e4 error
	g.Layer0, e2 = r.I32("layer0.i32")
	g.Upper, e3 = r.I32("upper.i32")
	g.UpperOff, e4 = r.I64("upper_off.i64")
	if err := errors.Join(e1, e2, e3, e4); err != nil {
		return nil, err
	}
	g.Levels = levels
	if err := g.Check(ix.N(), ix.Meta.Dims); err != nil {
		return nil, err
	}
	return g, nil
}

// graphFor is the graph a search mode uses (sectionFor with SearchHNSW).
func graphFor(ix *index.Index, search string) (*hnsw.Graph, error) {
	return sectionFor(ix, search, SearchHNSW, HNSWOf)
}

// sectionFor is the search structure a search mode uses, read by of: the
// index's under mode, and under SearchSeeded for the graph and the file
// (an error without one), under SearchAuto when built (a structure that
// failed its check is an error there too), and none under any other mode.
func sectionFor[T any](ix *index.Index, search, mode string, of func(*index.Index) (T, error)) (T, error) {
	var none T
	seeded := search == SearchSeeded && (mode == SearchHNSW || mode == SearchIVF) // needs both
	if search != mode && search != SearchAuto && !seeded {
		return none, nil
	}
	v, err := of(ix)
	switch {
	case errors.Is(err, index.ErrNotBuilt) && search == SearchAuto:
		return none, nil
	case err != nil:
		return none, err
	}
	return v, nil
}

// HNSWOf returns the index's HNSW graph, or an index.ErrNotBuilt error
// saying how to build it.
func HNSWOf(ix *index.Index) (*hnsw.Graph, error) {
	v, err := ix.Section(SectionHNSW)
	if err != nil {
		return nil, err
	}
	return v.(*hnsw.Graph), nil
}
