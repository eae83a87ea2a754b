package seeder

import (
	"errors"
	"fmt"
)

// Config fixes the network's shape. Inputs are PCA-reduced embeddings of
// width In; Hidden is split over Heads.
type Config struct {
	In      int  `json:"in"`       // input width (PCA components)
	Hidden  int  `json:"hidden"`   // node and edge state width
	Heads   int  `json:"heads"`    // attention heads (Hidden divisible by it)
	Layers  int  `json:"layers"`   // Exphormer layers
	MaxHop  int  `json:"max_hop"`  // hop numbers 0..MaxHop get an embedding
	Cycles  int  `json:"cycles"`   // Hamiltonian expander cycles c (0: none)
	Virtual bool `json:"virtual"`  // query virtual node
	HopGate bool `json:"hop_gate"` // gated hop-number embedding
	// Local adds GraphGPS's local sub-model beside the attention (the
	// Exphormer repo's "GCN+Exphormer" layers): relation-gated messages
	// along the KG edges, LN(h + Σ_j (h_j·W_m)⊙(e_ji·W_e')), summed with
	// the attention block's LN(h + attn).
	Local bool `json:"local"`
	// Words and Relations size two learned inputs beyond the paper's frozen
	// embeddings (0 turns each off): a bag of the question's words (Words
	// vocabulary entries) added to every node's and the virtual node's
	// input, and one embedding per relation id and direction added to the
	// relation features. They stand in for what a pretrained text encoder
	// gives the paper and LSA over entity names cannot: relation names and
	// question wording are outside its vocabulary.
	Words     int `json:"words,omitempty"`
	Relations int `json:"relations,omitempty"`
	// Paths adds the learned text side's readings to the inputs (0: off;
	// docs/methods.md §3.5, an extension): Paths+1 path-mass values per
	// node (after each hop, and their hop-weighted sum) and Paths
	// per-hop probabilities per relation row.
	Paths int `json:"paths,omitempty"`
	// Seed fixes the expander cycles (identical in every epoch and at
	// inference) and the initial weights.
	Seed uint64 `json:"seed"`
}

// MaxWidth bounds In and Hidden, so a bad flag cannot ask for terabytes.
const MaxWidth = 4096

// DefaultConfig is the PRIME-sized model (h = 24 → 32 here for 4 heads of
// 8, L = 3) with every optional part on: 5 expander cycles, the virtual
// node and the gated hop embedding (docs/methods.md §3.1 stage 3).
func DefaultConfig() Config {
	return Config{In: 128, Hidden: 32, Heads: 4, Layers: 3, MaxHop: 3, Cycles: 5, Virtual: true, HopGate: true, Local: true, Seed: 1}
}

// Validate checks the shape.
func (c Config) Validate() error {
	var errs []error
	if c.In < 1 || c.In > MaxWidth {
		errs = append(errs, fmt.Errorf("seeder: input width must be 1..%d, got %d", MaxWidth, c.In))
	}
	if c.Hidden < 1 || c.Hidden > MaxWidth || c.Heads < 1 || c.Hidden%c.Heads != 0 {
		errs = append(errs, fmt.Errorf("seeder: hidden width %d must be 1..%d and divisible by the %d heads", c.Hidden, MaxWidth, c.Heads))
	}
	if c.Layers < 1 || c.Layers > 64 {
		errs = append(errs, fmt.Errorf("seeder: layers must be 1..64, got %d", c.Layers))
	}
	if c.MaxHop < 0 || c.MaxHop > 64 {
		errs = append(errs, fmt.Errorf("seeder: max hop must be 0..64, got %d", c.MaxHop))
	}
	if c.Words < 0 || c.Words > 1<<20 || c.Relations < 0 || c.Relations > 1<<20 {
		errs = append(errs, fmt.Errorf("seeder: word vocabulary and relation count must be 0..%d, got %d and %d", 1<<20, c.Words, c.Relations))
	}
	if c.Paths < 0 || c.Paths > 64 {
		errs = append(errs, fmt.Errorf("seeder: path features must be 0..64 hops, got %d", c.Paths))
	}
	if c.Cycles < 0 || c.Cycles > 64 {
		errs = append(errs, fmt.Errorf("seeder: expander cycles must be 0..64, got %d", c.Cycles))
	}
	return errors.Join(errs...)
}
