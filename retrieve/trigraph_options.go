package retrieve

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gleaner-rag/gleaner/models/ner"
)

// TriGraphOptions configure "nexusrag" and "linearrag" (docs/methods.md
// §2.1, §2.4–2.5). Start from TriGraphPreset or DefaultOptions; every field
// is used as given.
type TriGraphOptions struct {
	MaxIter       int     // maxT: propagation runs MaxIter−1 rounds (3 → 2)
	Threshold     float64 // δ: pruning threshold and NexusRAG's floor
	Sentences     int     // η: sentences an entity spreads through per round
	Damping       float64 // PageRank's probability of following an edge, in (0, 1)
	Tolerance     float64 // PageRank stops when a sweep changes π by less than this in L1 (1e-10, igraph's)
	PassageWeight float64 // ω_p: the passages' share of the restart vector
	PassageRatio  float64 // LinearRAG: weight of the dense score in a passage's restart mass
	// PassageScores is the passage similarity of the restart vector: the
	// reference's dense cosine (StageVector) or another first stage
	// (StageBM25, StageHybrid, configured by Options.Hybrid).
	PassageScores string
	// Adjacent joins passage i and i+1 in the PageRank graph (the
	// reference's chunk-order edges).
	Adjacent bool
	// NER finds the question's entities; nil means the extractor the
	// index's Tri-Graph was built with (recorded in its manifest).
	NER ner.EntityExtractor
}

// TriGraphPresets lists the per-dataset presets of §2.1.
func TriGraphPresets() []string { return []string{"2wiki", "hotpotqa", "musique", "medical"} }

// TriGraphPreset returns the settings the papers report for a dataset:
// maxT, δ, η and LinearRAG's passage_ratio differ; d = 0.5 and ω_p = 0.05
// everywhere.
func TriGraphPreset(name string) (TriGraphOptions, error) {
	o := TriGraphOptions{MaxIter: 3, Threshold: 0.4, Sentences: 1, Damping: 0.5, Tolerance: 1e-10, PassageWeight: 0.05, PassageRatio: 0.05, Adjacent: true, PassageScores: StageVector}
	switch name {
	case "2wiki", "hotpotqa":
	case "musique":
		o.MaxIter, o.Threshold, o.Sentences, o.PassageRatio = 5, 0.1, 4, 2.0
	case "medical":
		o.MaxIter, o.Threshold, o.Sentences, o.PassageRatio = 3, 0.5, 3, 1.5
	default:
		return o, fmt.Errorf("retrieve: tri-graph preset %q: want one of %s", name, strings.Join(TriGraphPresets(), ", "))
	}
	return o, nil
}

// maxPassageScale bounds ω_p and passage_ratio: the papers use ≤ 2, and
// values near float64's range overflow exp(·)·ω_p to +Inf.
const maxPassageScale = 1e6

func (o TriGraphOptions) validate() error {
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	switch {
	case o.MaxIter < 1 || o.Sentences < 1:
		return fmt.Errorf("retrieve: tri-graph max iterations %d and sentences %d: want both ≥ 1", o.MaxIter, o.Sentences)
	case !(o.Threshold >= 0) || !finite(o.Threshold):
		return fmt.Errorf("retrieve: tri-graph threshold %v: want a finite δ ≥ 0", o.Threshold)
	case !(o.Damping > 0 && o.Damping < 1):
		return fmt.Errorf("retrieve: tri-graph damping %v: want 0 < d < 1", o.Damping)
	case !(o.Tolerance > 0 && o.Tolerance < 1):
		return fmt.Errorf("retrieve: tri-graph tolerance %v: want 0 < tolerance < 1", o.Tolerance)
	case !slices.Contains(Stages(), o.PassageScores):
		return fmt.Errorf("retrieve: tri-graph passage scores %q: want one of %v", o.PassageScores, Stages())
	case !(o.PassageWeight >= 0 && o.PassageWeight <= maxPassageScale) || !(o.PassageRatio >= 0 && o.PassageRatio <= maxPassageScale):
		return fmt.Errorf("retrieve: tri-graph passage weight %v and ratio %v: want values in [0, %g] (larger ones overflow the restart mass)", o.PassageWeight, o.PassageRatio, maxPassageScale)
	}
	return nil
}
