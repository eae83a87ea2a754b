package main

// This file adds a method to gleaner and nothing else does: its index
// section, its build step, its report and the method itself are defined
// and registered below, and the test builds the section, stores it,
// opens the index, queries, evaluates, reports and serves the method
// through the CLI and the server, which know it from the registry alone.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/corpus/synth"
	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/retrieve"
	"github.com/gleaner-rag/gleaner/server"
	"github.com/gleaner-rag/gleaner/server/api"
	"github.com/gleaner-rag/gleaner/server/client"
)

// lengthPrior is the section: one prior per node, (words)^-power,
// normalised to sum 1, and the power it was built with.
type lengthPrior struct {
	Power float64 `json:"power"`
	prior []float32
}

const priorSection = "test-prior"

func init() {
	index.MustRegisterSection(index.SectionType{Name: priorSection, Version: 1, Update: index.Rebuild,
		Summary: "test length prior", Hint: "build it with `gleaner graph build --kind test-prior --index <dir>`",
		Load: func(ix *index.Index, r *index.SectionReader) (any, error) {
			p := &lengthPrior{}
			if err := r.Meta(p); err != nil {
				return nil, err
			}
			var err error
			if p.prior, err = r.F32("prior.f32"); err != nil {
				return nil, err
			}
			if len(p.prior) != ix.N() {
				return nil, fmt.Errorf("%d priors for %d nodes", len(p.prior), ix.N())
			}
			return p, nil
		}})
	retrieve.Must(retrieve.RegisterBuild(retrieve.BuildDef[priorBuild]{Name: priorSection, Group: retrieve.BuildGraph, Section: priorSection,
		Summary: "a length prior per node (a test's)", Long: "the test's length prior: (words)^-power per node, normalised",
		Defaults: func() priorBuild { return priorBuild{Power: 1} }, Params: (*priorBuild).Params, Build: buildPrior}))
	retrieve.Must(retrieve.RegisterReport(retrieve.ReportDef[retrieve.NoOptions]{Name: priorSection, Summary: "the prior's power and range",
		Defaults: func() retrieve.NoOptions { return retrieve.NoOptions{} }, Params: (*retrieve.NoOptions).Params,
		Run: func(_ context.Context, env retrieve.ReportEnv, ix *index.Index, _ retrieve.NoOptions) error {
			v, err := ix.Section(priorSection)
			if err != nil {
				return err
			}
			p := v.(*lengthPrior)
			lo, hi := p.prior[0], p.prior[0]
			for _, x := range p.prior {
				lo, hi = min(lo, x), max(hi, x)
			}
			_, err = fmt.Fprintf(env.Out, "length prior: power %g, %d nodes, prior from %.3g to %.3g\n", p.Power, len(p.prior), lo, hi)
			return err
		}}))
	retrieve.Must(retrieve.Register(retrieve.Def[priorOptions]{Name: "test-prior", Summary: "BM25 blended with the test's length prior",
		Defaults: func() priorOptions { return priorOptions{Weight: 0.5} }, Params: (*priorOptions).Params, Reads: []string{priorSection},
		New: newPriorMethod, Host: "BM25 and the blend run on the host"}))
}

// priorBuild are the build step's settings.
type priorBuild struct{ Power float64 }

func (o *priorBuild) Params(p *retrieve.Params) {
	p.Float(&o.Power, "test-power", "the length prior's power", retrieve.Within(0.0, 8.0))
}

// buildPrior computes and stores the prior.
func buildPrior(ctx context.Context, _ retrieve.BuildEnv, dir string, o priorBuild) (string, error) {
	ix, err := index.Open(dir, store.OpenOptions{})
	if err != nil {
		return "", err
	}
	defer ix.Close()
	prior := make([]float32, ix.N())
	var sum float64
	for i := range prior {
		x := math.Pow(float64(len(strings.Fields(ix.Text(i)))+1), -o.Power)
		prior[i], sum = float32(x), sum+x
	}
	for i := range prior {
		prior[i] = float32(float64(prior[i]) / sum)
	}
	meta := lengthPrior{Power: o.Power}
	err = ix.StoreSection(ctx, dir, priorSection, meta, func(w *index.SectionWriter) error { return w.F32("prior.f32", prior) })
	return fmt.Sprintf("test prior: %d nodes at power %g", len(prior), o.Power), err
}

// priorOptions are the method's settings.
type priorOptions struct{ Weight float64 }

func (o *priorOptions) Params(p *retrieve.Params) {
	p.Float(&o.Weight, "test-weight", "the prior's weight against BM25/max", retrieve.Within(0.0, 1.0))
}

// priorMethod ranks by (1−w)·BM25/max + w·prior/max.
type priorMethod struct {
	ix    *index.Index
	prior []float32
	w     float64
}

func newPriorMethod(ix *index.Index, _ retrieve.Env, o priorOptions) (retrieve.Method, error) {
	v, err := ix.Section(priorSection)
	if err != nil {
		return nil, err
	}
	return &priorMethod{ix: ix, prior: v.(*lengthPrior).prior, w: o.Weight}, nil
}

func (m *priorMethod) Name() string { return "test-prior" }

func (m *priorMethod) Retrieve(ctx context.Context, q retrieve.Query, k int) ([]retrieve.Hit, error) {
	if strings.TrimSpace(q.Text) == "" {
		return nil, retrieve.ErrEmptyQuery
	}
	sc := make([]float32, m.ix.N())
	if _, err := m.ix.BM25.ScoreAll(q.Text, sc); err != nil {
		return nil, err
	}
	var top, ptop float32
	for i := range sc {
		top, ptop = max(top, sc[i]), max(ptop, m.prior[i])
	}
	best := engine.NewTopK(k)
	for i, x := range sc {
		if x > 0 {
			best.Push(int32(i), float32((1-m.w)*float64(x/top)+m.w*float64(m.prior[i]/ptop)))
		}
	}
	return best.Results(), nil
}

// TestAMethodInOneFile: the method above is built, stored, opened, queried,
// evaluated, reported on and served with no other file knowing of it.
func TestAMethodInOneFile(t *testing.T) {
	dir := t.TempDir()
	cdir, idir := filepath.Join(dir, "c"), filepath.Join(dir, "ix")
	c := synth.Generate(synth.Options{People: 60, Cities: 10, Countries: 3, Bands: 10, Queries: 20, Seed: 8})
	if err := corpus.Write(cdir, c); err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, "index", cdir, "-o", idir, "--dims", "16", "--train-head=false"); err != nil {
		t.Fatalf("index: %v\n%s", err, out)
	}
	q := c.Queries[0].Text
	// before the build, the method names what to build
	if _, err := run(t, "query", "--index", idir, "--method", "test-prior", q); !errors.Is(err, index.ErrNotBuilt) || !strings.Contains(err.Error(), "--kind test-prior") {
		t.Fatalf("before its build: %v", err)
	}
	// built and stored by the generic build command, with its own flag
	out, err := run(t, "graph", "build", "--kind", "test-prior", "--index", idir, "--test-power", "0.5")
	if err != nil || !strings.Contains(out, "test prior: 83 nodes at power 0.5") || !strings.Contains(out, "read by --method test-prior") {
		t.Fatalf("graph build: %v\n%s", err, out)
	}
	if _, err := run(t, "graph", "build", "--kind", "test-prior", "--index", idir, "--test-power", "9"); err == nil {
		t.Fatal("a power outside its rule accepted")
	}
	// opened: the index lists it, checksummed with the rest
	if out, err := run(t, "index", "info", idir); err != nil || !strings.Contains(out, "section test-prior") || !strings.Contains(out, "rebuilt when the nodes change") {
		t.Fatalf("index info: %v\n%s", err, out)
	}
	// queried and evaluated, with its setting as a flag
	if out, err := run(t, "query", "--index", idir, "--method", "test-prior", "--test-weight", "0.2", "-k", "3", q); err != nil || !strings.Contains(out, "rank") {
		t.Fatalf("query: %v\n%s", err, out)
	}
	if _, err := run(t, "query", "--index", idir, "--method", "bm25", "--test-weight", "0.2", q); err == nil || !strings.Contains(err.Error(), "--test-weight applies to --method test-prior") {
		t.Fatalf("its flag on another method: %v", err)
	}
	if out, err := run(t, "eval", "--index", idir, "--method", "bm25,test-prior", "--columns", "recall@10"); err != nil || !strings.Contains(out, "test-prior") {
		t.Fatalf("eval: %v\n%s", err, out)
	}
	if out, err := run(t, "graph", "stats", "--kind", "test-prior", "--index", idir); err != nil || !strings.Contains(out, "length prior: power 0.5, 83 nodes") {
		t.Fatalf("graph stats: %v\n%s", err, out)
	}
	// served: listed with its setting, queried with request options
	be, err := engine.Open("cpu")
	if err != nil {
		t.Fatal(err)
	}
	cfg := server.DefaultConfig()
	cfg.Indexes, cfg.Backend, cfg.InsecureNoAuth = map[string]string{"ix": idir}, be, true
	s, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	defer func() { hs.Close(); s.Close(context.Background()) }()
	cl, _ := client.New(hs.URL, hs.Client())
	ms, err := cl.Methods(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	listed := false
	for _, m := range ms.Methods {
		listed = listed || (m.Name == "test-prior" && len(m.Settings) == 1 && m.Settings[0].Name == "test_weight" && m.Reads[0] == priorSection && m.Host != "")
	}
	if !listed {
		t.Fatalf("GET /v1/methods does not list test-prior with test_weight: %+v", ms)
	}
	resp, err := cl.Retrieve(context.Background(), api.RetrieveRequest{Index: "ix", Query: q, Method: "test-prior", K: api.K(3), Options: map[string]any{"test_weight": 0.9}})
	if err != nil || len(resp.Hits) != 3 {
		t.Fatalf("served: %+v, %v", resp, err)
	}
	_, err = cl.Retrieve(context.Background(), api.RetrieveRequest{Index: "ix", Query: q, Method: "test-prior", Options: map[string]any{"test_weight": 2}})
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.Status != 400 || ae.Body.Field != "options.test_weight" {
		t.Fatalf("a bad setting served: %v", err)
	}
}
