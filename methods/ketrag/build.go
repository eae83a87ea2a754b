package ketrag

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand"
	"slices"
	"strings"
	"time"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/graphops/hnsw"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/internal/parallel"
	"github.com/gleaner-rag/gleaner/internal/progress"
	"github.com/gleaner-rag/gleaner/models/kgextract"
	"github.com/gleaner-rag/gleaner/models/lexical"
	"github.com/gleaner-rag/gleaner/models/ner"
	"github.com/gleaner-rag/gleaner/models/tiktoken"
	"github.com/gleaner-rag/gleaner/retrieve"
)

// Core-chunk selections (docs/methods.md §4.2).
const (
	SelectPageRank = "pagerank" // KET-RAG-P: the top β share by PageRank over the kNN chunk graph
	SelectUniform  = "uniform"  // KET-RAG-U: a uniform random β share
)

// BuildOptions configure KET-RAG's index structures (docs/methods.md
// §5.2). Start from DefaultBuildOptions and set Extractor; every field is
// used as given.
type BuildOptions struct {
	// Beta is the share of the index's nodes (chunks) whose text the
	// skeleton is extracted from, in (0, 1].
	Beta float64
	// Selection is SelectPageRank or SelectUniform.
	Selection string
	// Seed drives SelectUniform.
	Seed int64
	// KNN configures the chunk graph PageRank runs on (its Nearest is set
	// from Search and Ef).
	KNN graphops.KNNOptions
	// Search finds the chunk graph's semantic neighbours: retrieve.SearchAuto
	// (the index's HNSW graph from 10⁵ nodes when built, else exact),
	// SearchExact or SearchHNSW; Ef is the HNSW search's candidates.
	Search string
	Ef     int
	// Damping is PageRank's α, in (0, 1).
	Damping float64
	// UnitTokens bounds the units consecutive core chunks merge into, each
	// one extraction call, ≥ 1.
	UnitTokens int
	// PieceTokens is the size of the text units the skeleton channel quotes
	// (units re-split), ≥ 1.
	PieceTokens int
	// MaxDescriptions bounds the distinct descriptions a merged entity or
	// relationship keeps (in order of extraction), ≥ 1.
	MaxDescriptions int
	// Extractor extracts each unit's entities and relationships.
	Extractor kgextract.Extractor
	// Workers run extraction calls, and the keyword graph's reading, in
	// parallel, ≥ 1.
	Workers int
	// Backend runs the chunk graph's semantic neighbours; required.
	Backend  engine.Backend
	Logger   *slog.Logger      // nil: discard
	Progress progress.Reporter // nil: none
}

// DefaultBuildOptions are KET-RAG's: β = 0.8 by PageRank (α = 0.85) over
// the one-lexical, one-semantic neighbour graph, 1,200-token units,
// 300-token text units; three descriptions per entity, two workers.
func DefaultBuildOptions() BuildOptions {
	k := retrieve.DefaultKNNSettings()
	return BuildOptions{Beta: 0.8, Selection: SelectPageRank, Seed: 42, KNN: k.KNNOptions, Search: k.Search, Ef: k.Ef, Damping: 0.85,
		UnitTokens: 1200, PieceTokens: 300, MaxDescriptions: 3, Workers: 2}
}

func (o *BuildOptions) validate() error {
	switch {
	case !(o.Beta > 0 && o.Beta <= 1):
		return fmt.Errorf("ketrag: β must be in (0, 1], got %v", o.Beta)
	case o.Selection != SelectPageRank && o.Selection != SelectUniform:
		return fmt.Errorf("ketrag: selection %q: want %s or %s", o.Selection, SelectPageRank, SelectUniform)
	case !(o.Damping > 0 && o.Damping < 1):
		return fmt.Errorf("ketrag: PageRank damping must be in (0, 1), got %v", o.Damping)
	case o.UnitTokens < 1 || o.PieceTokens < 1:
		return fmt.Errorf("ketrag: unit and text-unit sizes must be ≥ 1 token, got %d and %d", o.UnitTokens, o.PieceTokens)
	case o.MaxDescriptions < 1:
		return fmt.Errorf("ketrag: max descriptions must be ≥ 1, got %d", o.MaxDescriptions)
	case o.Extractor == nil:
		return errors.New("ketrag: the build needs an extractor (kgextract.NewLocal or kgextract.NewLLM)")
	case o.Workers < 1:
		return fmt.Errorf("ketrag: workers must be ≥ 1, got %d", o.Workers)
	case o.Backend == nil:
		return errors.New("ketrag: the build needs BuildOptions.Backend (engine.Open)")
	case o.Search != retrieve.SearchAuto && o.Search != retrieve.SearchExact && o.Search != retrieve.SearchHNSW:
		return fmt.Errorf("ketrag: chunk graph search %q: want %s, %s or %s", o.Search, retrieve.SearchAuto, retrieve.SearchExact, retrieve.SearchHNSW)
	case o.Ef < 1 || o.Ef > hnsw.MaxEf:
		return fmt.Errorf("ketrag: chunk graph ef must be in [1, %d], got %d", hnsw.MaxEf, o.Ef)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Progress == nil {
		o.Progress = progress.Nop{}
	}
	return nil
}

// Build builds the KET-RAG structures of ix (docs/methods.md §4.2).
func Build(ctx context.Context, ix *index.Index, o BuildOptions) (*KETRAG, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	if err := ix.CanEmbedText("KET-RAG's skeleton and keywords"); err != nil {
		return nil, err
	}
	start := time.Now()
	tok, err := tiktoken.CL100K()
	if err != nil {
		return nil, err
	}
	k := &KETRAG{}
	texts := make([]string, ix.N())
	ids := make([][]int, ix.N())
	k.NodeTokens = make([]int32, ix.N())
	err = parallel.ForEach(ctx, ix.N(), o.Workers, o.Progress, "tokens", func(_ context.Context, i int) error {
		texts[i] = ix.NodeText(i)
		ids[i] = tok.Encode(texts[i])
		k.NodeTokens[i] = int32(len(ids[i]))
		return nil
	})
	if err != nil {
		return nil, err
	}
	edges, err := k.selectCore(ctx, ix, o)
	if err != nil {
		return nil, err
	}
	k.Meta.Chunked = allChunks(ix)
	units := k.mergeUnits(ids, o.UnitTokens, k.Meta.Chunked, tok.Encode("\n"))
	unitText := make([]string, len(units))
	for u, us := range units {
		unitText[u] = tok.Decode(us)
		k.Meta.UnitTextTokens += len(us)
	}
	graphs, usage, err := extractUnits(ctx, unitText, o)
	if err != nil {
		return nil, err
	}
	sk := mergeSkeleton(graphs, o.MaxDescriptions)
	k.splitPieces(units, tok, o.PieceTokens)
	k.linkPieces(sk)
	if err := k.embedSkeleton(ctx, ix, sk, o.Progress); err != nil {
		return nil, err
	}
	parts, err := k.buildKeywords(ctx, ix, texts, o.Workers, o.Progress)
	if err != nil {
		return nil, err
	}
	k.deriveEntityRels()
	k.Meta = Meta{Tokenizer: tiktoken.Name, Beta: o.Beta, Selection: o.Selection, Seed: o.Seed, KNN: o.KNN,
		Search: o.Search, Ef: o.Ef, ChunkNeighbours: k.Meta.ChunkNeighbours, Damping: o.Damping,
		UnitTokens: o.UnitTokens, PieceTokens: o.PieceTokens, MaxDescriptions: o.MaxDescriptions, Extractor: o.Extractor.Name(), Chunks: ix.N(), Chunked: k.Meta.Chunked,
		ChunkGraphEdges: edges, Core: len(k.Core), Units: len(units), UnitTextTokens: k.Meta.UnitTextTokens, Pieces: k.Pieces.Len(),
		Entities: k.EntityNames.Len(), Relationships: len(k.RelSrc), Keywords: k.Keywords.Len(), KeywordEdges: len(k.KeywordChunks.Idx),
		SentenceParts: parts, Usage: usage,
		BuildSeconds: round4(time.Since(start).Seconds())}
	if k.Meta.Entities == 0 {
		o.Logger.Warn("ketrag: the extractor found no entity in the core chunks: the skeleton channel will be empty (only the keyword channel answers)", "extractor", k.Meta.Extractor)
	}
	o.Logger.Info("ketrag built", "core", k.Meta.Core, "units", k.Meta.Units, "entities", k.Meta.Entities,
		"relationships", k.Meta.Relationships, "keywords", k.Meta.Keywords, "seconds", k.Meta.BuildSeconds)
	return k, nil
}

// selectCore ranks the nodes by PageRank over the kNN chunk graph and
// keeps the top floor(β·n) (at least one), or a uniform sample, ascending.
func (k *KETRAG) selectCore(ctx context.Context, ix *index.Index, o BuildOptions) (int, error) {
	n := ix.N()
	o.Progress.Stage("chunk graph and pagerank", 0)
	defer o.Progress.Finish()
	var edges []graphops.Edge
	k.Meta.ChunkNeighbours = "none"
	if n > 1 {
		err := k.chunkNeighbours(ix, &o)
		if err != nil {
			return 0, err
		}
		if edges, err = graphops.KNNEdges(ctx, o.Backend, ix.TermDocs(), ix.Vectors, ix.Meta.Dims, o.KNN); err != nil {
			return 0, err
		}
	}
	pr, err := ChunkPageRank(ctx, n, edges, o.Damping)
	if err != nil {
		return 0, err
	}
	k.PageRank = make([]float32, n)
	for i, x := range pr {
		k.PageRank[i] = float32(x)
	}
	k.RankOrder = rankOrder(pr)
	k.Core = coreOf(k.RankOrder, o.Beta, o.Selection, o.Seed)
	return len(edges), nil
}

// chunkNeighbours sets how the chunk graph's semantic neighbours are
// found (o.KNN.Nearest: nil for exact search) and records it: exact,
// hnsw, or none without semantic neighbours.
func (k *KETRAG) chunkNeighbours(ix *index.Index, o *BuildOptions) error {
	if o.KNN.Semantic == 0 {
		return nil
	}
	nearest, err := retrieve.NearestRows(ix, o.Backend, o.Search, o.Ef)
	if err != nil {
		return fmt.Errorf("ketrag: chunk graph: %w", err)
	}
	o.KNN.Nearest, k.Meta.ChunkNeighbours = nearest, retrieve.SearchExact
	if nearest != nil {
		k.Meta.ChunkNeighbours = retrieve.SearchHNSW
	}
	return nil
}

// rankOrder sorts the nodes by PageRank, best first, ties to the lower id.
func rankOrder(pr []float64) []int32 {
	order := make([]int32, len(pr))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(a, b int32) int { return cmp.Compare(pr[b], pr[a]) })
	return order
}

// coreOf picks floor(β·n) nodes (at least one): the first of the PageRank
// order, or a uniform sample with seed; ascending.
func coreOf(byRank []int32, beta float64, selection string, seed int64) []int32 {
	n := len(byRank)
	order := slices.Clone(byRank)
	if selection == SelectUniform {
		for i := range order {
			order[i] = int32(i)
		}
		rand.New(rand.NewSource(seed)).Shuffle(n, func(a, b int) { order[a], order[b] = order[b], order[a] })
	}
	core := order[:max(1, int(beta*float64(n)))]
	slices.Sort(core)
	return core
}

// ChunkPageRank is networkx's unweighted PageRank over the undirected
// chunk graph (uniform teleport, dangling mass spread uniformly).
func ChunkPageRank(ctx context.Context, n int, edges []graphops.Edge, damping float64) ([]float64, error) {
	g, err := graphops.Build(n, edges, false)
	if err != nil {
		return nil, err
	}
	adj := graphops.Undirected(g, false, nil)
	reset := make([]float64, n)
	for i := range reset {
		reset[i] = 1
	}
	po := graphops.DefaultPPROptions()
	po.Damping = damping
	pr, _, err := graphops.PersonalizedPageRank(ctx, adj, reset, po)
	return pr, err
}

// allChunks reports whether every node is a token-chunk piece.
func allChunks(ix *index.Index) bool {
	for i := 0; i < ix.N(); i++ {
		if ix.Type(i) != "chunk" {
			return false
		}
	}
	return true
}

// Separated reports whether the chunks of a unit are joined by a
// one-token line break: passages are; pieces of a chunked corpus
// concatenate as KET-RAG merges its sub-chunks (consecutive pieces rejoin
// their text).
func (k *KETRAG) Separated() bool { return !k.Meta.Chunked }

// unitBounds greedily merges consecutive core chunks (in id order) into
// units of at most unitTokens tokens, a separator (sep tokens) counted
// between passages (not between the pieces of a chunked corpus); a longer
// chunk is a unit of its own. Unit u is core[ptr[u]:ptr[u+1]].
func unitBounds(core, tokens []int32, unitTokens int, chunked bool, sep int) []int64 {
	ptr := []int64{0}
	cur := 0
	for i, c := range core {
		add := int(tokens[c])
		if cur > 0 && !chunked {
			add += sep
		}
		if cur > 0 && cur+add > unitTokens {
			ptr = append(ptr, int64(i))
			cur, add = 0, int(tokens[c])
		}
		cur += add
	}
	if len(core) > 0 {
		ptr = append(ptr, int64(len(core)))
	}
	return ptr
}

// mergeUnits sets the units and returns each one's token ids.
func (k *KETRAG) mergeUnits(ids [][]int, unitTokens int, chunked bool, sep []int) [][]int {
	k.UnitPtr = unitBounds(k.Core, k.NodeTokens, unitTokens, chunked, len(sep))
	units := make([][]int, len(k.UnitPtr)-1)
	for u := range units {
		part := k.Core[k.UnitPtr[u]:k.UnitPtr[u+1]]
		for i, c := range part {
			if i > 0 && !chunked {
				units[u] = append(units[u], sep...)
			}
			units[u] = append(units[u], ids[c]...)
		}
	}
	return units
}

// extractUnits runs the extractor over every unit on o.Workers goroutines.
func extractUnits(ctx context.Context, units []string, o BuildOptions) ([]kgextract.Graph, kgextract.Usage, error) {
	graphs := make([]kgextract.Graph, len(units))
	usages := make([]kgextract.Usage, len(units))
	err := parallel.ForEach(ctx, len(units), o.Workers, o.Progress, "extract ("+o.Extractor.Name()+")", func(ctx context.Context, u int) error {
		g, us, err := o.Extractor.Extract(ctx, units[u])
		usages[u] = us
		if err != nil {
			return fmt.Errorf("index: ketrag: extracting unit %d of %d: %w", u, len(units), err)
		}
		graphs[u] = g
		return nil
	})
	var total kgextract.Usage
	for _, us := range usages {
		total.Add(us)
	}
	return graphs, total, err
}

// skeleton is the merged extraction before it is stored.
type skeleton struct {
	names, types, descs []string
	entUnits            [][]int32
	src, dst            []int32
	relDescs            []string
	weight              []float32
	relUnits            [][]int32
}

// mergeSkeleton merges entities by normalised name (first surface form,
// most frequent type, distinct descriptions) and relationships by
// unordered pair, as GraphRAG's undirected graph does (first orientation
// kept, weights summed), in unit order.
func mergeSkeleton(graphs []kgextract.Graph, maxDesc int) *skeleton {
	s := &skeleton{}
	ent := map[string]int32{}
	typeVotes := []map[string]int{}
	entDescs := [][]string{}
	rel := map[[2]int32]int32{}
	relDescs := [][]string{}
	entity := func(name, typ, desc string, u int32) int32 {
		key := kgextract.NormalizeName(name)
		e, ok := ent[key]
		if !ok {
			e = int32(len(s.names))
			ent[key] = e
			s.names = append(s.names, name)
			typeVotes = append(typeVotes, map[string]int{})
			entDescs = append(entDescs, nil)
			s.entUnits = append(s.entUnits, nil)
		}
		if typ != "" {
			typeVotes[e][typ]++
		}
		entDescs[e] = appendDesc(entDescs[e], desc, maxDesc)
		s.entUnits[e] = appendUnit(s.entUnits[e], u)
		return e
	}
	for u, g := range graphs {
		for _, e := range g.Entities {
			if kgextract.NormalizeName(e.Name) != "" {
				entity(e.Name, e.Type, e.Description, int32(u))
			}
		}
		for _, r := range g.Relationships {
			a, b := kgextract.NormalizeName(r.Source), kgextract.NormalizeName(r.Target)
			if a == "" || b == "" || a == b {
				continue
			}
			pair := [2]int32{entity(r.Source, "", "", int32(u)), entity(r.Target, "", "", int32(u))}
			key := [2]int32{min(pair[0], pair[1]), max(pair[0], pair[1])} // GraphRAG's graph is undirected
			id, ok := rel[key]
			if !ok {
				id = int32(len(s.src))
				rel[key] = id
				s.src, s.dst = append(s.src, pair[0]), append(s.dst, pair[1])
				s.weight = append(s.weight, 0)
				relDescs = append(relDescs, nil)
				s.relUnits = append(s.relUnits, nil)
			}
			s.weight[id] += float32(r.Weight)
			relDescs[id] = appendDesc(relDescs[id], r.Description, maxDesc)
			s.relUnits[id] = appendUnit(s.relUnits[id], int32(u))
		}
	}
	for e := range s.names {
		s.types = append(s.types, topVote(typeVotes[e]))
		s.descs = append(s.descs, strings.Join(entDescs[e], "\n"))
	}
	for _, d := range relDescs {
		s.relDescs = append(s.relDescs, strings.Join(d, "\n"))
	}
	return s
}

func appendDesc(ds []string, d string, maxDesc int) []string {
	if d = strings.TrimSpace(d); d == "" || len(ds) >= maxDesc || slices.Contains(ds, d) {
		return ds
	}
	return append(ds, d)
}

func appendUnit(us []int32, u int32) []int32 {
	if len(us) > 0 && us[len(us)-1] == u {
		return us
	}
	return append(us, u)
}

// topVote is the most frequent type, ties to the alphabetically first.
func topVote(v map[string]int) string {
	best, n := "", 0
	for t, c := range v {
		if c > n || c == n && t < best {
			best, n = t, c
		}
	}
	return best
}

// splitPieces re-splits every unit into pieceTokens-token text units.
func (k *KETRAG) splitPieces(units [][]int, tok *tiktoken.Encoder, pieceTokens int) {
	var texts []string
	for u, ids := range units {
		for s := 0; s < len(ids); s += pieceTokens {
			e := min(s+pieceTokens, len(ids))
			texts = append(texts, tok.Decode(ids[s:e]))
			k.PieceTokens = append(k.PieceTokens, int32(e-s))
			k.PieceUnit = append(k.PieceUnit, int32(u))
		}
	}
	k.Pieces = index.PackStrings(texts)
}

// linkPieces maps entities and relationships to the text units of their
// units that mention them (an entity's name, lowercased, found in the
// piece; a relationship's source or target); a unit none of whose pieces
// mentions them contributes its first piece. The skeleton's names and
// descriptions move into k.
func (k *KETRAG) linkPieces(s *skeleton) {
	first := make([]int32, len(k.UnitPtr)) // first piece of each unit
	for p := len(k.PieceUnit) - 1; p >= 0; p-- {
		first[k.PieceUnit[p]] = int32(p)
	}
	lower := make([]string, k.Pieces.Len())
	for p := range lower {
		lower[p] = strings.ToLower(k.Pieces.At(p))
	}
	mentions := func(units []int32, names ...string) []int32 {
		for i, n := range names {
			names[i] = strings.ToLower(n)
		}
		var out []int32
		for _, u := range units {
			found := false
			for p := first[u]; int(p) < len(k.PieceUnit) && k.PieceUnit[p] == u; p++ {
				for _, n := range names {
					if strings.Contains(lower[p], n) {
						out, found = append(out, p), true
						break
					}
				}
			}
			if !found {
				out = append(out, first[u])
			}
		}
		return out
	}
	entRows := make([][]int32, len(s.names))
	for e := range entRows {
		entRows[e] = mentions(s.entUnits[e], s.names[e])
	}
	relRows := make([][]int32, len(s.src))
	for r := range relRows {
		relRows[r] = mentions(s.relUnits[r], s.names[s.src[r]], s.names[s.dst[r]])
	}
	k.EntityPieces, k.RelPieces = graphops.RowsCSR(entRows), graphops.RowsCSR(relRows)
	k.EntityNames, k.EntityTypes, k.EntityDescs = index.PackStrings(s.names), index.PackStrings(s.types), index.PackStrings(s.descs)
	k.RelSrc, k.RelDst, k.RelDescs, k.RelWeight = s.src, s.dst, index.PackStrings(s.relDescs), s.weight
	k.EntityRank = make([]int32, len(s.names))
	for r := range s.src {
		k.EntityRank[s.src[r]]++
		k.EntityRank[s.dst[r]]++
	}
}

// embedSkeleton embeds "name:description" of every entity (as GraphRAG
// embeds entity descriptions) and every relationship's description.
func (k *KETRAG) embedSkeleton(ctx context.Context, ix *index.Index, s *skeleton, p progress.Reporter) error {
	texts := make([]string, len(s.names))
	for e := range texts {
		texts[e] = s.names[e] + ":" + s.descs[e]
	}
	var err error
	if k.EntityVecs, err = ix.EmbedTexts(ctx, "entity descriptions", texts, p); err != nil {
		return err
	}
	k.RelVecs, err = ix.EmbedTexts(ctx, "relationship descriptions", s.relDescs, p)
	return err
}

// buildKeywords builds the text–keyword graph over every node and the
// keyword vectors; it returns the number of sentence parts.
func (k *KETRAG) buildKeywords(ctx context.Context, ix *index.Index, texts []string, workers int, p progress.Reporter) (int, error) {
	seg, err := ner.NewSegmenter()
	if err != nil {
		return 0, err
	}
	p.Stage("keyword graph", 0)
	g, err := graphops.BuildKeywordGraph(ctx, texts, graphops.KeywordText{Sentences: seg.Split, Words: lexical.TreebankWords, Keep: lexical.IsKeyword, Workers: workers})
	p.Finish()
	if err != nil {
		return 0, err
	}
	partVecs, err := ix.EmbedTexts(ctx, "sentence parts", g.Parts, p)
	if err != nil {
		return 0, err
	}
	k.Keywords, k.KeywordChunks = index.PackStrings(g.Keywords), g.Chunks
	k.KeywordVecs = graphops.MeanRows(g.Mentions, partVecs, ix.Meta.Dims)
	return len(g.Parts), nil
}

// deriveEntityRels builds entity → relationships from the endpoints.
func (k *KETRAG) deriveEntityRels() {
	rows := make([][]int32, k.EntityNames.Len())
	for r := range k.RelSrc {
		rows[k.RelSrc[r]] = append(rows[k.RelSrc[r]], int32(r))
		rows[k.RelDst[r]] = append(rows[k.RelDst[r]], int32(r))
	}
	k.EntityRels = graphops.RowsCSR(rows)
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }
