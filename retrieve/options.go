package retrieve

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/kernels/cpu"
)

// First stages: the ranking a method starts from (Options.FirstStage).
const (
	StageBM25   = "bm25"   // BM25 over the index's postings
	StageVector = "vector" // exact dense search over the index's vectors
	StageHybrid = "hybrid" // BM25 and vector search fused (Options.Hybrid)
)

// Stages lists the first stages.
func Stages() []string { return []string{StageBM25, StageVector, StageHybrid} }

// Fusions of the hybrid first stage (HybridOptions.Fusion).
const (
	FusionConvex = "convex" // Weight·BM25/max(BM25) + (1−Weight)·minmax(vector)
	FusionRRF    = "rrf"    // Σ 1/(RRFK + rank) over the two rankings
)

// HybridOptions configure the hybrid first stage.
type HybridOptions struct {
	Fusion string  // FusionConvex or FusionRRF
	Weight float64 // convex: BM25's weight in [0, 1]; vector search gets 1 − Weight
	RRFK   int     // rrf: the constant k of 1/(k + rank), ≥ 1
	Depth  int     // rrf: how many results of each ranking count, ≥ 1
}

// PPR restart vectors (PPROptions.Reset).
const (
	ResetSeeds = "seeds" // the first stage's top Seeds results restart the walk
	ResetDense = "dense" // HippoRAG 2's: every passage, by its min–max-normalised score
)

// Seed weights of the seeded reset (PPROptions.SeedWeight).
const (
	SeedByScore = "score" // ∝ the first stage's score
	SeedByRank  = "rank"  // ∝ 1/rank
)

// PPROptions configure the "ppr" method.
type PPROptions struct {
	Reset      string  // ResetSeeds or ResetDense
	Seeds      int     // seeds: how many first-stage results restart the walk, ≥ 1
	SeedWeight string  // seeds: SeedByScore or SeedByRank
	Damping    float64 // probability of following an edge, in (0, 1)
}

// Options are shared method settings; each method reads and validates the
// ones it uses. Start from DefaultOptions: a zero value is used as given
// (Alpha 0 means no smoothing) or rejected (BMax 0), never replaced by a
// default.
type Options struct {
	// Backend runs the engine ops (GRanker's smoothing, transformer
	// encoders); DefaultOptions gives the CPU backend. Methods that run ops
	// reject a nil Backend.
	Backend engine.Backend
	// GraphKinds restricts graph methods to edges of these kinds (e.g.
	// "mentions"); empty means every kind in the index.
	GraphKinds []string
	// FirstStage is the ranking that fastinsight, gar, re2 and ppr start
	// from: StageBM25, StageVector or StageHybrid.
	FirstStage string
	// Hybrid configures StageHybrid.
	Hybrid HybridOptions
	// Model is a cross-encoder folder (tokenizer.json, config.json and
	// model.safetensors and/or model.onnx) for reranking methods; empty
	// means the embedded lexical cross-encoder.
	Model string
	// Runtime runs Model: "native" (engine ops) or "ort" (ONNX Runtime);
	// empty picks native when model.safetensors exists.
	Runtime string
	// Precision is what Model's GEMMs may use on the native runtime
	// (engine.Precision: the zero value is float32; TF32 and bfloat16 let
	// a GPU use tensor cores). Only a Model may ask for less than float32.
	Precision engine.Precision
	// FastInsight configures "fastinsight" (its ablation variants change
	// one setting of it).
	FastInsight FastInsightOptions
	// GAR configures "gar".
	GAR GAROptions
	// RerankDepth is how many first-stage results re2 rescores, ≥ 1.
	RerankDepth int
	// PPR configures "ppr".
	PPR PPROptions
	// TriGraph configures "nexusrag" and "linearrag".
	TriGraph TriGraphOptions
	// KETRAG configures "ketrag".
	KETRAG KETRAGOptions
	// KG configures "kg-seeds", "kg-khop" and seeder's first stages.
	KG KGOptions
	// Seeder configures "seeder".
	Seeder SeederOptions
	// FuseRAG configures "fuserag".
	FuseRAG FuseRAGOptions
}

// DefaultOptions are the documented defaults of every method (docs in
// README.md; the first stage and the PPR reset were chosen on declared dev
// questions, benchmarks/RESULTS.md).
func DefaultOptions() Options {
	return Options{
		Backend:     cpu.New(),
		FirstStage:  StageBM25,
		Hybrid:      HybridOptions{Fusion: FusionConvex, Weight: 0.8, RRFK: 60, Depth: 1000},
		FastInsight: FastInsightOptions{BMax: 100, Batch: 10, Alpha: 0.2, Beta: 1},
		GAR:         GAROptions{Budget: 100, Batch: 10},
		RerankDepth: 100,
		PPR:         PPROptions{Reset: ResetSeeds, Seeds: 5, SeedWeight: SeedByRank, Damping: 0.5},
		TriGraph:    triGraph2Wiki,
		KETRAG:      DefaultKETRAGOptions(),
		KG:          DefaultKGOptions(),
		Seeder:      SeederOptions{Select: 20},
		FuseRAG:     DefaultFuseRAGOptions(),
	}
}

// triGraph2Wiki is the 2Wiki/HotpotQA preset, the tri-graph default.
var triGraph2Wiki, _ = TriGraphPreset("2wiki")

// validateStage checks the first-stage settings.
func (o Options) validateStage() error {
	if !slices.Contains(Stages(), o.FirstStage) {
		return fmt.Errorf("retrieve: first stage %q: want one of %v", o.FirstStage, Stages())
	}
	h := o.Hybrid // checked whatever the stage: a bad setting is a mistake either way
	switch {
	case h.Fusion != FusionConvex && h.Fusion != FusionRRF:
		return fmt.Errorf("retrieve: hybrid fusion %q: want %q or %q", h.Fusion, FusionConvex, FusionRRF)
	case !(h.Weight >= 0 && h.Weight <= 1):
		return fmt.Errorf("retrieve: hybrid weight %v: want 0 ≤ weight ≤ 1", h.Weight)
	case h.RRFK < 1 || h.Depth < 1:
		return fmt.Errorf("retrieve: hybrid rrf needs k ≥ 1 and depth ≥ 1, got k=%d depth=%d", h.RRFK, h.Depth)
	}
	return nil
}

// validate checks the PageRank settings.
func (o PPROptions) validate() error {
	switch {
	case o.Reset != ResetSeeds && o.Reset != ResetDense:
		return fmt.Errorf("retrieve: ppr reset %q: want %q or %q", o.Reset, ResetSeeds, ResetDense)
	case o.Reset == ResetSeeds && o.Seeds < 1:
		return fmt.Errorf("retrieve: ppr seeds %d: want ≥ 1", o.Seeds)
	case o.Reset == ResetSeeds && o.SeedWeight != SeedByScore && o.SeedWeight != SeedByRank:
		return fmt.Errorf("retrieve: ppr seed weight %q: want %q or %q", o.SeedWeight, SeedByScore, SeedByRank)
	case !(o.Damping > 0 && o.Damping < 1):
		return fmt.Errorf("retrieve: ppr damping %v: want 0 < damping < 1", o.Damping)
	}
	return nil
}

// validate checks FastInsight's settings.
func (o FastInsightOptions) validate() error {
	switch {
	case o.BMax < 1:
		return fmt.Errorf("retrieve: fastinsight b_max %d: want ≥ 1", o.BMax)
	case o.Batch < 1:
		return fmt.Errorf("retrieve: fastinsight batch %d: want ≥ 1", o.Batch)
	case !(o.Alpha >= 0 && o.Alpha <= 1):
		return fmt.Errorf("retrieve: fastinsight alpha %v: want 0 ≤ α ≤ 1", o.Alpha)
	case !(o.Beta >= 0) || math.IsNaN(o.Beta):
		return fmt.Errorf("retrieve: fastinsight beta %v: want β ≥ 0 (+Inf: structure only)", o.Beta)
	}
	return nil
}

// validate checks GAR's settings.
func (o GAROptions) validate() error {
	if o.Budget < 1 || o.Batch < 1 {
		return fmt.Errorf("retrieve: gar budget %d and batch %d: want both ≥ 1", o.Budget, o.Batch)
	}
	return nil
}

// Validate checks every section of o, whichever methods will use it, so a
// mistyped setting is an error even for a method that ignores it. NewWith
// checks only what the method uses.
func (o Options) Validate() error {
	var errs []error
	if o.RerankDepth < 1 {
		errs = append(errs, fmt.Errorf("retrieve: rerank depth %d: want ≥ 1", o.RerankDepth))
	}
	for _, err := range []error{o.validateStage(), o.validatePrecision(), o.PPR.validate(), o.FastInsight.validate(), o.GAR.validate(), o.TriGraph.validate(), o.KETRAG.validate(), o.KG.validate(), o.Seeder.validate(), o.FuseRAG.validate()} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// validatePrecision: a known precision, and below float32 only for a
// Model cross-encoder.
func (o Options) validatePrecision() error {
	switch {
	case o.Precision > engine.PrecisionBF16:
		return fmt.Errorf("retrieve: unknown precision %s", o.Precision)
	case o.Precision != engine.PrecisionF32 && o.Model == "":
		return fmt.Errorf("retrieve: precision %s applies to a Model cross-encoder (the lexical one has no GEMMs)", o.Precision)
	}
	return nil
}

// errNoBackend is returned by methods that run engine ops without one.
var errNoBackend = errors.New("retrieve: Options.Backend is nil (start from retrieve.DefaultOptions, or open one with engine.Open)")
