package retrieve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/graphops/hnsw"
	"github.com/gleaner-rag/gleaner/graphops/ivf"
	"github.com/gleaner-rag/gleaner/index"
)

// SectionIVF is the index section holding an inverted file over the
// index's vectors: approximate dense search for method vector (search auto
// or ivf) that scores every centroid, so no row is out of reach as a
// seldom-linked row of the HNSW graph is. It is rebuilt with the vectors.
const SectionIVF = "ivf"

const ivfVersion = 1

var errNoIVF = &index.MissingError{What: "inverted file", Hint: "gleaner graph build --kind ivf --index <dir>"}

// ivfMeta is the section's description: the build's settings (Lists as
// asked, 0 for the size's default; Built as made) and the shape.
type ivfMeta struct {
	Lists      int    `json:"lists"`
	Sample     int    `json:"sample"`
	Iterations int    `json:"iterations"`
	Seed       uint64 `json:"seed"`
	Codes      string `json:"codes"`
	Built      int    `json:"built_lists"`
	Nodes      int    `json:"nodes"`
	Dims       int    `json:"dims"`
}

func init() {
	index.MustRegisterSection(index.SectionType{Name: SectionIVF, Version: ivfVersion, Update: index.Rebuild,
		Summary: errNoIVF.What, Hint: errNoIVF.Hint, Load: loadIVF, Refresh: refreshIVF, FromVectors: true,
		CanRefresh: func(_ *index.Index, settings json.RawMessage) error {
			_, err := ivfRefreshSettings(settings)
			return err
		}})
	Must(RegisterBuild(BuildDef[IVFSettings]{Name: SectionIVF, Group: BuildGraph, Section: SectionIVF,
		Summary: "an inverted file over the index's vectors: approximate dense search for method vector",
		Long: `an inverted file over the index's vectors: k-means (--iterations, on --sample vectors per
list drawn with --seed) places --lists centroids (0: 4·√N rounded to a power of two), every vector
joins its nearest centroid's list, and method vector (its --search and --nprobe) scores a question
against every centroid and then only the vectors of the nprobe best lists; the lists are the same
whatever the number of CPUs`,
		Defaults: DefaultIVFSettings, Params: (*IVFSettings).Params, Build: buildIVF,
		Host: "the centroids are trained on the backend; the lists are searched on the host"}))
}

// IVFSettings configure the inverted-file build step. Lists 0 is the
// size's default (ivf.ListsFor); Codes is CodesInt8 (ivf.Options.Codes)
// or CodesNone; the other fields are ivf.Options'.
type IVFSettings struct {
	Lists, Sample, Iterations int
	Seed                      uint64
	Codes                     string
}

// The inverted file's codes (IVFSettings.Codes).
const (
	CodesInt8 = "int8" // every vector also as int8 codes in list order: searches read a quarter of the bytes
	CodesNone = "none" // the lists name rows only; searches read the float32 vectors
)

// maxSeed bounds seeds that an index section records: its description is
// JSON read back as float64, exact only to 2⁵³.
const maxSeed = 1 << 53

// DefaultIVFSettings are 4·√N lists trained on 64 vectors each for 10
// iterations (FAISS's defaults but the sample, which FAISS takes at up to
// 256 per list and which trains 4× faster at 64), with int8 codes.
func DefaultIVFSettings() IVFSettings {
	o := ivf.DefaultOptions(0)
	return IVFSettings{Lists: 0, Sample: o.Sample, Iterations: o.Iterations, Seed: o.Seed, Codes: CodesInt8}
}

// Params binds the inverted-file settings.
func (s *IVFSettings) Params(p *Params) {
	p.Int(&s.Lists, "lists", "ivf: centroids (0: 4·√N rounded to a power of two; at most one per vector)", Within(0, ivf.MaxLists))
	p.Int(&s.Sample, "sample", "ivf: vectors per list k-means trains on", Within(1, ivf.MaxSample))
	p.Int(&s.Iterations, "iterations", "ivf: k-means iterations", Within(1, ivf.MaxIterations))
	p.Uint64(&s.Seed, "seed", "ivf: seed of the training sample", Within[uint64](0, maxSeed))
	p.String(&s.Codes, "codes", "ivf: int8 (every vector also stored as int8 codes in list order, a quarter of its bytes, which searches read before rescoring the best exactly) or none", OneOf(CodesInt8, CodesNone))
}

// options are s as ivf.Options for n vectors on be.
func (s IVFSettings) options(n int, be engine.Backend) ivf.Options {
	o := ivf.Options{Lists: s.Lists, Sample: s.Sample, Iterations: s.Iterations, Seed: s.Seed, Nearest: nearestOn(be), Codes: s.Codes == CodesInt8}
	if o.Lists == 0 {
		o.Lists = ivf.ListsFor(n)
	}
	return o
}

// nearestOn assigns rows to centroids with be's flat top-1 search; nil
// (ivf.GoNearest) without a backend, as the HNSW build scores with
// hnsw.GoDot without one.
func nearestOn(be engine.Backend) ivf.Nearest {
	if be == nil {
		return nil
	}
	return func(ctx context.Context, C []float32, nc, d int, X []float32, nx int, out []int32) error {
		cb, err := engine.Upload(be, C[:nc*d]) // on the backend, as the index's vectors are bound for SearchFlat
		if err != nil {
			return err
		}
		defer be.Free(cb)
		hits, err := engine.SearchFlat(ctx, be, cb, nc, d, X, nx, 1)
		if err != nil {
			return err
		}
		for i, h := range hits {
			if len(h) != 1 {
				return fmt.Errorf("ivf: the %s backend found %d centroids for row %d", be.Name(), len(h), i)
			}
			out[i] = h[0].Index
		}
		return nil
	}
}

// buildIVF builds the inverted file over the vectors of the index at dir
// and stores it as the section.
func buildIVF(ctx context.Context, env BuildEnv, dir string, s IVFSettings) (string, error) {
	ix, err := index.Open(dir, store.OpenOptions{})
	if err != nil {
		return "", err
	}
	defer ix.Close()
	var report func(int)
	if env.Progress != nil {
		env.Progress.Stage("ivf: k-means, then filing", s.Iterations+1)
		defer env.Progress.Finish()
		report = env.Progress.Set
	}
	b, f, err := builtIVF(ctx, ix, s, env.Backend, report)
	if err != nil {
		return "", err
	}
	if err := ix.StoreSection(ctx, dir, SectionIVF, b.Meta, b.Write); err != nil {
		return "", err
	}
	codes := "no codes"
	if f.Codes != nil {
		codes = "int8 codes"
	}
	return fmt.Sprintf("inverted file: %d vectors in %d lists (longest %d), %s", f.N, f.Lists, f.Longest(), codes), nil
}

// builtIVF builds the inverted file over ix's vectors, as its section.
func builtIVF(ctx context.Context, ix *index.Index, s IVFSettings, be engine.Backend, report func(int)) (*index.BuiltSection, *ivf.Index, error) {
	f, err := ivf.Build(ctx, ix.Vectors, ix.N(), ix.Meta.Dims, s.options(ix.N(), be), report)
	if err != nil {
		return nil, nil, err
	}
	meta := ivfMeta{Lists: s.Lists, Sample: s.Sample, Iterations: s.Iterations, Seed: s.Seed, Codes: s.Codes, Built: f.Lists, Nodes: f.N, Dims: f.Dims}
	write := func(w *index.SectionWriter) error {
		err := errors.Join(w.F32("centroids.f32", f.Centroids), w.I64("offsets.i64", f.Offsets), w.I32("ids.i32", f.IDs))
		if err == nil && f.Codes != nil {
			err = errors.Join(w.Bytes("codes.i8", asBytes(f.Codes)), w.F32("scales.f32", f.Scales))
		}
		return err
	}
	return &index.BuiltSection{Name: SectionIVF, Meta: meta, Write: write}, f, nil
}

// refreshIVF builds the inverted file again over ix's vectors with the
// settings its description recorded (a live writer's stale one): Lists 0
// is again the new size's default.
func refreshIVF(ctx context.Context, ix *index.Index, settings json.RawMessage, env index.RefreshEnv) (*index.BuiltSection, error) {
	s, err := ivfRefreshSettings(settings)
	if err != nil {
		return nil, err
	}
	b, _, err := builtIVF(ctx, ix, s, env.Backend, nil)
	return b, err
}

// ivfRefreshSettings reads the settings a stale inverted file was built
// with, or says why a refresh cannot build it (index.ErrNotRefreshable).
func ivfRefreshSettings(settings json.RawMessage) (IVFSettings, error) {
	var m ivfMeta
	if err := json.Unmarshal(settings, &m); err != nil {
		return IVFSettings{}, fmt.Errorf("%w: its recorded settings do not read: %v", index.ErrNotRefreshable, err)
	}
	s := IVFSettings{Lists: m.Lists, Sample: m.Sample, Iterations: m.Iterations, Seed: m.Seed, Codes: m.Codes}
	if s.Codes == "" { // a file built before codes existed
		s.Codes = CodesNone
	}
	if err := Validate(&s, (*IVFSettings).Params); err != nil {
		return s, fmt.Errorf("%w: its recorded settings: %v", index.ErrNotRefreshable, err)
	}
	return s, nil
}

// loadIVF reads the inverted file and checks it against the index's
// vectors.
func loadIVF(ix *index.Index, r *index.SectionReader) (any, error) {
	var m ivfMeta
	if err := r.Meta(&m); err != nil {
		return nil, err
	}
	f := &ivf.Index{N: m.Nodes, Dims: m.Dims, Lists: m.Built}
	var e1, e2, e3 error
	f.Centroids, e1 = r.F32("centroids.f32")
	f.Offsets, e2 = r.I64("offsets.i64")
	f.IDs, e3 = r.I32("ids.i32")
	if err := errors.Join(e1, e2, e3); err != nil {
		return nil, err
	}
	switch m.Codes {
	case CodesInt8:
		b, err := r.Bytes("codes.i8")
		if err != nil {
			return nil, err
		}
		f.Codes = fromBytes[int8](b)
		if f.Scales, err = r.F32("scales.f32"); err != nil {
			return nil, err
		}
	case CodesNone, "": // "": a file of this stop's first commits, before codes
	default:
		return nil, fmt.Errorf("inverted file: codes %q, want %s or %s", m.Codes, CodesInt8, CodesNone)
	}
	if err := f.Check(ix.N(), ix.Meta.Dims); err != nil {
		return nil, err
	}
	return f, nil
}

// IVFOf returns the index's inverted file, or an index.ErrNotBuilt error
// saying how to build it.
func IVFOf(ix *index.Index) (*ivf.Index, error) {
	v, err := ix.Section(SectionIVF)
	if err != nil {
		return nil, err
	}
	return v.(*ivf.Index), nil
}

// fileSearch is an inverted-file search: over the file's int8 codes where
// it holds them and the backend scores codes (rescoring rescore·k rows
// exactly), else over its float32 rows; workers goroutines share the
// lists. Its scores are dot's, so the scan's.
type fileSearch struct {
	f                        *ivf.Index // nil: no file
	nprobe, workers, rescore int
	dot                      hnsw.Dot
	codes                    ivf.ScoreCodes // the backend's int8 scorer; nil: the float32 rows are read
}

func newFileSearch(f *ivf.Index, be engine.Backend, nprobe, workers, rescore int) fileSearch {
	return fileSearch{f: f, nprobe: nprobe, workers: workers, rescore: rescore, dot: engine.DotRowsOf(be), codes: engine.CodeScorerOf(be)}
}

// top is q's best k rows of X among those of the nprobe lists whose
// centroids score best.
func (s fileSearch) top(X, q []float32, k, nprobe int) ([]Hit, error) {
	if s.readsCodes() {
		return s.f.SearchCodes(X, q, k, nprobe, s.workers, s.rescore, s.dot, s.codes)
	}
	return s.f.Search(X, q, k, nprobe, s.workers, s.dot)
}

// pays says whether a search for k hits beats the exact scan: when its
// lists hold about an eighth of the rows at most (nprobe of the lists, and
// the centroids besides) and so do the rows it keeps (k, or rescore·k over
// codes), which it probes on down the lists to find. A device backend's
// exact scan is a GEMM, and the lists would be scored on the host, so
// search auto uses the file only on a backend with engine.RowDotter (a
// non-nil dot, which the callers check).
func (s fileSearch) pays(k int) bool {
	per := 1
	if s.readsCodes() {
		per = s.rescore
	}
	return 8*s.nprobe <= s.f.Lists && k <= s.f.N/(8*per)
}

// readsCodes says whether the search reads the file's int8 codes.
func (s fileSearch) readsCodes() bool { return s.f.Codes != nil && s.codes != nil }
