package retrieve

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/gleaner-rag/gleaner/internal/excerpt"
)

// Kind is the type of a setting's value.
type Kind string

// The kinds of settings.
const (
	KindInt     Kind = "int"
	KindFloat   Kind = "float"
	KindString  Kind = "string"
	KindBool    Kind = "bool"
	KindInts    Kind = "ints"    // comma-separated on the CLI, a JSON array of integers in a request
	KindStrings Kind = "strings" // comma-separated on the CLI, a JSON array of strings in a request
)

// ErrInvalid marks a setting or a query the caller got wrong (a server
// answers 400): every ParamError, ErrEmptyQuery.
var ErrInvalid = errors.New("invalid")

// ParamError is a setting that failed to parse or broke a rule. Name is
// the setting ("" for a rule over several), Value what was given.
type ParamError struct {
	Name  string
	Value string
	Msg   string
}

// clip shortens a value an error repeats.
func clip(s string) string { return excerpt.Of(s, 80) }

func (e *ParamError) Error() string {
	if e.Name == "" {
		return e.Msg
	}
	return fmt.Sprintf("%s %s: %s", e.Name, e.Value, e.Msg)
}

// Is makes every ParamError an ErrInvalid.
func (e *ParamError) Is(target error) bool { return target == ErrInvalid }

// Param is one named setting of a method, a builder or a report: its CLI
// flag is --Name, its key in a request's options is JSONName, and GET
// /v1/methods lists it. Params are made by binding a field of an options
// struct (Params.Int and the like); a Param reads and writes that field.
type Param struct {
	name, usage string
	kind        Kind
	local       bool
	first       bool
	def         string
	get         func() string
	set         func(string) error
	setJSON     func(json.RawMessage) error
	value       func() any
	check       func() error
}

// Local marks a setting that names files or costly resources of the
// machine gleaner runs on (a model folder): the CLI and a server's own
// configuration set it, a request never does.
func (p *Param) Local() *Param { p.local = true; return p }

// First marks a setting that sets others (a preset): it is applied before
// them, so settings given explicitly override it.
func (p *Param) First() *Param { p.first = true; return p }

// Track sets *given when the setting is set (Set, SetJSON), so a rule can
// tell a value given from its default (a setting that applies only with
// another's value).
func (p *Param) Track(given *bool) *Param {
	set, setJSON := p.set, p.setJSON
	p.set = func(s string) error { *given = true; return set(s) }
	p.setJSON = func(raw json.RawMessage) error { *given = true; return setJSON(raw) }
	return p
}

// Name is the setting's name, as its CLI flag spells it (dashes).
func (p *Param) Name() string { return p.name }

// JSONName is the setting's key in a request's options (underscores).
func (p *Param) JSONName() string { return strings.ReplaceAll(p.name, "-", "_") }

// Usage describes the setting.
func (p *Param) Usage() string { return p.usage }

// Kind is the type of the setting's value.
func (p *Param) Kind() Kind { return p.kind }

// IsLocal reports whether a request may not set it (see Local).
func (p *Param) IsLocal() bool { return p.local }

// IsFirst reports whether it is applied before the others (see First).
func (p *Param) IsFirst() bool { return p.first }

// Default is the value the setting had when it was bound (its default, for
// options at their defaults), in the canonical text form.
func (p *Param) Default() string { return p.def }

// String is the current value in the canonical text form (what Set reads).
func (p *Param) String() string { return p.get() }

// Value is the current value as a JSON-encodable Go value; a non-finite
// float is its text ("-Inf"), as JSON has no infinity.
func (p *Param) Value() any { return p.value() }

// Set parses a value from its text (a CLI flag's) and checks it.
func (p *Param) Set(text string) error {
	if err := p.set(text); err != nil {
		return err
	}
	return p.check()
}

// SetJSON decodes a value from a request's JSON and checks it.
func (p *Param) SetJSON(raw json.RawMessage) error {
	if err := p.setJSON(raw); err != nil {
		return err
	}
	return p.check()
}

// Check checks the current value against the setting's rules.
func (p *Param) Check() error { return p.check() }

// Rule is a check of one setting's value; the error says what is wanted
// ("want ≥ 1"), the caller names the setting.
type Rule[T any] func(T) error

// Number is what the numeric rules compare.
type Number interface {
	~int | ~int64 | ~uint64 | ~float64
}

// AtLeast wants x ≥ lo (NaN fails).
func AtLeast[T Number](lo T) Rule[T] {
	return func(x T) error {
		if !(x >= lo) {
			return fmt.Errorf("want ≥ %v", lo)
		}
		return nil
	}
}

// Within wants lo ≤ x ≤ hi (NaN fails).
func Within[T Number](lo, hi T) Rule[T] {
	return func(x T) error {
		if !(x >= lo && x <= hi) {
			return fmt.Errorf("want a value in [%v, %v]", lo, hi)
		}
		return nil
	}
}

// Between wants lo < x < hi (NaN fails).
func Between[T Number](lo, hi T) Rule[T] {
	return func(x T) error {
		if !(x > lo && x < hi) {
			return fmt.Errorf("want a value in (%v, %v)", lo, hi)
		}
		return nil
	}
}

// OpenClosed wants lo < x ≤ hi (NaN fails).
func OpenClosed[T Number](lo, hi T) Rule[T] {
	return func(x T) error {
		if !(x > lo && x <= hi) {
			return fmt.Errorf("want a value in (%v, %v]", lo, hi)
		}
		return nil
	}
}

// Finite wants a float that is neither NaN nor infinite.
func Finite(x float64) error {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return errors.New("want a finite number")
	}
	return nil
}

// NotNaN wants a float that is a number (±Inf allowed).
func NotNaN(x float64) error {
	if math.IsNaN(x) {
		return errors.New("want a number (or ±inf)")
	}
	return nil
}

// OneOf wants one of the given strings.
func OneOf(values ...string) Rule[string] {
	return func(s string) error {
		if !slices.Contains(values, s) {
			quoted := make([]string, len(values))
			for i, v := range values {
				quoted[i] = strconv.Quote(v)
			}
			return fmt.Errorf("want one of %s", strings.Join(quoted, ", "))
		}
		return nil
	}
}

// NonEmpty wants at least one item.
func NonEmpty[T any](xs []T) error {
	if len(xs) == 0 {
		return errors.New("want at least one item")
	}
	return nil
}

// EachAtLeast wants every item of a list ≥ lo, and at most max items.
func EachAtLeast(lo, max int) Rule[[]int] {
	return func(xs []int) error {
		if len(xs) > max {
			return fmt.Errorf("want at most %d items, got %d", max, len(xs))
		}
		for _, x := range xs {
			if x < lo {
				return fmt.Errorf("want every item ≥ %d", lo)
			}
		}
		return nil
	}
}

// Params collects the settings an options struct binds (its Params
// method): one definition gives the CLI its flags, a request its options,
// GET /v1/methods its listing, a server its cache key and the library its
// validation.
type Params struct {
	list   []*Param
	checks []func() error
}

// List returns the bound settings in the order they were bound.
func (ps *Params) List() []*Param { return ps.list }

// Lookup returns the setting called name (CLI spelling), or nil.
func (ps *Params) Lookup(name string) *Param {
	for _, p := range ps.list {
		if p.name == name {
			return p
		}
	}
	return nil
}

// Drop removes settings a variant fixes (fastinsight-alpha0 has no alpha),
// so setting them is an error rather than silently ignored.
func (ps *Params) Drop(names ...string) {
	ps.list = slices.DeleteFunc(ps.list, func(p *Param) bool { return slices.Contains(names, p.name) })
}

// Check adds a rule over several settings (checked after each setting's
// own rules); its error should name the settings.
func (ps *Params) Check(rule func() error) { ps.checks = append(ps.checks, rule) }

// Validate checks every setting and then every rule over several.
func (ps *Params) Validate() error {
	var errs []error
	for _, p := range ps.list {
		if err := p.check(); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	for _, c := range ps.checks {
		if err := c(); err != nil {
			var pe *ParamError
			if !errors.As(err, &pe) {
				err = &ParamError{Msg: err.Error()}
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Key is the settings' canonical text: equal keys mean equal settings.
// Values are JSON-encoded (a list of strings with a comma in one stays
// apart from two strings), which cannot fail for these kinds.
func (ps *Params) Key() string {
	var b strings.Builder
	for _, p := range ps.list {
		v, err := json.Marshal(p.value())
		if err != nil {
			v = []byte(strconv.Quote(p.get()))
		}
		b.WriteString(p.name)
		b.WriteByte('=')
		b.Write(v)
		b.WriteByte(';')
	}
	return b.String()
}

// bind adds a setting of kind k over v, with its text and JSON codecs.
func bind[T any](ps *Params, v *T, name, usage string, k Kind, format func(T) string, parse func(string) (T, error), rules []Rule[T]) *Param {
	p := &Param{name: name, usage: usage, kind: k}
	p.get = func() string { return format(*v) }
	p.set = func(s string) error {
		x, err := parse(s)
		if err != nil {
			return &ParamError{Name: name, Value: clip(strconv.Quote(s)), Msg: err.Error()}
		}
		*v = x
		return nil
	}
	p.setJSON = func(raw json.RawMessage) error {
		x, err := decodeJSON[T](raw, k, parse)
		if err != nil {
			return &ParamError{Name: name, Value: clip(string(raw)), Msg: err.Error()}
		}
		*v = x
		return nil
	}
	p.value = func() any {
		if k == KindString {
			return format(*v)
		}
		return jsonValue(*v)
	}
	p.check = func() error {
		for _, r := range rules {
			if err := r(*v); err != nil {
				val := format(*v)
				if val == "" {
					val = `""` // so the message shows that nothing was given
				}
				return &ParamError{Name: name, Value: clip(val), Msg: err.Error()}
			}
		}
		return nil
	}
	p.def = p.get()
	if ps.Lookup(name) != nil {
		panic(fmt.Sprintf("retrieve: setting %q bound twice", name)) // a programming error in a Params method
	}
	ps.list = append(ps.list, p)
	return p
}

// Bind binds a setting of the caller's own type (an enum), read and
// written by its text.
func Bind[T any](ps *Params, v *T, name, usage string, format func(T) string, parse func(string) (T, error), rules ...Rule[T]) *Param {
	return bind(ps, v, name, usage, KindString, format, parse, rules)
}

// Setter binds a setting whose value is applied rather than stored (a
// preset that sets others): set parses and applies the text, get reports
// what was last applied. Mark it First so explicit settings override it.
func (ps *Params) Setter(name, usage string, get func() string, set func(string) error) *Param {
	var last string
	p := bind(ps, &last, name, usage, KindString, func(string) string { return get() },
		func(s string) (string, error) { return s, set(s) }, nil)
	return p
}

// Int binds an integer setting.
func (ps *Params) Int(v *int, name, usage string, rules ...Rule[int]) *Param {
	return bind(ps, v, name, usage, KindInt, strconv.Itoa, parseInt, rules)
}

// Int64 binds a 64-bit integer setting (a seed).
func (ps *Params) Int64(v *int64, name, usage string, rules ...Rule[int64]) *Param {
	return bind(ps, v, name, usage, KindInt, func(x int64) string { return strconv.FormatInt(x, 10) },
		func(s string) (int64, error) { return parseIntegral(s, strconv.ParseInt) }, rules)
}

// Uint64 binds an unsigned 64-bit integer setting (a training seed).
func (ps *Params) Uint64(v *uint64, name, usage string, rules ...Rule[uint64]) *Param {
	return bind(ps, v, name, usage, KindInt, func(x uint64) string { return strconv.FormatUint(x, 10) },
		func(s string) (uint64, error) { return parseIntegral(s, strconv.ParseUint) }, rules)
}

// Float binds a float setting; "inf" and "-inf" parse (as text, and as
// JSON strings).
func (ps *Params) Float(v *float64, name, usage string, rules ...Rule[float64]) *Param {
	return bind(ps, v, name, usage, KindFloat, formatFloat, parseFloat, rules)
}

// String binds a text setting.
func (ps *Params) String(v *string, name, usage string, rules ...Rule[string]) *Param {
	return bind(ps, v, name, usage, KindString, func(s string) string { return s }, func(s string) (string, error) { return s, nil }, rules)
}

// Bool binds a true/false setting (a bare --flag is true).
func (ps *Params) Bool(v *bool, name, usage string) *Param {
	return bind(ps, v, name, usage, KindBool, strconv.FormatBool, parseBool, nil)
}

// Ints binds a list of integers.
func (ps *Params) Ints(v *[]int, name, usage string, rules ...Rule[[]int]) *Param {
	return bind(ps, v, name, usage, KindInts, formatInts, parseInts, rules)
}

// Strings binds a list of strings (empty items are dropped).
func (ps *Params) Strings(v *[]string, name, usage string, rules ...Rule[[]string]) *Param {
	return bind(ps, v, name, usage, KindStrings, func(s []string) string { return strings.Join(s, ",") }, parseStrings, rules)
}

func parseInt(s string) (int, error) {
	return parseIntegral(s, func(s string, base, bits int) (int, error) {
		x, err := strconv.ParseInt(s, base, bits)
		return int(x), err
	})
}

// parseIntegral parses a base-10 integer of the native size, saying what
// went wrong in the user's terms rather than strconv's.
func parseIntegral[T int | int64 | uint64](s string, parse func(string, int, int) (T, error)) (T, error) {
	x, err := parse(strings.TrimSpace(s), 10, strconv.IntSize)
	if errors.Is(err, strconv.ErrRange) {
		return 0, errors.New("out of range")
	}
	if err != nil {
		return 0, errors.New("not an integer")
	}
	return x, nil
}

func parseBool(s string) (bool, error) {
	x, err := strconv.ParseBool(strings.TrimSpace(s))
	if err != nil {
		return false, errors.New("want true or false")
	}
	return x, nil
}

func formatFloat(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// parseFloat reads a decimal number, or inf, +inf, -inf (any case), nan.
// Go's other spellings (hexadecimal, "Infinity") are refused, as other
// readers of the same settings would not take them.
func parseFloat(s string) (float64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	switch t {
	case "inf", "+inf":
		return math.Inf(1), nil
	case "-inf":
		return math.Inf(-1), nil
	case "nan":
		return math.NaN(), nil
	}
	x, err := strconv.ParseFloat(t, 64)
	if err != nil || strings.ContainsAny(t, "xpni_") {
		return 0, errors.New("not a number")
	}
	return x, nil
}

func formatInts(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.Itoa(x)
	}
	return strings.Join(parts, ",")
}

func parseInts(s string) ([]int, error) {
	var out []int
	if strings.TrimSpace(s) == "" {
		return out, nil // no items
	}
	for _, it := range strings.Split(s, ",") {
		x, err := strconv.Atoi(strings.TrimSpace(it))
		if err != nil {
			return nil, fmt.Errorf("%q is not an integer", strings.TrimSpace(it))
		}
		out = append(out, x)
	}
	return out, nil
}

func parseStrings(s string) ([]string, error) {
	var out []string
	for _, it := range strings.Split(s, ",") {
		if it = strings.TrimSpace(it); it != "" {
			out = append(out, it)
		}
	}
	return out, nil
}

// decodeJSON reads a request's value of kind k: JSON's own type, or for a
// float also the strings "inf" and "-inf".
func decodeJSON[T any](raw json.RawMessage, k Kind, parse func(string) (T, error)) (T, error) {
	var x T
	if strings.TrimSpace(string(raw)) == "null" { // Unmarshal would leave the zero value
		return x, fmt.Errorf("want a JSON %s, not null", jsonType(k))
	}
	if k == KindFloat {
		var s string
		if json.Unmarshal(raw, &s) == nil { // only the infinities: JSON has numbers for the rest
			if t := strings.ToLower(strings.TrimSpace(s)); t != "inf" && t != "+inf" && t != "-inf" {
				return x, fmt.Errorf("want a JSON %s", jsonType(k))
			}
			return parse(s)
		}
	}
	switch k {
	case KindInt, KindInts: // as numbers, so 1.5 is refused by name
		return decodeIntegral[T](raw, k, parse)
	case KindString: // text, parsed (an enum's own type reads it)
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return x, errors.New("want a JSON string")
		}
		return parse(s)
	}
	if err := json.Unmarshal(raw, &x); err != nil {
		return x, fmt.Errorf("want a JSON %s", jsonType(k))
	}
	return x, nil
}

// decodeIntegral reads an integer or a list of integers from JSON.
func decodeIntegral[T any](raw json.RawMessage, k Kind, parse func(string) (T, error)) (T, error) {
	var x T
	if strings.Contains(string(raw), `"`) {
		return x, fmt.Errorf("want a JSON %s, not a string", jsonType(k)) // json.Number would read "7"
	}
	if k == KindInt {
		var one json.Number
		if err := json.Unmarshal(raw, &one); err != nil {
			return x, fmt.Errorf("want a JSON %s", jsonType(k))
		}
		return parse(one.String())
	}
	var many []json.Number
	if err := json.Unmarshal(raw, &many); err != nil {
		return x, fmt.Errorf("want a JSON %s", jsonType(k))
	}
	parts := make([]string, len(many))
	for i, n := range many {
		parts[i] = n.String()
	}
	return parse(strings.Join(parts, ","))
}

func jsonType(k Kind) string {
	switch k {
	case KindFloat:
		return "number (or \"inf\", \"-inf\")"
	case KindString:
		return "string"
	case KindBool:
		return "boolean"
	case KindStrings:
		return "array of strings"
	case KindInts:
		return "array of integers"
	}
	return "integer"
}

// jsonValue is v as JSON can hold it, in one canonical form (so equal
// settings have equal keys): a non-finite float as its text, −0 as 0, no
// list as an empty one.
func jsonValue(v any) any {
	switch x := v.(type) {
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return formatFloat(x)
		}
		if x == 0 {
			return 0.0
		}
	case []int:
		if x == nil {
			return []int{}
		}
	case []string:
		if x == nil {
			return []string{}
		}
	}
	return v
}
