package retrieve_test

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/retrieve"
)

// opts is a made-up options type exercising every kind of setting.
type opts struct {
	N      int
	X      float64
	S      string
	B      bool
	L      []int
	W      []string
	Preset string
	given  bool
}

func (o *opts) Params(p *retrieve.Params) {
	p.Int(&o.N, "n", "an int", retrieve.AtLeast(1))
	p.Float(&o.X, "x", "a float", retrieve.NotNaN)
	p.String(&o.S, "s", "a string", retrieve.OneOf("a", "b"))
	p.Bool(&o.B, "b", "a bool")
	p.Ints(&o.L, "l", "ints", retrieve.EachAtLeast(0, 3))
	p.Strings(&o.W, "w", "strings").Track(&o.given)
	p.Setter("preset", "sets n", func() string { return o.Preset }, func(s string) error {
		if s != "big" {
			return errors.New("want big")
		}
		o.N, o.Preset = 1000, s
		return nil
	}).First()
	p.Check(func() error {
		if o.B && o.S == "b" {
			return errors.New("b and s=b do not go together")
		}
		return nil
	})
}

func bound() (*opts, *retrieve.Params) {
	o := &opts{N: 5, X: math.Inf(-1), S: "a", L: []int{1, 2}}
	p := &retrieve.Params{}
	o.Params(p)
	return o, p
}

func TestParamsTextAndJSON(t *testing.T) {
	o, p := bound()
	if got := p.Lookup("x").Default(); got != "-Inf" {
		t.Errorf("default of x = %q, want -Inf", got)
	}
	if v := p.Lookup("x").Value(); v != "-Inf" {
		t.Errorf("JSON value of -Inf = %v, want the text -Inf (JSON has no infinity)", v)
	}
	for name, text := range map[string]string{"n": "7", "x": "inf", "s": "b", "b": "true", "l": "0,3", "w": "p, q,,"} {
		if err := p.Lookup(name).Set(text); err != nil {
			t.Fatalf("%s %q: %v", name, text, err)
		}
	}
	if o.N != 7 || !math.IsInf(o.X, 1) || o.S != "b" || !o.B || len(o.L) != 2 || o.L[1] != 3 || strings.Join(o.W, "|") != "p|q" || !o.given {
		t.Fatalf("after Set: %+v", *o)
	}
	for name, raw := range map[string]string{"n": "9", "x": `"-inf"`, "s": `"a"`, "b": "false", "l": "[4, 5]", "w": `["z"]`} {
		if err := p.Lookup(name).SetJSON(json.RawMessage(raw)); err != nil {
			t.Fatalf("%s %s: %v", name, raw, err)
		}
	}
	if o.N != 9 || !math.IsInf(o.X, -1) || o.S != "a" || o.B || o.L[0] != 4 || o.W[0] != "z" {
		t.Fatalf("after SetJSON: %+v", *o)
	}
}

// Every bad value is a ParamError naming the setting, an ErrInvalid, and
// leaves a value a rule refuses unset in effect (Validate fails).
func TestParamsRefuse(t *testing.T) {
	for _, c := range []struct{ name, text, json string }{
		{"n", "0", "0"}, {"n", "1.5", "1.5"}, {"n", "x", `"7"`}, {"n", "", "null"}, {"n", "99999999999999999999", "[7]"},
		{"x", "NaN", `"nan"`}, {"x", "ten", `true`}, {"x", "0x1p-2", `"0.5"`}, {"x", "Infinity", `"Infinity"`},
		{"s", "c", `"c"`}, {"s", "z", `1`},
		{"b", "maybe", `"true"`}, {"b", "2", "null"},
		{"l", "1,x", `[1, 2.5]`}, {"l", "1,2,3,4", `[-1]`}, {"l", "-1", `"1"`}, {"l", "1,,2", `5`},
		{"preset", "small", `"small"`},
	} {
		_, p := bound()
		for _, set := range []func() error{
			func() error { return p.Lookup(c.name).Set(c.text) },
			func() error { return p.Lookup(c.name).SetJSON(json.RawMessage(c.json)) },
		} {
			err := set()
			var pe *retrieve.ParamError
			if !errors.As(err, &pe) || pe.Name != c.name || !errors.Is(err, retrieve.ErrInvalid) {
				t.Errorf("%s (%q / %s): %v, want a ParamError naming it", c.name, c.text, c.json, err)
			}
		}
	}
	_, p := bound()
	err := p.Lookup("s").Set(strings.Repeat("z", 100000))
	if err == nil || len(err.Error()) > 200 {
		t.Errorf("a 100 kB value comes back in a %d-byte error", len(err.Error()))
	}
	o, p := bound()
	o.B, o.S = true, "b"
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "do not go together") {
		t.Errorf("a rule over several settings: %v", err)
	}
	o.B, o.N = false, 0
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "n 0: want ≥ 1") {
		t.Errorf("a field set to 0 in Go: %v, want n's rule", err)
	}
}

// Keys differ exactly when settings differ (and never fail on -Inf, the
// key that once collapsed every option set into one).
func TestParamsKey(t *testing.T) {
	_, a := bound()
	_, b := bound()
	if a.Key() != b.Key() {
		t.Fatal("equal settings, different keys")
	}
	b.Lookup("x").Set("-inf")
	if a.Key() != b.Key() {
		t.Fatal("setting the default again changed the key")
	}
	for _, c := range [][2]string{{"n", "6"}, {"x", "1"}, {"w", "a,b"}, {"l", "1"}, {"b", "true"}} {
		_, b := bound()
		b.Lookup(c[0]).Set(c[1])
		if a.Key() == b.Key() {
			t.Errorf("%s = %s: same key as the defaults", c[0], c[1])
		}
	}
	// one value, one key: no list and an empty one, -0 and 0
	for _, c := range [][3]string{{"w", `[]`, ""}, {"l", `[]`, ""}, {"x", `-0`, "0"}} {
		_, x := bound()
		_, y := bound()
		if err := x.Lookup(c[0]).SetJSON(json.RawMessage(c[1])); err != nil {
			t.Fatal(err)
		}
		if err := y.Lookup(c[0]).Set(c[2]); err != nil {
			t.Fatal(err)
		}
		if x.Key() != y.Key() {
			t.Errorf("%s: %s and %q have different keys:\n%s\n%s", c[0], c[1], c[2], x.Key(), y.Key())
		}
		if v, _ := json.Marshal(y.Lookup(c[0]).Value()); string(v) == "null" {
			t.Errorf("%s's value is null, which a request may not send back", c[0])
		}
	}
	// strings are quoted: "a,b" as one string differs from two
	_, x := bound()
	_, y := bound()
	x.Lookup("w").Set("a,b")
	y.Lookup("w").SetJSON(json.RawMessage(`["a,b"]`))
	if x.Key() == y.Key() {
		t.Error(`["a", "b"] and ["a,b"] share a key`)
	}
}

// Overrides apply presets first, so explicit settings win whatever their
// order; settings no component has are reported.
func TestOverrides(t *testing.T) {
	var ov retrieve.Overrides
	ov.Set("n", "3")
	ov.Set("preset", "big")
	ov.Set("zz", "1")
	cfg, err := retrieve.NewConfig("test-opts")
	if err != nil {
		t.Fatal(err)
	}
	o := cfg.Value().(*opts)
	if err := ov.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	if o.N != 3 || o.Preset != "big" {
		t.Errorf("n = %d, preset %q: the explicit n must override the preset", o.N, o.Preset)
	}
	if u := ov.Unused(cfg); len(u) != 1 || u[0] != "zz" {
		t.Errorf("unused = %v, want [zz]", u)
	}
}

func init() {
	retrieve.Must(retrieve.Register(retrieve.Def[opts]{Name: "test-opts", Defaults: func() opts { return opts{N: 5, S: "a"} },
		Params: (*opts).Params, New: func(*index.Index, retrieve.Env, opts) (retrieve.Method, error) {
			return nil, errors.New("not a method")
		}}))
}

// A method's registration is refused when it is malformed or clashes.
func TestRegistry(t *testing.T) {
	def := retrieve.Def[retrieve.NoOptions]{Name: "bm25", Defaults: func() retrieve.NoOptions { return retrieve.NoOptions{} },
		Params: (*retrieve.NoOptions).Params, New: nil}
	if err := retrieve.Register(def); err == nil {
		t.Error("a method without New accepted")
	}
	def.New = func(*index.Index, retrieve.Env, retrieve.NoOptions) (retrieve.Method, error) { return nil, nil }
	if err := retrieve.Register(def); err == nil {
		t.Error("a second bm25 accepted")
	}
	def.Name = "Bad Name"
	if err := retrieve.Register(def); err == nil {
		t.Error("a name with spaces accepted")
	}
	clash := retrieve.Def[opts]{Name: "test-clash", Defaults: func() opts { return opts{} },
		Params: func(o *opts, p *retrieve.Params) { p.Bool(&o.B, "hybrid-weight", "a bool under a float's name") },
		New:    func(*index.Index, retrieve.Env, opts) (retrieve.Method, error) { return nil, nil }}
	if err := retrieve.Register(clash); err == nil || !strings.Contains(err.Error(), "one name, one kind") {
		t.Errorf("a setting whose kind differs from the same name's elsewhere: %v", err)
	}
	if _, err := retrieve.NewConfig("nope"); !errors.Is(err, retrieve.ErrUnknown) {
		t.Errorf("unknown method: %v", err)
	}
}
