package main

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gleaner-rag/gleaner/retrieve"
)

// The CLI learns every setting from the registry: a command adds one flag
// per setting name its components have (settingFlags), and applies the
// flags given to each component it runs. Nothing here names a method.

// settingFlags are the flags of a set of components' settings.
type settingFlags struct {
	fl      *pflag.FlagSet
	names   []string
	readers map[string][]string // setting → the components that have it
	what    string              // "--method", "--kind": how a component is chosen, for errors
	profile *retrieve.Profile   // --profile: its method's settings, under the flags
	log     *slog.Logger
}

// addSettingFlags adds a flag for every setting of infos; a setting that
// several components share is one flag.
func addSettingFlags(fl *pflag.FlagSet, infos []retrieve.Info, what string) *settingFlags {
	s := &settingFlags{fl: fl, readers: map[string][]string{}, what: what}
	type flag struct {
		p        *retrieve.Param
		defaults map[string]bool
		usages   []string // each distinct usage, in the components' order
	}
	flags := map[string]*flag{}
	for _, in := range infos {
		for _, p := range in.Params {
			f, ok := flags[p.Name()]
			if !ok {
				f = &flag{p: p, defaults: map[string]bool{}}
				flags[p.Name()] = f
				s.names = append(s.names, p.Name())
			}
			f.defaults[p.Default()] = true
			f.usages = addUsage(f.usages, p.Usage())
			s.readers[p.Name()] = append(s.readers[p.Name()], in.Name)
		}
	}
	sort.Strings(s.names)
	for _, n := range s.names {
		f := flags[n]
		v := &textValue{kind: f.p.Kind()}
		usage := strings.Join(f.usages, "; ") // components that share a name may read it differently
		if len(s.readers[n]) < len(infos) {
			usage += " [" + shortList(s.readers[n]) + "]"
		}
		if len(f.defaults) == 1 {
			v.text = f.p.Default()
		} else {
			usage += " (default: each one's own)"
		}
		flg := fl.VarPF(v, n, "", usage)
		if f.p.Kind() == retrieve.KindBool {
			flg.NoOptDefVal = "true"
		}
	}
	return s
}

// addUsage adds u to a shared flag's usages unless one of them already
// says it (contains it); those that u says in turn give way to it, in the
// first one's place.
func addUsage(usages []string, u string) []string {
	at := -1
	for i, have := range usages {
		switch {
		case strings.Contains(have, u):
			return usages
		case strings.Contains(u, have) && at < 0:
			at = i
		}
	}
	if at < 0 {
		return append(usages, u)
	}
	usages[at] = u
	return slices.DeleteFunc(usages, func(have string) bool { return have != u && strings.Contains(u, have) })
}

// shortList names at most four components.
func shortList(names []string) string {
	if len(names) <= 4 {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:3], ", ") + fmt.Sprintf(" and %d more", len(names)-3)
}

// overrides are the settings given on the command line.
func (s *settingFlags) overrides() retrieve.Overrides {
	var o retrieve.Overrides
	for _, n := range s.names {
		if s.fl.Changed(n) {
			o.Set(n, s.fl.Lookup(n).Value.String())
		}
	}
	return o
}

// configs makes the configuration of each named component with the
// settings given; a setting none of them has is an error naming the ones
// that do (a mistyped command is never half-applied), allow excepted.
func (s *settingFlags) configs(newConfig func(string) (*retrieve.Config, error), names []string, allow ...string) ([]*retrieve.Config, error) {
	ov := s.overrides()
	var cfgs []*retrieve.Config
	for _, name := range names {
		cfg, err := newConfig(name)
		if err != nil {
			return nil, err
		}
		if s.profile != nil && name == s.profile.Method {
			if err := s.profile.Overrides().Apply(cfg); err != nil {
				return nil, fmt.Errorf("--profile: %w", err)
			}
		}
		if err := ov.Apply(cfg); err != nil {
			return nil, flagError(err)
		}
		if err := cfg.Validate(); err != nil {
			return nil, flagError(err)
		}
		cfgs = append(cfgs, cfg)
	}
	for _, n := range ov.Unused(cfgs...) {
		if !slices.Contains(allow, n) {
			return nil, fmt.Errorf("--%s applies to %s %s", n, s.what, strings.Join(s.readers[n], ", "))
		}
	}
	return cfgs, nil
}

// flagError speaks of settings as the flags that set them.
func flagError(err error) error {
	var pe *retrieve.ParamError
	if errors.As(err, &pe) && pe.Name != "" {
		return fmt.Errorf("--%s %s: %s", pe.Name, pe.Value, pe.Msg)
	}
	return err
}

// textValue is a setting's flag: its text, checked when it is applied.
type textValue struct {
	kind retrieve.Kind
	text string
}

func (v *textValue) String() string { return v.text }
func (v *textValue) Set(s string) error {
	v.text = s
	return nil
}
func (v *textValue) Type() string {
	switch v.kind {
	case retrieve.KindInts:
		return "ints"
	case retrieve.KindStrings:
		return "strings"
	case retrieve.KindBool:
		return "bool"
	}
	return string(v.kind)
}

// useProfile reads --profile (when given): its method stands for --method
// and its group-by for --group-by unless those flags are given, and its
// settings apply to its method under any setting flag given.
func (s *settingFlags) useProfile(path, index string, method, groupBy *string, methodFlag string) error {
	if path == "" {
		return nil
	}
	p, err := retrieve.ReadProfile(path)
	if err != nil {
		return fmt.Errorf("--profile: %w", err)
	}
	s.profile = p
	if p.Tuned != nil && index != "" && s.log != nil {
		if abs, err := filepath.Abs(index); err == nil && abs != p.Tuned.Index {
			s.log.Warn("--profile was tuned on another index; its choice may not suit this one", "profile", path, "tuned_on", p.Tuned.Index, "index", abs)
		}
	}
	if !s.fl.Changed(methodFlag) {
		*method = p.Method
	}
	if groupBy != nil && !s.fl.Changed("group-by") {
		*groupBy = p.GroupBy
	}
	return nil
}
