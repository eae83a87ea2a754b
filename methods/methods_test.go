package methods_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/corpus/synth"
	"github.com/gleaner-rag/gleaner/eval"
	"github.com/gleaner-rag/gleaner/index"
	_ "github.com/gleaner-rag/gleaner/methods"
	"github.com/gleaner-rag/gleaner/methods/internal/testindex"
	"github.com/gleaner-rag/gleaner/models/lexical"
	"github.com/gleaner-rag/gleaner/retrieve"
)

func TestMain(m *testing.M) { testindex.Main(m) }

// Every method refuses an empty query with ErrEmptyQuery (a 400, never a
// silent empty answer).
func TestEmptyQueries(t *testing.T) {
	ix, _ := testindex.Shared(t)
	for _, name := range retrieve.Names() {
		m := testindex.Method(t, ix, name)
		if _, err := m.Retrieve(context.Background(), retrieve.Query{Text: "  "}, 5); !errors.Is(err, retrieve.ErrEmptyQuery) {
			t.Errorf("%s: empty query gave %v", name, err)
		}
	}
}

// TestEvaluateConcurrencyDeterministic runs every method's evaluation with
// 1 and 8 queries in flight (under -race in make test) and wants identical
// metrics.
func TestEvaluateConcurrencyDeterministic(t *testing.T) {
	ix, _ := testindex.Shared(t)
	c := testindex.Corpus()
	var ms []retrieve.Method
	for _, n := range retrieve.Names() {
		ms = append(ms, testindex.Method(t, ix, n))
	}
	a, err := eval.Evaluate(context.Background(), ix, c.Queries, ms, eval.Options{Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := eval.Evaluate(context.Background(), ix, c.Queries, ms, eval.Options{Concurrency: 8})
	if err != nil {
		t.Fatal(err)
	}
	for i := range a.Methods {
		if !reflect.DeepEqual(a.Methods[i].Metrics, b.Methods[i].Metrics) {
			t.Errorf("%s: metrics differ between concurrency 1 and 8", a.Methods[i].Method)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := eval.Evaluate(ctx, ix, c.Queries, ms, eval.Options{Concurrency: 4}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled evaluation: %v", err)
	}
}

// Zero values that cannot mean anything are errors naming the setting,
// never defaults: through a setting's text, and through the typed options
// a Go caller fills in (each method's Validate).
func TestZeroOptionsAreRejected(t *testing.T) {
	ix, _ := testindex.Shared(t)
	for _, c := range []struct{ method, setting, value string }{
		{"fastinsight", "bmax", "0"}, {"fastinsight", "batch", "0"}, {"gar", "bmax", "0"}, {"re2", "bmax", "0"},
		{"ppr", "ppr-seeds", "0"}, {"ppr", "damping", "0"}, {"ppr", "ppr-reset", ""}, {"gar", "first-stage", ""},
		{"hybrid", "hybrid-fusion", ""}, {"fastinsight", "hybrid-weight", "1.5"}, {"fastinsight", "alpha", "-0.1"},
		{"nexusrag", "tg-damping", "1"}, {"linearrag", "eta", "0"}, {"ketrag", "budget", "0"}, {"kg-khop", "khop-cap", "0"},
		{"kg-khop", "khop-quotas", "1,2,-3"}, {"seeder", "seeder-select", "0"}, {"fuserag", "fuserag-k", "0"}, {"fuserag", "fuserag-stop", "nan"},
	} {
		_, err := testindex.NewMethod(ix, c.method, c.setting, c.value)
		var pe *retrieve.ParamError
		if !errors.As(err, &pe) || pe.Name != c.setting {
			t.Errorf("%s %s=%q: %v, want an error naming %s", c.method, c.setting, c.value, err, c.setting)
		}
	}
	// rrf's k matters only with rrf fusion, and is checked whatever it is
	if _, err := testindex.NewMethod(ix, "re2", "hybrid-fusion", "rrf", "rrf-k", "0"); err == nil {
		t.Error("rrf k 0 accepted")
	}
}

// Every registered method documents each of its settings, and the
// settings that several methods share have one kind (the registry refuses
// others) and, per method, a default that passes its own rules.
func TestSettingsAreDocumentedAndValid(t *testing.T) {
	for _, in := range retrieve.Methods() {
		if in.Summary == "" {
			t.Errorf("%s has no summary", in.Name)
		}
		cfg, err := retrieve.NewConfig(in.Name)
		if err != nil {
			t.Fatal(err)
		}
		if err := cfg.Validate(); err != nil {
			t.Errorf("%s: its defaults break its own rules: %v", in.Name, err)
		}
		for _, p := range in.Params {
			if p.Usage() == "" {
				t.Errorf("%s: setting %s has no usage", in.Name, p.Name())
			}
			if err := p.Set(p.Default()); err != nil {
				t.Errorf("%s: setting %s does not read its own default %q: %v", in.Name, p.Name(), p.Default(), err)
			}
		}
	}
}

// Budgets beyond the corpus (up to the largest int, as a flag may give)
// rank exactly as a budget of the whole corpus: nothing overflows.
func TestHugeBudgetsEqualWholeCorpus(t *testing.T) {
	ix, qs := testindex.Shared(t)
	settings := func(name string, n int) []string {
		s := []string{"graph-kind", "mentions", "first-stage", "hybrid", "hybrid-fusion", "rrf", "rrf-depth", fmt.Sprint(n), "bmax", fmt.Sprint(n)}
		if name == "ppr" {
			s = []string{"graph-kind", "mentions", "first-stage", "hybrid", "hybrid-fusion", "rrf", "rrf-depth", fmt.Sprint(n), "ppr-seeds", fmt.Sprint(n)}
		}
		if name == "re2" {
			s = s[2:]
		}
		return s
	}
	for _, name := range []string{"fastinsight", "gar", "re2", "ppr"} {
		a := testindex.Method(t, ix, name, settings(name, math.MaxInt)...)
		b := testindex.Method(t, ix, name, settings(name, ix.N())...)
		for _, q := range qs[:3] {
			if x, y := testindex.Ranking(t, a, q, 10), testindex.Ranking(t, b, q, 10); !reflect.DeepEqual(x, y) {
				t.Fatalf("%s: budgets of MaxInt rank %v, of N %v", name, x, y)
			}
		}
	}
}

// A graph method over an index without edges is an error, not a silent
// copy of its first stage.
func TestGraphMethodsNeedEdges(t *testing.T) {
	c := synth.Generate(synth.Options{People: 40, Cities: 8, Countries: 3, Bands: 8, Queries: 5, Seed: 2})
	c.Edges = nil
	dir := filepath.Join(t.TempDir(), "ix")
	lsa := lexical.DefaultLSA()
	lsa.Dims = 8
	if err := index.Build(context.Background(), c, dir, index.WithLSA(lsa), index.WithoutHead()); err != nil {
		t.Fatal(err)
	}
	ix, err := index.Open(dir, store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	for _, m := range []string{"ppr", "ppr-bm25", "gar", "fastinsight", "fastinsight-beta0", "fuserag", "kg-khop"} {
		_, err := testindex.NewMethod(ix, m)
		if !errors.Is(err, retrieve.ErrNoGraph) || !errors.Is(err, index.ErrNotBuilt) {
			t.Errorf("%s over an index without edges: %v", m, err)
		}
	}
	if _, err := testindex.NewMethod(ix, "bm25"); err != nil {
		t.Error(err)
	}
	// a kind the index lacks is named, with the kinds it has
	ix2, _ := testindex.Shared(t)
	if _, err := testindex.NewMethod(ix2, "ppr", "graph-kind", "citations"); !errors.Is(err, retrieve.ErrNoGraph) || !strings.Contains(err.Error(), "citations") {
		t.Errorf("an unknown graph kind: %v", err)
	}
}

// TestFixedStagesRefuseStageSettings: ppr-bm25 (BM25 everywhere) and
// re2-vector (vector search's top list) fix their first stage, so none of
// the stage's settings may be set on them: one they kept would be
// accepted and then ignored. The hybrid settings come from the stage
// itself, so a new one is covered.
func TestFixedStagesRefuseStageSettings(t *testing.T) {
	stage := append([]string{"first-stage"}, retrieve.HybridSettings()...)
	if len(stage) < 8 {
		t.Fatalf("the hybrid stage's settings: %v", stage)
	}
	for _, name := range []string{"ppr-bm25", "re2-vector"} {
		cfg, err := retrieve.NewConfig(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range cfg.Params() {
			for _, s := range stage {
				if p.Name() == s {
					t.Errorf("%s takes --%s, which its fixed first stage ignores", name, s)
				}
			}
		}
	}
}
