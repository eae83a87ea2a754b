package lexical

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

func postingsOf(t *testing.T, texts []string) *Postings {
	t.Helper()
	p, err := BuildPostings(context.Background(), len(texts), func(i int) string { return texts[i] }, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// denseTFIDF is the fitted documents' TF-IDF matrix (rows: docs, in order;
// columns: LSA rows), computed directly from the postings in float64.
func denseTFIDF(p *Postings, m *LSA, docs []int32) *mat.Dense {
	rowOf := map[uint32]int{}
	for r, d := range docs {
		rowOf[uint32(d)] = r
	}
	a := mat.NewDense(len(docs), len(m.IDF), nil)
	n := float64(p.NumDocs())
	for t, r := range m.Row {
		if r < 0 {
			continue
		}
		df := float64(p.Ptr[t+1] - p.Ptr[t])
		idf := math.Log((1+n)/(1+df)) + 1
		for i := p.Ptr[t]; i < p.Ptr[t+1]; i++ {
			if row, ok := rowOf[p.Doc[i]]; ok {
				a.Set(row, int(r), (1+math.Log(float64(p.TF[i])))*idf)
			}
		}
	}
	for i := 0; i < len(docs); i++ {
		row := a.RawRowView(i)
		if norm := math.Sqrt(dot(row, row)); norm > 0 {
			for j := range row {
				row[j] /= norm
			}
		}
	}
	return a
}

func dot(x, y []float64) float64 {
	s := 0.0
	for i := range x {
		s += x[i] * y[i]
	}
	return s
}

// exactRightVectors are a's top-k right singular vectors with LSA's sign
// convention, and its singular values.
func exactRightVectors(t *testing.T, a *mat.Dense, k int) (*mat.Dense, []float64) {
	t.Helper()
	var svd mat.SVD
	if !svd.Factorize(a, mat.SVDThin) {
		t.Fatal("svd failed")
	}
	var v mat.Dense
	svd.VTo(&v)
	rows, _ := v.Dims()
	out := mat.NewDense(rows, k, nil)
	for j := 0; j < k; j++ {
		col := mat.Col(nil, j, &v)
		best := 0
		for i := range col {
			if math.Abs(col[i]) > math.Abs(col[best]) {
				best = i
			}
		}
		if col[best] < 0 {
			for i := range col {
				col[i] = -col[i]
			}
		}
		out.SetCol(j, col)
	}
	return out, svd.Values(nil)
}

func allDocs(n int) []int32 {
	d := make([]int32, n)
	for i := range d {
		d[i] = int32(i)
	}
	return d
}

// checkExact compares the fitted V with the exact SVD of the fitted
// documents' TF-IDF matrix, entry by entry: with as many random directions
// as documents the range finder spans the whole row space, so only float32
// rounding of V may differ.
func checkExact(t *testing.T, p *Postings, m *LSA, docs []int32) {
	t.Helper()
	want, sv := exactRightVectors(t, denseTFIDF(p, m, docs), m.Dims)
	for j := 0; j+1 < m.Dims; j++ {
		if sv[j]-sv[j+1] < 1e-3*sv[0] {
			t.Fatalf("singular values %d and %d nearly tie (%v, %v): pick another corpus", j, j+1, sv[j], sv[j+1])
		}
	}
	const tol = 1e-5 // float32 rounding of entries ≤ 1, with float64 work behind them
	for r := range m.IDF {
		for j := 0; j < m.Dims; j++ {
			if got := float64(m.V[r*m.Dims+j]); math.Abs(got-want.At(r, j)) > tol {
				t.Fatalf("V[%d][%d] = %v, exact SVD %v", r, j, got, want.At(r, j))
			}
		}
	}
}

func TestFitLSAEqualsExactSVD(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	p := postingsOf(t, zipfTexts(rng, 12, 60))
	o := DefaultLSA()
	o.Dims, o.Oversample = 6, 10 // 16 directions ≥ 12 documents
	m, err := FitLSA(context.Background(), p, o)
	if err != nil {
		t.Fatal(err)
	}
	if m.FitDocs != 12 || m.Dims != 6 {
		t.Fatalf("fitted on %d documents at %d dims", m.FitDocs, m.Dims)
	}
	checkExact(t, p, m, allDocs(12))
}

// A corpus above SampleDocs is fitted on a seeded sample: V is the exact
// SVD of the sampled documents' rows (IDF from the whole corpus), and every
// LSA term occurs in MinDF sampled documents.
func TestFitLSAOnSample(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	p := postingsOf(t, zipfTexts(rng, 60, 40))
	o := DefaultLSA()
	o.Dims, o.Oversample, o.SampleDocs = 6, 10, 16
	m, err := FitLSA(context.Background(), p, o)
	if err != nil {
		t.Fatal(err)
	}
	docs := sampleDocs(p.NumDocs(), o)
	if m.FitDocs != 16 || len(docs) != 16 || !slices.IsSorted(docs) {
		t.Fatalf("fit on %d documents, sample %v", m.FitDocs, docs)
	}
	inSample := map[uint32]bool{}
	for _, d := range docs {
		inSample[uint32(d)] = true
	}
	for term, r := range m.Row {
		sampled := 0
		for i := p.Ptr[term]; i < p.Ptr[term+1]; i++ {
			if inSample[p.Doc[i]] {
				sampled++
			}
		}
		if (r >= 0) != (sampled >= o.MinDF && p.Ptr[term+1]-p.Ptr[term] <= int64(o.MaxDFRatio*60)) {
			t.Fatalf("term %q: LSA row %d, in %d sampled documents", p.Terms.Term(term), r, sampled)
		}
	}
	checkExact(t, p, m, docs)
	o.Seed++
	if other := sampleDocs(p.NumDocs(), o); reflect.DeepEqual(other, docs) {
		t.Fatal("another seed drew the same sample")
	}
}

// Randomized SVD finds the leading singular vectors of a larger corpus
// (each lies in the fitted subspace), and more power iterations bring it
// closer: on this flat Zipfian spectrum the default 2 come within 3 %, 12
// within float32 rounding.
func TestFitLSALeadingVectors(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	p := postingsOf(t, zipfTexts(rng, 400, 300))
	for _, c := range []struct {
		iters int
		least float64
	}{{0, 0.6}, {2, 0.97}, {12, 1 - 1e-6}} {
		o := DefaultLSA()
		o.Dims, o.PowerIters = 16, c.iters
		m, err := FitLSA(context.Background(), p, o)
		if err != nil {
			t.Fatal(err)
		}
		exact, _ := exactRightVectors(t, denseTFIDF(p, m, allDocs(400)), 4)
		fitted := mat.NewDense(len(m.IDF), m.Dims, nil)
		for i, x := range m.V {
			fitted.RawMatrix().Data[i] = float64(x)
		}
		worst := 1.0
		for j := 0; j < 4; j++ {
			var proj mat.VecDense
			proj.MulVec(fitted.T(), exact.ColView(j))
			worst = min(worst, mat.Norm(&proj, 2))
		}
		t.Logf("%d power iterations: the worst leading vector keeps %.7f", c.iters, worst)
		if worst < c.least {
			t.Errorf("%d power iterations: a leading singular vector keeps only %.7f in the fitted subspace, want ≥ %v", c.iters, worst, c.least)
		}
	}
}

// Fitting and embedding give the same bits on one core or several.
func TestLSAIndependentOfCores(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	p := postingsOf(t, zipfTexts(rng, 2600, 500))
	o := DefaultLSA()
	o.Dims, o.SampleDocs = 24, 2000
	fit := func(procs int) (*LSA, []float32) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		m, err := FitLSA(context.Background(), p, o)
		if err != nil {
			t.Fatal(err)
		}
		vecs := make([]float32, p.NumDocs()*m.Dims)
		m.EmbedDocs(p, vecs)
		return m, vecs
	}
	m1, v1 := fit(1)
	m3, v3 := fit(3)
	if !reflect.DeepEqual(m1, m3) || !slices.Equal(v1, v3) {
		t.Fatal("one core and three cores disagree")
	}
}

// EmbedDocs, which works through blocks of documents from the postings,
// gives each document the vector embedCounts gives its term counts.
func TestEmbedDocsEqualsOneByOne(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	texts := zipfTexts(rng, 8*embedBlock+300, 400) // more blocks than goroutines: each takes several
	texts[5], texts[3000] = "", "the of and"       // no LSA term: the zero vector
	p := postingsOf(t, texts)
	o := DefaultLSA()
	o.Dims = 12
	m, err := FitLSA(context.Background(), p, o)
	if err != nil {
		t.Fatal(err)
	}
	n, d := p.NumDocs(), m.Dims
	counts := make([]map[int32]float64, n)
	for term, r := range m.Row {
		if r < 0 {
			continue
		}
		for i := p.Ptr[term]; i < p.Ptr[term+1]; i++ {
			if counts[p.Doc[i]] == nil {
				counts[p.Doc[i]] = map[int32]float64{}
			}
			counts[p.Doc[i]][r] = float64(p.TF[i])
		}
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	got := make([]float32, n*d)
	for i := range got {
		got[i] = 7 // EmbedDocs overwrites every row, zero rows included
	}
	m.EmbedDocs(p, got)
	want := make([]float32, d)
	for doc := 0; doc < n; doc++ {
		m.embedCounts(counts[doc], want)
		if !slices.Equal(got[doc*d:(doc+1)*d], want) {
			t.Fatalf("document %d: %v, one by one %v", doc, got[doc*d:(doc+1)*d], want)
		}
	}
}

// BuildPostings, which folds blocks of analyzed documents into compact ids,
// inverts exactly as a map from each term to its documents does.
func TestBuildPostingsEqualsNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	texts := zipfTexts(rng, analyzeBlock+1000, 2000)
	texts[7] = "" // an empty document
	p := postingsOf(t, texts)
	docs := map[string][]uint32{}
	tfs := map[string][]uint32{}
	for d, text := range texts {
		toks := Analyze(text)
		if got := p.DocLen[d]; got != uint32(len(toks)) {
			t.Fatalf("document %d: length %d, want %d", d, got, len(toks))
		}
		count := map[string]uint32{}
		for _, w := range toks {
			count[w]++
		}
		for w, c := range count {
			docs[w] = append(docs[w], uint32(d))
			tfs[w] = append(tfs[w], c)
		}
	}
	if p.Terms.Len() != len(docs) {
		t.Fatalf("%d terms, want %d", p.Terms.Len(), len(docs))
	}
	for term := 0; term < p.Terms.Len(); term++ {
		w := p.Terms.Term(term)
		if term > 0 && p.Terms.Term(term-1) >= w {
			t.Fatalf("terms out of order at %d", term)
		}
		lo, hi := p.Ptr[term], p.Ptr[term+1]
		if !slices.Equal(p.Doc[lo:hi], docs[w]) || !slices.Equal(p.TF[lo:hi], tfs[w]) {
			t.Fatalf("term %q: postings differ", w)
		}
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
}

// Options are checked up front, and a sample too small to fit is refused
// rather than fitted on fewer dimensions or other terms.
func TestLSAOptionsRefused(t *testing.T) {
	for name, edit := range map[string]func(*LSAOptions){
		"zero dims":           func(o *LSAOptions) { o.Dims = 0 },
		"huge dims":           func(o *LSAOptions) { o.Dims = MaxLSADims + 1 },
		"min df 0":            func(o *LSAOptions) { o.MinDF = 0 },
		"max df ratio 0":      func(o *LSAOptions) { o.MaxDFRatio = 0 },
		"max df ratio NaN":    func(o *LSAOptions) { o.MaxDFRatio = math.NaN() },
		"negative oversample": func(o *LSAOptions) { o.Oversample = -1 },
		"power iters 101":     func(o *LSAOptions) { o.PowerIters = 101 },
		"negative sample":     func(o *LSAOptions) { o.SampleDocs = -1 },
		"sample below dims":   func(o *LSAOptions) { o.SampleDocs = o.Dims + o.Oversample - 1 },
	} {
		o := DefaultLSA()
		edit(&o)
		if o.Validate() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	o := DefaultLSA()
	o.SampleDocs = o.Dims + o.Oversample
	if err := o.Validate(); err != nil {
		t.Errorf("the smallest sample refused: %v", err)
	}
	texts := make([]string, 40) // every document its own words: no term in 2 sampled documents
	for i := range texts {
		texts[i] = fmt.Sprintf("alpha%d beta%d alpha%d beta%d", i/2, i/2, i/2, i/2)
	}
	p := postingsOf(t, texts)
	o = LSAOptions{Dims: 2, MinDF: 2, MaxDFRatio: 0.5, Oversample: 1, SampleDocs: 3, Seed: 1}
	if _, err := FitLSA(context.Background(), p, o); err == nil || !strings.Contains(err.Error(), "sampled documents") {
		t.Fatalf("a sample where no term occurs twice: %v", err)
	}
}

// A corpus of SampleDocs documents or fewer is fitted on all of them,
// exactly as with sampling off.
func TestFitLSASampleBoundary(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	p := postingsOf(t, zipfTexts(rng, 300, 200))
	o := DefaultLSA()
	o.Dims, o.SampleDocs = 8, 0
	all, err := FitLSA(context.Background(), p, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{300, 301, 5000} {
		o.SampleDocs = n
		m, err := FitLSA(context.Background(), p, o)
		if err != nil {
			t.Fatal(err)
		}
		if m.FitDocs != 300 || !reflect.DeepEqual(m, all) {
			t.Errorf("sample docs %d: fitted on %d documents, or differs from the fit on all", n, m.FitDocs)
		}
	}
	o.SampleDocs = 299
	if m, err := FitLSA(context.Background(), p, o); err != nil || m.FitDocs != 299 {
		t.Fatalf("sample docs 299: %v, fitted on %d", err, m.FitDocs)
	}
}
