package main

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/retrieve"
)

// methodFlags are the retrieval-method settings that query and eval share;
// they start from retrieve.DefaultOptions, so a flag left alone keeps the
// library's default and a flag set to 0 means 0.
type methodFlags struct {
	o         retrieve.Options
	kinds     string
	quotas    string
	preset    string
	precision string
	fl        *pflag.FlagSet
	g         *globals
}

func addMethodFlags(fl *pflag.FlagSet, g *globals) *methodFlags {
	f := &methodFlags{o: retrieve.DefaultOptions(), g: g, fl: fl}
	d := f.o
	fl.StringVar(&f.kinds, "graph-kind", "", "comma-separated edge kinds graph methods use (default: all)")
	fl.StringVar(&f.o.FirstStage, "first-stage", d.FirstStage, "ranking fastinsight, gar, re2 and ppr start from: "+strings.Join(retrieve.Stages(), ", "))
	fl.StringVar(&f.o.Hybrid.Fusion, "hybrid-fusion", d.Hybrid.Fusion, "hybrid first stage: convex (weighted normalised scores) or rrf (reciprocal-rank fusion)")
	fl.Float64Var(&f.o.Hybrid.Weight, "hybrid-weight", d.Hybrid.Weight, "convex hybrid: BM25's weight in [0,1]; vector search gets 1 − weight")
	fl.IntVar(&f.o.Hybrid.RRFK, "rrf-k", d.Hybrid.RRFK, "rrf hybrid: k in 1/(k + rank)")
	fl.IntVar(&f.o.Hybrid.Depth, "rrf-depth", d.Hybrid.Depth, "rrf hybrid: results of each ranking that count")
	fl.StringVar(&f.o.PPR.Reset, "ppr-reset", d.PPR.Reset, "ppr restart vector: seeds (the first stage's top --ppr-seeds) or dense (HippoRAG 2's, every passage)")
	fl.IntVar(&f.o.PPR.Seeds, "ppr-seeds", d.PPR.Seeds, "ppr: first-stage results that restart the walk")
	fl.StringVar(&f.o.PPR.SeedWeight, "ppr-seed-weight", d.PPR.SeedWeight, "ppr: seed weight ∝ score or ∝ 1/rank (score|rank)")
	fl.Float64Var(&f.o.PPR.Damping, "damping", d.PPR.Damping, "ppr: probability of following an edge, in (0,1)")
	fl.StringVar(&f.o.Model, "model", "", "cross-encoder folder for re2, gar and fastinsight (tokenizer.json, config.json, model.safetensors and/or model.onnx); default: the embedded lexical encoder")
	fl.StringVar(&f.o.Runtime, "runtime", "", "runtime for --model: native or ort (default: native when model.safetensors exists)")
	fl.StringVar(&f.precision, "precision", "fp32", "GEMM precision --model's native runtime may use: fp32, tf32 or bf16 (tensor cores on a GPU; the cpu backend computes fp32)")
	fl.IntVar(&f.o.FastInsight.BMax, "bmax", d.FastInsight.BMax, "FastInsight b_max; also GAR's budget and re2's rerank depth")
	fl.IntVar(&f.o.FastInsight.Batch, "batch", d.FastInsight.Batch, "FastInsight BATCH; also GAR's batch")
	fl.Float64Var(&f.o.FastInsight.Alpha, "alpha", d.FastInsight.Alpha, "FastInsight GRanker smoothing α in [0,1] (0 disables)")
	fl.Float64Var(&f.o.FastInsight.Beta, "beta", d.FastInsight.Beta, "FastInsight STeX structure weight β ≥ 0 (0: similarity only; inf: structure only)")
	fl.BoolVar(&f.o.FastInsight.KeepIsolated, "keep-isolated", false, "FastInsight: a node without retrieved neighbours keeps its latent (default: literal (1−α)H)")
	addTriGraphFlags(fl, f)
	k, dk := &f.o.KETRAG, f.o.KETRAG
	fl.IntVar(&k.Budget, "budget", dk.Budget, "ketrag: λ, the context's size in cl100k_base tokens")
	fl.Float64Var(&k.Theta, "theta", dk.Theta, "ketrag: θ in [0,1]; the keyword channel gets int(λ(1−θ)) tokens, the skeleton the rest")
	fl.IntVar(&k.TopKeywords, "top-keywords", dk.TopKeywords, "ketrag: keywords the keyword channel walks")
	fl.IntVar(&k.TopEntities, "top-entities", dk.TopEntities, "ketrag: entities the skeleton channel selects")
	fl.Float64Var(&k.TextUnitProp, "text-unit-prop", dk.TextUnitProp, "ketrag: share of the skeleton's budget for text units (the rest: entities and relationships)")
	fl.IntVar(&k.TopRelationships, "top-relationships", dk.TopRelationships, "ketrag: out-of-network relationships per selected entity")
	fl.IntVar(&f.o.KG.K0, "k0", d.KG.K0, "kg-seeds, kg-khop: dictionary-linked seeds kept (the rest filled by cosine; seeder uses the settings it was trained with)")
	fl.StringVar(&f.quotas, "khop-quotas", "200,200,100", "kg-khop: nodes added at each hop, comma-separated (seeder: its training settings)")
	fl.IntVar(&f.o.KG.KHop.Cap, "khop-cap", d.KG.KHop.Cap, "kg-khop: the candidate graph's size, seeds included (seeder: its training settings)")
	fl.IntVar(&f.o.Seeder.Select, "seeder-select", d.Seeder.Select, "seeder: nodes returned (the best by policy, sorted by the scoring head)")
	addFuseRAGFlags(fl, f)
	return f
}

// addFuseRAGFlags adds fuserag's retrieval and anchor settings.
func addFuseRAGFlags(fl *pflag.FlagSet, f *methodFlags) {
	u, d := &f.o.FuseRAG, f.o.FuseRAG
	fl.IntVar(&u.Start, "fuserag-start", d.Start, "fuserag: first-stage results the greedy walk starts from")
	fl.IntVar(&u.Budget, "fuserag-k", d.Budget, "fuserag: K, the evidence set's size (start nodes included)")
	fl.Float64Var(&u.Lambda, "fuserag-lambda", d.Lambda, "fuserag: novelty weight λ in the gain rel(q,v) − λ·max sim(v, selected)")
	fl.Float64Var(&u.Stop, "fuserag-stop", d.Stop, "fuserag: STOP's value; the walk ends when the best gain is below it (-inf: fill K)")
	fl.Float64Var(&u.Anchors.LinkWeight, "link-weight", d.Anchors.LinkWeight, "fuserag anchors: λ_link, the weight of a clause's links to other retrieved passages")
	fl.IntVar(&u.Anchors.MinClauseWords, "clause-words", d.Anchors.MinClauseWords, "fuserag anchors: a sentence splits at a comma when both sides keep this many words")
	fl.BoolVar(&u.Anchors.Titles, "anchor-titles", d.Anchors.Titles, "fuserag anchors: prefix each clause with its passage's title (counted in τ)")
}

// checkFuseRAGFlags names the flag a bad fuserag setting came from.
func checkFuseRAGFlags(o retrieve.FuseRAGOptions) error {
	switch {
	case o.Start < 1:
		return fmt.Errorf("--fuserag-start must be ≥ 1, got %d", o.Start)
	case o.Budget < 1:
		return fmt.Errorf("--fuserag-k must be ≥ 1, got %d", o.Budget)
	case !(o.Lambda >= 0) || math.IsInf(o.Lambda, 1):
		return fmt.Errorf("--fuserag-lambda must be finite and ≥ 0, got %v", o.Lambda)
	case math.IsNaN(o.Stop):
		return fmt.Errorf("--fuserag-stop must be a number (or -inf), got NaN")
	case !(o.Anchors.LinkWeight >= 0) || math.IsInf(o.Anchors.LinkWeight, 1):
		return fmt.Errorf("--link-weight must be finite and ≥ 0, got %v", o.Anchors.LinkWeight)
	case o.Anchors.MinClauseWords < 1:
		return fmt.Errorf("--clause-words must be ≥ 1, got %d", o.Anchors.MinClauseWords)
	}
	return nil
}

// addTriGraphFlags adds nexusrag's and linearrag's settings; --preset sets
// them all and any of them given explicitly overrides the preset.
func addTriGraphFlags(fl *pflag.FlagSet, f *methodFlags) {
	t, d := &f.o.TriGraph, f.o.TriGraph
	fl.StringVar(&f.preset, "preset", "", "nexusrag/linearrag: the paper's settings for a dataset: "+strings.Join(retrieve.TriGraphPresets(), ", ")+" (default: 2wiki's)")
	fl.IntVar(&t.MaxIter, "max-iter", d.MaxIter, "nexusrag/linearrag: maxT; propagation runs maxT−1 rounds")
	fl.Float64Var(&t.Threshold, "delta", d.Threshold, "nexusrag/linearrag: δ, the pruning threshold (and nexusrag's floor)")
	fl.IntVar(&t.Sentences, "eta", d.Sentences, "nexusrag/linearrag: η, sentences an entity spreads through per round")
	fl.Float64Var(&t.Damping, "tg-damping", d.Damping, "nexusrag/linearrag: PageRank's probability of following an edge, in (0,1)")
	fl.Float64Var(&t.Tolerance, "tg-tol", d.Tolerance, "nexusrag/linearrag: PageRank's L1 tolerance (igraph's 1e-10; larger is faster)")
	fl.Float64Var(&t.PassageWeight, "passage-weight", d.PassageWeight, "nexusrag/linearrag: ω_p, the passages' weight in the restart vector")
	fl.Float64Var(&t.PassageRatio, "passage-ratio", d.PassageRatio, "linearrag: weight of the dense score in a passage's restart mass")
	fl.StringVar(&t.PassageScores, "passage-scores", d.PassageScores, "nexusrag/linearrag: passage similarity of the restart vector: vector (the papers'), bm25 or hybrid")
	fl.BoolVar(&t.Adjacent, "adjacent-passages", d.Adjacent, "nexusrag/linearrag: join consecutive passages in the PageRank graph")
}

// applyPreset sets the tri-graph preset under the flags given explicitly.
func (f *methodFlags) applyPreset(o *retrieve.Options) error {
	if f.preset == "" {
		return nil
	}
	p, err := retrieve.TriGraphPreset(f.preset)
	if err != nil {
		return fmt.Errorf("--preset: %w", err)
	}
	set := func(name string, dst, src any) {
		if f.fl.Changed(name) {
			return
		}
		switch d := dst.(type) {
		case *int:
			*d = *src.(*int)
		case *float64:
			*d = *src.(*float64)
		case *bool:
			*d = *src.(*bool)
		}
	}
	t := &o.TriGraph
	set("max-iter", &t.MaxIter, &p.MaxIter)
	set("delta", &t.Threshold, &p.Threshold)
	set("eta", &t.Sentences, &p.Sentences)
	set("tg-damping", &t.Damping, &p.Damping)
	set("passage-weight", &t.PassageWeight, &p.PassageWeight)
	set("passage-ratio", &t.PassageRatio, &p.PassageRatio)
	set("adjacent-passages", &t.Adjacent, &p.Adjacent)
	return nil
}

// options returns the method settings with b_max (and GAR's budget and
// re2's depth, which follow it) set to bmax.
func (f *methodFlags) options(bmax int) (retrieve.Options, error) {
	o := f.o
	o.Backend = f.g.be
	o.GraphKinds = splitList(f.kinds)
	o.FastInsight.BMax = bmax
	o.GAR = retrieve.GAROptions{Budget: bmax, Batch: o.FastInsight.Batch}
	o.RerankDepth = bmax
	if bmax < 1 {
		return o, fmt.Errorf("--bmax must be ≥ 1, got %d", bmax)
	}
	var err error
	if o.Precision, err = engine.ParsePrecision(f.precision); err != nil {
		return o, fmt.Errorf("--precision: %w", err)
	}
	if o.Precision != engine.PrecisionF32 && o.Model == "" {
		return o, fmt.Errorf("--precision %s applies to a --model cross-encoder", f.precision)
	}
	if err := f.applyPreset(&o); err != nil {
		return o, err
	}
	if err := checkKETRAGFlags(o.KETRAG); err != nil {
		return o, err
	}
	if o.KG.KHop.Quotas, err = parseQuotas(f.quotas); err != nil {
		return o, err
	}
	if err := checkKGFlags(o.KG); err != nil {
		return o, err
	}
	if err := checkFuseRAGFlags(o.FuseRAG); err != nil {
		return o, err
	}
	return o, o.Validate() // every flag, whichever methods run
}

// parseQuotas reads --khop-quotas: counts ≥ 0, comma-separated (they may
// repeat).
func parseQuotas(s string) ([]int, error) {
	var out []int
	for _, it := range strings.Split(s, ",") {
		it = strings.TrimSpace(it)
		var q int
		if _, err := fmt.Sscan(it, &q); err != nil || q < 0 || fmt.Sprint(q) != it {
			return nil, fmt.Errorf("--khop-quotas: %q is not a count ≥ 0", it)
		}
		out = append(out, q)
	}
	return out, nil
}

// checkKGFlags names the flag a bad stage-1/2 setting came from.
func checkKGFlags(o retrieve.KGOptions) error {
	if o.K0 < 1 {
		return fmt.Errorf("--k0 must be ≥ 1, got %d", o.K0)
	}
	if o.KHop.Cap < 1 {
		return fmt.Errorf("--khop-cap must be ≥ 1, got %d", o.KHop.Cap)
	}
	return nil
}

// ketragMethodFlags are the flags only method ketrag reads.
var ketragMethodFlags = []string{"budget", "theta", "top-keywords", "top-entities", "text-unit-prop", "top-relationships"}

// checkKETRAGFlags names the flag a bad ketrag setting came from.
func checkKETRAGFlags(k retrieve.KETRAGOptions) error {
	switch {
	case k.Budget < 1 || k.Budget > retrieve.MaxContextBudget:
		return fmt.Errorf("--budget must be in [1, %d] tokens, got %d", retrieve.MaxContextBudget, k.Budget)
	case !(k.Theta >= 0 && k.Theta <= 1):
		return fmt.Errorf("--theta must be in [0, 1], got %v", k.Theta)
	case k.TopKeywords < 1:
		return fmt.Errorf("--top-keywords must be ≥ 1, got %d", k.TopKeywords)
	case k.TopEntities < 1:
		return fmt.Errorf("--top-entities must be ≥ 1, got %d", k.TopEntities)
	case !(k.TextUnitProp >= 0 && k.TextUnitProp <= 1):
		return fmt.Errorf("--text-unit-prop must be in [0, 1], got %v", k.TextUnitProp)
	case k.TopRelationships < 0:
		return fmt.Errorf("--top-relationships must be ≥ 0, got %d", k.TopRelationships)
	}
	return nil
}

// refuseUnused refuses a ketrag flag when no ketrag method runs, so a
// mistyped command is not silently half-applied; allow lists flags the
// caller uses for every method.
func (f *methodFlags) refuseUnused(methods []string, allow ...string) error {
	if slices.Contains(methods, "ketrag") {
		return nil
	}
	for _, n := range ketragMethodFlags {
		if f.fl.Changed(n) && !slices.Contains(allow, n) {
			return fmt.Errorf("--%s applies to --method ketrag", n)
		}
	}
	return nil
}
