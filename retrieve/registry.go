package retrieve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/internal/progress"
	"github.com/gleaner-rag/gleaner/models"
)

// Env is what a caller injects into every method: dependencies, not
// settings (those are the method's options).
type Env struct {
	// Backend runs the engine ops (dense search, encoders, smoothing).
	// Methods with dense work refuse a nil Backend: open one with
	// engine.Open("cpu") (after importing kernels/cpu) or cuda.Open.
	Backend engine.Backend
	// Logger receives the methods' log lines; nil logs nothing.
	Logger *slog.Logger
}

// Def defines a method: its name, its options (defaults and the settings
// a caller may change by name) and how to make it over an index. A method
// package registers its Defs in init (Register); the CLI, the server and
// eval learn methods from the registry alone.
type Def[O any] struct {
	Name    string // [a-z0-9-]+: the --method value, a request's "method"
	Summary string // one line, for --help and GET /v1/methods
	// Defaults returns the options at their documented defaults.
	Defaults func() O
	// Params binds every setting of o a caller may change by name, with its
	// rules (Params.Int and the like). It is the options' only definition:
	// flags, request options, the listing, cache keys and validation all
	// come from it.
	Params func(o *O, p *Params)
	// New makes the method over ix with o (which it validates).
	New func(ix *index.Index, env Env, o O) (Method, error)
	// Reads names the index sections the method needs (index.Section).
	Reads []string
	// Host, when set, says the method's work runs on the host whatever
	// Env.Backend is, and why; the CLI says so when --backend is not cpu.
	Host string
	// Tune, when set, makes the method a candidate of `gleaner tune`
	// (package tune), which tries every combination of its axes' values.
	// Ablations and methods for other kinds of corpora leave it nil.
	Tune *Tuning
	// Filters says the method honours Query.Allow (its results equal those
	// of the index with the other nodes deleted); a method without it
	// refuses filtered queries (RefuseFilter).
	Filters bool
}

// Tuning is what `gleaner tune` tries of a method: each axis a setting
// and its candidate values (as the flag would be given), the method's
// default first. No axes: the method runs at its defaults.
type Tuning struct {
	Axes []TuneAxis
}

// TuneAxis is one setting and the values tune tries.
type TuneAxis struct {
	Setting string
	Values  []string
}

// Combinations is the number of configurations the axes make.
func (t *Tuning) Combinations() int {
	n := 1
	for _, a := range t.Axes {
		n *= len(a.Values)
	}
	return n
}

// checkTuning checks that every axis names a setting of cfg and every value
// sets it.
func checkTuning(name string, t *Tuning, newConfig func() *Config) error {
	if t == nil {
		return nil
	}
	seen := map[string]bool{}
	for _, a := range t.Axes {
		if seen[a.Setting] || len(a.Values) == 0 {
			return fmt.Errorf("retrieve: method %q: tune axis %q is repeated or has no values", name, a.Setting)
		}
		seen[a.Setting] = true
		for _, v := range a.Values {
			if err := newConfig().Set(a.Setting, v); err != nil {
				return fmt.Errorf("retrieve: method %q: tune axis: %w", name, err)
			}
		}
	}
	return nil
}

// BuildDef defines a build step: one that computes an index section (a
// graph structure, a trained model) and stores it in the index. The CLI
// runs it as `gleaner graph build --kind NAME` (Group BuildGraph) or
// `gleaner train NAME` (Group BuildTrain).
type BuildDef[O any] struct {
	Name     string
	Group    string // BuildGraph or BuildTrain
	Summary  string // one line
	Long     string // the --help text's paragraph for this kind
	Section  string // the index section it writes
	Defaults func() O
	Params   func(o *O, p *Params)
	// Build computes the section from the index at dir and stores it there
	// (an atomic rewrite); it returns a line describing what it stored.
	Build func(ctx context.Context, env BuildEnv, dir string, o O) (string, error)
	Host  string // as Def.Host
}

// The groups of build steps.
const (
	BuildGraph = "graph" // gleaner graph build --kind NAME
	BuildTrain = "train" // gleaner train NAME
)

// BuildEnv is what a build step gets injected.
type BuildEnv struct {
	Backend engine.Backend
	Logger  *slog.Logger // nil: none
	// Progress shows long stages; nil: none.
	Progress progress.Reporter
	// Embedder embeds text as the index's vectors were made (a bi-encoder
	// the index was built with); nil: the index's own (LSA).
	Embedder models.Embedder
	// Getenv reads the environment variables settings name (an API key's);
	// nil: every variable is empty. The library never reads the
	// environment itself.
	Getenv func(string) string
	// Out receives the lines a long build prints as it goes (training
	// epochs); nil: none.
	Out io.Writer
}

// ReportDef defines a report on an index section: `gleaner graph stats
// --kind NAME`.
type ReportDef[O any] struct {
	Name     string
	Summary  string
	Defaults func() O
	Params   func(o *O, p *Params)
	Run      func(ctx context.Context, env ReportEnv, ix *index.Index, o O) error
}

// ReportEnv is what a report gets.
type ReportEnv struct {
	Env
	Out io.Writer
	// Queries, when given, are what the report explains (gold ids).
	Queries []corpus.Query
	// Method returns the configuration a report's method runs with (the
	// CLI's method flags applied).
	Method func(name string) (*Config, error)
}

// The registries' kinds.
const (
	kindMethod = "method"
	kindBuild  = "build step"
	kindReport = "report"
)

// component is one registered method, build step or report.
type component struct {
	kind, name, summary string
	long, group         string
	section             string
	reads               []string
	host                string
	tune                *Tuning
	filters             bool
	newConfig           func() *Config
}

// Config is one component's options, set by name (Set, SetJSON) or
// through the typed value (Value), as New, Build and Report run them.
type Config struct {
	c      *component
	params *Params
	val    any // *O
	run    any // the typed closure over val
}

var (
	regMu      sync.RWMutex
	components = map[string]map[string]*component{kindMethod: {}, kindBuild: {}, kindReport: {}}
	paramKinds = map[string]Kind{} // every setting name, across components: one kind
)

var componentName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// register checks and adds a component; cfg makes it a fresh Config.
func register(c *component) error {
	if !componentName.MatchString(c.name) {
		return fmt.Errorf("retrieve: %s name %q: use lowercase letters, digits and '-'", c.kind, c.name)
	}
	probe := c.newConfig()
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := components[c.kind][c.name]; dup {
		return fmt.Errorf("retrieve: %s %q registered twice", c.kind, c.name)
	}
	for _, p := range probe.params.list {
		if !componentName.MatchString(p.name) {
			return fmt.Errorf("retrieve: %s %q: setting name %q: use lowercase letters, digits and '-'", c.kind, c.name, p.name)
		}
		if k, ok := paramKinds[p.name]; ok && k != p.kind {
			return fmt.Errorf("retrieve: %s %q: setting %q is %s, elsewhere %s (one name, one kind)", c.kind, c.name, p.name, p.kind, k)
		}
	}
	for _, p := range probe.params.list {
		paramKinds[p.name] = p.kind
	}
	components[c.kind][c.name] = c
	return nil
}

// Register adds a method; a duplicate name, a bad setting name or a setting
// whose kind differs from the same name's elsewhere is an error.
func Register[O any](d Def[O]) error {
	if d.Defaults == nil || d.Params == nil || d.New == nil {
		return fmt.Errorf("retrieve: method %q: Defaults, Params and New are required", d.Name)
	}
	c := &component{kind: kindMethod, name: d.Name, summary: d.Summary, reads: d.Reads, host: d.Host, tune: d.Tune, filters: d.Filters}
	c.newConfig = func() *Config {
		o := d.Defaults()
		cfg := newConfig(c, &o, d.Params)
		cfg.run = func(ix *index.Index, env Env) (Method, error) { return d.New(ix, env, o) }
		return cfg
	}
	if err := checkTuning(d.Name, d.Tune, c.newConfig); err != nil {
		return err
	}
	return register(c)
}

// RegisterBuild adds a build step (see Register).
func RegisterBuild[O any](d BuildDef[O]) error {
	if d.Defaults == nil || d.Params == nil || d.Build == nil {
		return fmt.Errorf("retrieve: build step %q: Defaults, Params and Build are required", d.Name)
	}
	if d.Group != BuildGraph && d.Group != BuildTrain {
		return fmt.Errorf("retrieve: build step %q: group %q, want %q or %q", d.Name, d.Group, BuildGraph, BuildTrain)
	}
	c := &component{kind: kindBuild, name: d.Name, summary: d.Summary, long: d.Long, group: d.Group, section: d.Section, host: d.Host}
	c.newConfig = func() *Config {
		o := d.Defaults()
		cfg := newConfig(c, &o, d.Params)
		cfg.run = func(ctx context.Context, env BuildEnv, dir string) (string, error) { return d.Build(ctx, env, dir, o) }
		return cfg
	}
	return register(c)
}

// RegisterReport adds a report (see Register).
func RegisterReport[O any](d ReportDef[O]) error {
	if d.Defaults == nil || d.Params == nil || d.Run == nil {
		return fmt.Errorf("retrieve: report %q: Defaults, Params and Run are required", d.Name)
	}
	c := &component{kind: kindReport, name: d.Name, summary: d.Summary}
	c.newConfig = func() *Config {
		o := d.Defaults()
		cfg := newConfig(c, &o, d.Params)
		cfg.run = func(ctx context.Context, env ReportEnv, ix *index.Index) error { return d.Run(ctx, env, ix, o) }
		return cfg
	}
	return register(c)
}

// Must panics on a registration error: for init functions, where a bad
// definition is a programming error.
func Must(err error) {
	if err != nil {
		panic(err)
	}
}

func newConfig[O any](c *component, o *O, params func(*O, *Params)) *Config {
	ps := &Params{}
	params(o, ps)
	return &Config{c: c, params: ps, val: o}
}

// Info describes a registered component, with its settings at their
// defaults.
type Info struct {
	Name, Summary string
	Long          string   // build steps: the --help paragraph
	Group         string   // build steps: BuildGraph or BuildTrain
	Section       string   // build steps: the section written
	Reads         []string // methods: the index sections needed
	Host          string   // non-empty: runs on the host, and why
	Tune          *Tuning  // methods: what gleaner tune tries (nil: not a candidate)
	Filters       bool     // methods: honours Query.Allow (metadata filters, ACLs)
	Params        []*Param
}

func infos(kind string) []Info {
	regMu.RLock()
	defer regMu.RUnlock()
	out := make([]Info, 0, len(components[kind]))
	for _, c := range components[kind] {
		out = append(out, Info{Name: c.name, Summary: c.summary, Long: c.long, Group: c.group, Section: c.section,
			Reads: c.reads, Host: c.host, Tune: c.tune, Filters: c.filters, Params: c.newConfig().params.list})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out
}

// Methods describes every registered method, sorted by name.
func Methods() []Info { return infos(kindMethod) }

// Builds describes every registered build step, sorted by name.
func Builds() []Info { return infos(kindBuild) }

// Reports describes every registered report, sorted by name.
func Reports() []Info { return infos(kindReport) }

// Names lists the registered methods, sorted. It reads only the names:
// the server checks every request's method against it, and describing
// every method (Methods) builds each one's settings.
func Names() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	out := make([]string, 0, len(components[kindMethod]))
	for _, c := range components[kindMethod] {
		out = append(out, c.name)
	}
	sort.Strings(out)
	return out
}

// ErrUnknown is returned for a method, build step or report nobody
// registered.
var ErrUnknown = errors.New("unknown")

func lookup(kind, name string) (*component, error) {
	regMu.RLock()
	c, ok := components[kind][name]
	regMu.RUnlock()
	if !ok {
		var have []string
		for _, i := range infos(kind) {
			have = append(have, i.Name)
		}
		return nil, fmt.Errorf("retrieve: %w %s %q (have: %s)", ErrUnknown, kind, name, strings.Join(have, ", "))
	}
	return c, nil
}

// NewConfig returns the options of the method called name at their
// defaults.
func NewConfig(name string) (*Config, error) { return configOf(kindMethod, name) }

// NewBuildConfig returns the options of a build step at their defaults.
func NewBuildConfig(name string) (*Config, error) { return configOf(kindBuild, name) }

// NewReportConfig returns the options of a report at their defaults.
func NewReportConfig(name string) (*Config, error) { return configOf(kindReport, name) }

func configOf(kind, name string) (*Config, error) {
	c, err := lookup(kind, name)
	if err != nil {
		return nil, err
	}
	return c.newConfig(), nil
}

// Name is the component's name.
func (c *Config) Name() string { return c.c.name }

// Params lists the settings.
func (c *Config) Params() []*Param { return c.params.list }

// Param returns the setting called name (CLI spelling), or nil.
func (c *Config) Param(name string) *Param { return c.params.Lookup(name) }

// Value is the typed options (a pointer to the method's options struct).
func (c *Config) Value() any { return c.val }

// Set sets the setting called name from its text.
func (c *Config) Set(name, text string) error {
	p := c.params.Lookup(name)
	if p == nil {
		return &ParamError{Name: clip(name), Value: clip(strconv.Quote(text)), Msg: fmt.Sprintf("%s %s has no such setting", c.c.kind, c.c.name)}
	}
	return p.Set(text)
}

// Validate checks every setting and the rules over several.
func (c *Config) Validate() error {
	if err := c.params.Validate(); err != nil {
		return fmt.Errorf("%s: %w", c.c.name, err)
	}
	return nil
}

// Key identifies the component and its settings: equal keys, equal
// configurations (a server keeps one method per key).
func (c *Config) Key() string { return c.c.kind + ":" + c.c.name + "\x00" + c.params.Key() }

// New makes the method cfg configures over ix, after validating cfg.
func New(ix *index.Index, env Env, cfg *Config) (Method, error) {
	if cfg.c.kind != kindMethod {
		return nil, fmt.Errorf("retrieve: %q is a %s, not a method", cfg.c.name, cfg.c.kind)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg.run.(func(*index.Index, Env) (Method, error))(ix, env)
}

// NewNamed makes the method called name with its default options.
func NewNamed(name string, ix *index.Index, env Env) (Method, error) {
	cfg, err := NewConfig(name)
	if err != nil {
		return nil, err
	}
	return New(ix, env, cfg)
}

// Build runs the build step cfg configures on the index at dir.
func Build(ctx context.Context, env BuildEnv, dir string, cfg *Config) (string, error) {
	if cfg.c.kind != kindBuild {
		return "", fmt.Errorf("retrieve: %q is a %s, not a build step", cfg.c.name, cfg.c.kind)
	}
	if err := cfg.Validate(); err != nil {
		return "", err
	}
	return cfg.run.(func(context.Context, BuildEnv, string) (string, error))(ctx, env, dir)
}

// Report runs the report cfg configures on ix.
func Report(ctx context.Context, env ReportEnv, ix *index.Index, cfg *Config) error {
	if cfg.c.kind != kindReport {
		return fmt.Errorf("retrieve: %q is a %s, not a report", cfg.c.name, cfg.c.kind)
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	return cfg.run.(func(context.Context, ReportEnv, *index.Index) error)(ctx, env, ix)
}

// Validate checks o by the rules params declares: what a method's
// exported New and its options' Validate call.
func Validate[O any](o *O, params func(*O, *Params)) error {
	ps := &Params{}
	params(o, ps)
	return ps.Validate()
}

// Overrides are settings given by name and text (the CLI's flags, a
// server's configuration), applied to each component that has them.
type Overrides struct {
	names []string
	vals  map[string]string
}

// Set records a setting (a later Set of the same name wins).
func (o *Overrides) Set(name, text string) {
	if o.vals == nil {
		o.vals = map[string]string{}
	}
	if _, ok := o.vals[name]; !ok {
		o.names = append(o.names, name)
	}
	o.vals[name] = text
}

// Names lists the settings given, in the order first given.
func (o Overrides) Names() []string { return slices.Clone(o.names) }

// Get returns a setting's text.
func (o Overrides) Get(name string) (string, bool) {
	v, ok := o.vals[name]
	return v, ok
}

// Apply sets, on cfg, every given setting it has: those marked First
// (presets) before the others.
func (o Overrides) Apply(cfg *Config) error {
	for _, first := range []bool{true, false} {
		for _, n := range o.names {
			if p := cfg.params.Lookup(n); p != nil && p.first == first {
				if err := p.Set(o.vals[n]); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// Unused lists the given settings none of cfgs has.
func (o Overrides) Unused(cfgs ...*Config) []string {
	var out []string
	for _, n := range o.names {
		used := false
		for _, c := range cfgs {
			used = used || c.params.Lookup(n) != nil
		}
		if !used {
			out = append(out, n)
		}
	}
	return out
}

// Readers lists the registered methods that have the setting called name.
func Readers(name string) []string {
	var out []string
	for _, i := range Methods() {
		for _, p := range i.Params {
			if p.name == name {
				out = append(out, i.Name)
			}
		}
	}
	return out
}

// SupportsFilters reports whether the method called name honours
// Query.Allow.
func SupportsFilters(name string) bool {
	c, err := lookup(kindMethod, name)
	return err == nil && c.filters
}
