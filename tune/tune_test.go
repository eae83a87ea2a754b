package tune

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/synth"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/index/indextest"
	"github.com/gleaner-rag/gleaner/kernels/cpu"
	_ "github.com/gleaner-rag/gleaner/methods"
	"github.com/gleaner-rag/gleaner/retrieve"
)

func TestChooseCrossValidatesByHand(t *testing.T) {
	r := &Result{Folds: 2, Rows: []Row{
		{Candidate: Candidate{Method: "a"}, score: []float64{1, 1, 0, 0}},
		{Candidate: Candidate{Method: "b"}, score: []float64{0, 0, 1, 1}},
		{Candidate: Candidate{Method: "c"}, score: []float64{0.6, 0.6, 0.6, 0.6}},
		{Candidate: Candidate{Method: "c", Settings: map[string]string{"x": "1"}}, score: []float64{1, 1, 1, 0}},
	}}
	for i := range r.Rows {
		for _, s := range r.Rows[i].score {
			r.Rows[i].Dev += s / 4
		}
	}
	r.choose([]int{0, 1, 0, 1})
	// Every question: c --x 1 (0.75). Without fold 0 (questions 1, 3) the
	// best is plain c (0.6 against 0.5), which scores 0.6 + 0.6 on fold 0;
	// without fold 1 (questions 0, 2) c --x 1 (1.0), scoring 1 + 0 on fold 1.
	if r.Chosen.String() != "c --x 1" || r.Dev != 0.75 {
		t.Fatalf("chosen %s dev %v", r.Chosen, r.Dev)
	}
	if want := (1.2 + 1.0) / 4; r.CV != want {
		t.Fatalf("cv %v, want %v", r.CV, want)
	}
	// Per method: a alone scores its held-out folds 0.5 each way: cv 0.5.
	got := map[string]float64{}
	for _, m := range r.Methods {
		got[m.Method] = m.CV
	}
	if got["a"] != 0.5 || got["b"] != 0.5 || got["c"] != 0.55 || r.Methods[0].Method != "c" {
		t.Fatalf("per-method cv %v (order %v)", got, r.Methods)
	}
}

func TestFoldsAreBalancedAndSeeded(t *testing.T) {
	f := folds(10, 4, 1)
	sizes := make([]int, 4)
	for _, x := range f {
		sizes[x]++
	}
	slices.Sort(sizes)
	if !slices.Equal(sizes, []int{2, 2, 3, 3}) {
		t.Fatalf("fold sizes %v", sizes)
	}
	if !slices.Equal(f, folds(10, 4, 1)) || slices.Equal(f, folds(10, 4, 2)) {
		t.Fatal("folds not fixed by the seed")
	}
}

func TestRunOnAnIndex(t *testing.T) {
	c := synth.Generate(synth.Options{People: 60, Cities: 15, Countries: 4, Bands: 15, Queries: 24, Seed: 5})
	dir := indextest.Build(t, c)
	ix := indextest.Open(t, dir)
	o := DefaultOptions()
	o.Methods = []string{"bm25", "ppr", "nexusrag"}
	o.Env = retrieve.Env{Backend: cpu.New()}
	res, err := Run(context.Background(), ix, c.Queries, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 1+2*3*2 || res.N != len(c.Queries) {
		t.Fatalf("%d rows over %d questions", len(res.Rows), res.N)
	}
	if len(res.Skipped) != 1 || res.Skipped[0].Method != "nexusrag" || !strings.Contains(res.Skipped[0].Reason, "graph build --kind trigraph") {
		t.Fatalf("skipped %+v", res.Skipped)
	}
	best := 0.0
	for _, r := range res.Rows {
		best = max(best, r.Dev)
	}
	if res.Dev != best || res.CV > best+1e-12 {
		t.Fatalf("dev %v cv %v, best row %v", res.Dev, res.CV, best)
	}
	path := filepath.Join(t.TempDir(), "p.json")
	p := res.Profile("", retrieve.TuneRecord{Index: dir}, o.Base)
	if err := retrieve.WriteProfile(path, p, false); err != nil {
		t.Fatal(err)
	}
	if err := retrieve.WriteProfile(path, p, false); err == nil {
		t.Fatal("a profile replaced without being asked")
	}
	back, err := retrieve.ReadProfile(path)
	if err != nil || back.Method != res.Chosen.Method || back.Tuned.CV != res.CV {
		t.Fatalf("profile %+v %v", back, err)
	}
	// The same run again chooses the same.
	again, err := Run(context.Background(), ix, c.Queries, o)
	if err != nil || again.Chosen.String() != res.Chosen.String() || again.CV != res.CV {
		t.Fatalf("a second run differs: %v %v %v", again.Chosen, again.CV, err)
	}
}

func TestOptionsValidated(t *testing.T) {
	ix := &index.Index{}
	for _, mod := range []func(*Options){
		func(o *Options) { o.Folds = 1 },
		func(o *Options) { o.Metric = "recall" },
		func(o *Options) { o.Metric = "recall@0" },
		func(o *Options) { o.Concurrency = 0 },
		func(o *Options) { o.GroupBy = "page" },
	} {
		o := DefaultOptions()
		mod(&o)
		if _, err := Run(context.Background(), ix, make([]corpus.Query, 8), o); err == nil {
			t.Fatalf("options %+v accepted", o)
		}
	}
}
