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
	"strconv"

	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/internal/excerpt"
	"github.com/gleaner-rag/gleaner/internal/jsonfile"
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
// settings apply (Config). Settings may be spelled as flags ("ppr-seeds")
// or as the server's options ("ppr_seeds"), with text or JSON values; a
// key given twice is an error.
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
	p, err := parseProfile(b)
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", path, err)
	}
	return p, nil
}

// profileFile is a profile as written, settings of any JSON type.
type profileFile struct {
	Method   string                     `json:"method"`
	Settings map[string]json.RawMessage `json:"settings"`
	GroupBy  string                     `json:"group_by"`
	Tuned    *TuneRecord                `json:"tuned"`
}

func parseProfile(b []byte) (*Profile, error) {
	var raw profileFile
	if err := jsonfile.Decode(b, &raw); err != nil {
		return nil, jsonProblem(err)
	}
	if raw.Method == Auto {
		return nil, fmt.Errorf(`method "auto" is what runs without a profile; a profile names a method: %w`, ErrInvalid)
	}
	p := &Profile{Method: raw.Method, GroupBy: raw.GroupBy, Tuned: raw.Tuned}
	for k, v := range raw.Settings {
		text, err := settingText(v)
		if err != nil {
			return nil, fmt.Errorf("settings.%s: %w", excerptOf(k), err)
		}
		if p.Settings == nil {
			p.Settings = map[string]string{}
		}
		name := strings.ReplaceAll(k, "_", "-")
		if _, dup := p.Settings[name]; dup {
			return nil, fmt.Errorf("settings: %q is given twice (as %s and %s)", name, name, strings.ReplaceAll(name, "-", "_"))
		}
		p.Settings[name] = text
	}
	if _, err := p.Config(); err != nil {
		return nil, err
	}
	return p, nil
}

// settingText is a setting's JSON value as its flag text.
func settingText(v json.RawMessage) (string, error) {
	var x any
	if err := json.Unmarshal(v, &x); err != nil {
		return "", err
	}
	switch x := x.(type) {
	case string:
		return x, nil
	case float64, bool:
		return string(bytes.TrimSpace(v)), nil
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			switch e := e.(type) {
			case string:
				parts[i] = e
			case float64:
				parts[i] = strconv.FormatFloat(e, 'g', -1, 64)
			default:
				return "", errors.New("a list of strings or numbers, please")
			}
		}
		return strings.Join(parts, ","), nil
	}
	return "", errors.New("null or an object; want text, a number, a boolean or a list")
}

// jsonProblem says what is wrong with a profile's JSON without Go's type
// names.
func jsonProblem(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Errorf("field %q: want %s, got %s", te.Field, te.Type.Kind(), te.Value)
	}
	if s := err.Error(); strings.HasPrefix(s, "json: unknown field ") {
		return fmt.Errorf("unknown field %s (want method, settings, group_by, tuned)", excerptOf(strings.TrimPrefix(s, "json: unknown field ")))
	}
	return err
}

func excerptOf(s string) string { return excerpt.Of(s, 64) }

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

// profileTarget checks that path may take a profile: absent, or with
// replace a regular file (not a link, a device or a pipe, which a rename
// would swap out), whose permissions the new one keeps.
func profileTarget(path string, replace bool) (os.FileMode, error) {
	st, err := os.Lstat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		dir := filepath.Dir(path)
		if d, err := os.Stat(dir); err != nil || !d.IsDir() {
			return 0, fmt.Errorf("%s: the folder %s does not exist", path, dir)
		}
		return 0o644, nil
	case err != nil:
		return 0, err
	case !st.Mode().IsRegular():
		return 0, fmt.Errorf("%s is not a regular file (%s); give a file name", path, st.Mode().Type())
	case !replace:
		return 0, fmt.Errorf("%s exists; pass --force to replace it", path)
	}
	return st.Mode().Perm(), nil
}

// CheckProfileTarget reports, before any work, whether WriteProfile could
// write path.
func CheckProfileTarget(path string, replace bool) error {
	_, err := profileTarget(path, replace)
	return err
}

// WriteProfile writes p to path, which must not exist unless replace is
// set (a profile is replaced whole: written beside it, then renamed).
func WriteProfile(path string, p *Profile, replace bool) error {
	if _, err := p.Config(); err != nil {
		return err
	}
	mode, err := profileTarget(path, replace)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	return jsonfile.Replace(path, append(b, '\n'), mode)
}

// Auto is the method name that picks DefaultProfile for the index.
const Auto = "auto"

// AutoMethods are the methods Auto may pick.
var AutoMethods = []string{"ppr", "bm25"}

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
