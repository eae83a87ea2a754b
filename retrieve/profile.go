package retrieve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"

	"github.com/gleaner-rag/gleaner/index"
	"slices"
	"strings"
)

// Profile is a method and the settings chosen for it (gleaner tune writes
// one for an index): what `gleaner query`, `eval` and `serve` run when
// given --profile, under any flags given explicitly.
type Profile struct {
	Method string `json:"method"`
	// Settings by name (as the flags spell them), as text.
	Settings map[string]string `json:"settings,omitempty"`
	// GroupBy is GroupPassage ("" too) or GroupDocument.
	GroupBy string `json:"group_by,omitempty"`
	// Tuned records how the profile was chosen, when tune chose it.
	Tuned *TuneRecord `json:"tuned,omitempty"`
}

// TuneRecord is a profile's provenance.
type TuneRecord struct {
	Index   string  `json:"index"`
	Queries string  `json:"queries"`
	N       int     `json:"n"`      // questions scored
	Metric  string  `json:"metric"` // e.g. "recall@5"
	Folds   int     `json:"folds"`
	Seed    uint64  `json:"seed"`
	CV      float64 `json:"cv"`  // k-fold estimate of tuning: chosen on the other folds, scored on each
	Dev     float64 `json:"dev"` // the chosen configuration on every question (optimistic)
	Created string  `json:"created"`
}

// maxProfileBytes bounds a profile file.
const maxProfileBytes = 1 << 20

// ReadProfile reads and checks a profile: its method exists and its
// settings apply (Config).
func ReadProfile(path string) (*Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxProfileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxProfileBytes {
		return nil, fmt.Errorf("profile %s: over %d bytes; not a profile", path, maxProfileBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var p Profile
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("profile %s: %w", path, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("profile %s: trailing data after the JSON object", path)
	}
	if _, err := p.Config(); err != nil {
		return nil, fmt.Errorf("profile %s: %w", path, err)
	}
	return &p, nil
}

// Config is the profile's method configuration.
func (p *Profile) Config() (*Config, error) {
	if p.Method == "" {
		return nil, fmt.Errorf("no method: %w", ErrInvalid)
	}
	if err := CheckGroupBy(p.GroupBy); err != nil {
		return nil, err
	}
	cfg, err := NewConfig(p.Method)
	if err != nil {
		return nil, err
	}
	ov := p.Overrides()
	if err := ov.Apply(cfg); err != nil {
		return nil, err
	}
	if unused := ov.Unused(cfg); len(unused) > 0 {
		return nil, fmt.Errorf("method %s has no settings %v: %w", p.Method, unused, ErrInvalid)
	}
	return cfg, cfg.Validate()
}

// Overrides are the profile's settings.
func (p *Profile) Overrides() Overrides {
	var o Overrides
	for _, k := range slices.Sorted(maps.Keys(p.Settings)) {
		o.Set(k, p.Settings[k])
	}
	return o
}

// WriteProfile writes p to path, which must not exist unless replace is
// set (a profile is replaced whole: written beside it, then renamed).
func WriteProfile(path string, p *Profile, replace bool) error {
	if _, err := p.Config(); err != nil {
		return err
	}
	if _, err := os.Stat(path); err == nil && !replace {
		return fmt.Errorf("%s exists; pass --force to replace it", path)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // gone once renamed
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// Auto is the method name that picks DefaultProfile for the index.
const Auto = "auto"

// linkKinds are the edge kinds seeded PageRank is measured to gain from:
// links between pages and mentions of one page's title in another.
var linkKinds = []string{"links", "mentions"}

// DefaultProfile is what a newcomer gets without choosing (docs/choosing.md):
// seeded PageRank ("ppr": BM25's top 5 restart a walk) over the index's
// links and mentions edges when it has either — well ahead of BM25 on
// every such corpus measured — and BM25 otherwise: on similarity (kNN)
// graphs seeded PageRank measured 0.01–0.04 below BM25.
func DefaultProfile(ix *index.Index) *Profile {
	var kinds []string
	for _, k := range linkKinds {
		if slices.Contains(ix.Meta.GraphKinds, k) {
			kinds = append(kinds, k)
		}
	}
	if len(kinds) == 0 {
		return &Profile{Method: "bm25"}
	}
	return &Profile{Method: "ppr", Settings: map[string]string{"graph-kind": strings.Join(kinds, ",")}}
}
