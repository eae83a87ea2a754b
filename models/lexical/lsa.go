package lexical

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// LSAOptions configures LSA fitting.
type LSAOptions struct {
	Dims       int     // output dimensions (default 256)
	MinDF      int     // terms in fewer documents are dropped (default 2)
	MaxDFRatio float64 // terms in more than this share of documents are dropped (default 0.5)
	Oversample int     // extra random directions for the range finder (default 10)
	PowerIters int     // subspace iterations (default 2)
	Seed       uint64  // RNG seed (default 1): fitting is deterministic
	// SampleDocs bounds the documents the SVD is fitted on (default
	// 100,000): a larger corpus is fitted on a seeded uniform sample of
	// this many, so fitting time and memory stop growing with the corpus;
	// document frequencies, IDF and every document's vector still come from
	// the whole corpus. 0 fits on every document.
	SampleDocs int
}

// MaxLSADims bounds Dims: the fit holds a few documents × Dims float64
// matrices, and no LSA needs more.
const MaxLSADims = 4096

// DefaultLSA returns the defaults documented on LSAOptions.
func DefaultLSA() LSAOptions {
	return LSAOptions{Dims: 256, MinDF: 2, MaxDFRatio: 0.5, Oversample: 10, PowerIters: 2, Seed: 1, SampleDocs: 100_000}
}

// Validate rejects meaningless options.
func (o LSAOptions) Validate() error {
	var errs []error
	if o.Dims <= 0 || o.Dims > MaxLSADims {
		errs = append(errs, fmt.Errorf("lsa: dims must be in [1, %d], got %d", MaxLSADims, o.Dims))
	}
	if o.MinDF < 1 {
		errs = append(errs, fmt.Errorf("lsa: min df must be ≥ 1, got %d", o.MinDF))
	}
	if !(o.MaxDFRatio > 0 && o.MaxDFRatio <= 1) {
		errs = append(errs, fmt.Errorf("lsa: max df ratio must be in (0,1], got %v", o.MaxDFRatio))
	}
	if o.Oversample < 0 || o.Oversample > MaxLSADims || o.PowerIters < 0 || o.PowerIters > 100 {
		errs = append(errs, errors.New("lsa: oversample must be in [0, 4096] and power iterations in [0, 100]"))
	}
	if o.SampleDocs != 0 && o.SampleDocs < o.Dims+o.Oversample {
		errs = append(errs, fmt.Errorf("lsa: sample docs must be 0 (fit on every document) or at least dims + oversample = %d, got %d", o.Dims+o.Oversample, o.SampleDocs))
	}
	return errors.Join(errs...)
}

// LSA embeds text as normalize(tfidf(text) · V), where V (terms × dims) holds
// the top right singular vectors of the corpus TF-IDF matrix. TF-IDF uses
// sublinear tf (1 + ln tf), smooth idf ln((1+N)/(1+df)) + 1 and L2-normalised
// rows, as scikit-learn's TfidfVectorizer(sublinear_tf=True) does.
type LSA struct {
	Row  []int32   // postings term id → LSA row, -1 when the term is not used
	IDF  []float32 // per LSA row
	V    []float32 // rows × Dims, row-major
	Dims int
	// FitDocs is how many documents the SVD was fitted on (the sample's
	// size, or every document); 0 for a model read back from an index.
	FitDocs int
}

// EmbedTerms embeds one analyzed text into out (len Dims), given the
// postings' term table. It returns false when no term of the text is in the
// LSA vocabulary (out is then all zeros).
func (m *LSA) EmbedTerms(terms TermTable, words []string, out []float32) bool {
	tf := map[int32]float64{}
	for _, w := range words {
		if t := terms.Lookup(w); t >= 0 && m.Row[t] >= 0 {
			tf[m.Row[t]]++
		}
	}
	return m.embedCounts(tf, out)
}

func (m *LSA) embedCounts(tf map[int32]float64, out []float32) bool {
	clear(out)
	if len(tf) == 0 {
		return false
	}
	acc := make([]float64, m.Dims)
	rows := make([]int32, 0, len(tf))
	for r := range tf {
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i] < rows[j] }) // fixed summation order
	for _, r := range rows {
		w := (1 + math.Log(tf[r])) * float64(m.IDF[r])
		vr := m.V[int(r)*m.Dims : int(r+1)*m.Dims]
		for j, x := range vr {
			acc[j] += w * float64(x)
		}
	}
	return normalizeInto(acc, out)
}

// normalizeInto writes acc/‖acc‖ into out; the TF-IDF norm cancels out, so
// it is not applied.
func normalizeInto(acc []float64, out []float32) bool {
	var s float64
	for _, x := range acc {
		s += x * x
	}
	if s == 0 {
		return false
	}
	inv := 1 / math.Sqrt(s)
	for j, x := range acc {
		out[j] = float32(x * inv)
	}
	return true
}

// embedBlock is how many documents EmbedDocs accumulates at a time (2 MiB
// of float64 sums at 256 dimensions).
const embedBlock = 1024

// EmbedDocs embeds every document behind p from its postings (no
// re-analysis), writing n×Dims normalised rows into out. It works through
// blocks of documents on all cores, holding one block's sums per core, and
// sums each document's terms in ascending term order, so the vectors do not
// depend on the parallelism.
func (m *LSA) EmbedDocs(p *Postings, out []float32) {
	p = p.Flat() // as FitLSA reads it: m's rows are over the flat table's ids
	n, d := p.NumDocs(), m.Dims
	var terms []int32 // the postings terms that have an LSA row, ascending
	for t, r := range m.Row {
		if r >= 0 {
			terms = append(terms, int32(t))
		}
	}
	workers := chunkWorkers(n, embedBlock)
	cursor := make([][]int64, workers) // per goroutine: each term's next posting
	acc := make([][]float64, workers)
	forWorkerChunks(n, embedBlock, workers, func(w, lo, hi int) {
		if cursor[w] == nil {
			cursor[w] = make([]int64, len(terms))
			for i, t := range terms {
				cursor[w][i] = p.Ptr[t]
			}
			acc[w] = make([]float64, embedBlock*d)
		}
		m.embedBlock(p, terms, cursor[w], acc[w], lo, hi, out)
	})
}

// embedBlock embeds documents [lo, hi), advancing each term's cursor past
// them (blocks come in ascending order for one cursor set).
func (m *LSA) embedBlock(p *Postings, terms []int32, cursor []int64, acc []float64, lo, hi int, out []float32) {
	d := m.Dims
	acc = acc[:(hi-lo)*d]
	clear(acc)
	for i, t := range terms {
		end, c := p.Ptr[t+1], cursor[i]
		for c < end && int(p.Doc[c]) < lo {
			c++
		}
		if c == end || int(p.Doc[c]) >= hi {
			cursor[i] = c
			continue
		}
		r := m.Row[t]
		vr := m.V[int(r)*d : int(r+1)*d]
		idf := float64(m.IDF[r])
		for ; c < end && int(p.Doc[c]) < hi; c++ {
			w := (1 + math.Log(float64(p.TF[c]))) * idf
			row := acc[(int(p.Doc[c])-lo)*d : (int(p.Doc[c])-lo+1)*d]
			for j, x := range vr {
				row[j] += w * float64(x)
			}
		}
		cursor[i] = c
	}
	for doc := lo; doc < hi; doc++ {
		if !normalizeInto(acc[(doc-lo)*d:(doc-lo+1)*d], out[doc*d:(doc+1)*d]) {
			clear(out[doc*d : (doc+1)*d]) // no LSA term: the zero vector
		}
	}
}
