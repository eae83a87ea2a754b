package retrieve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/index"
)

// SectionQuantized is the index section holding the index's vectors
// scalar-quantized (bf16 or int8): method vector scans it, reading half or
// a quarter of float32's bytes, and rescores the best candidates over the
// float32 vectors. It is rebuilt with the vectors.
const SectionQuantized = "quantized"

const quantizedVersion = 1

var errNoQuantized = &index.MissingError{What: "quantized vectors", Hint: "gleaner graph build --kind quantized --index <dir> (or gleaner index --quantize int8)"}

// quantizedMeta is the section's description.
type quantizedMeta struct {
	Kind  string `json:"kind"`
	Nodes int    `json:"nodes"`
	Dims  int    `json:"dims"`
}

func init() {
	index.MustRegisterSection(index.SectionType{Name: SectionQuantized, Version: quantizedVersion, Update: index.Rebuild,
		Summary: errNoQuantized.What, Hint: errNoQuantized.Hint, Load: loadQuantized, Refresh: refreshQuantized, FromVectors: true,
		CanRefresh: func(_ *index.Index, settings json.RawMessage) error {
			_, err := quantizedRefreshSettings(settings)
			return err
		}})
	Must(RegisterBuild(BuildDef[QuantizedSettings]{Name: SectionQuantized, Group: BuildGraph, Section: SectionQuantized,
		Summary: "the index's vectors quantized to bf16 or int8: flat search for method vector reading fewer bytes",
		Long: `the index's vectors scalar-quantized (--quantize bf16: bfloat16, half the bytes;
int8: each vector as steps of its largest magnitude, a quarter), which method vector scans
instead of the float32 vectors, rescoring its best candidates exactly (its --search and
--rescore); the float32 vectors stay in the index`,
		Defaults: DefaultQuantizedSettings, Params: (*QuantizedSettings).Params, Build: buildQuantized,
		Host: "the quantized vectors are built and searched on the host"}))
}

// QuantizedSettings configure the quantization build step.
type QuantizedSettings struct {
	Kind string // engine.QuantBF16 or engine.QuantInt8
}

// DefaultQuantizedSettings quantize to int8.
func DefaultQuantizedSettings() QuantizedSettings { return QuantizedSettings{Kind: engine.QuantInt8} }

// Params binds the quantization settings.
func (s *QuantizedSettings) Params(p *Params) {
	p.String(&s.Kind, "quantize", "quantized: bf16 (half of float32's bytes) or int8 (a quarter)", OneOf(engine.QuantKinds()...))
}

// buildQuantized quantizes the vectors of the index at dir and stores
// them as the section.
func buildQuantized(ctx context.Context, _ BuildEnv, dir string, s QuantizedSettings) (string, error) {
	ix, err := index.Open(dir, store.OpenOptions{})
	if err != nil {
		return "", err
	}
	defer ix.Close()
	b, m, err := builtQuantized(ix, s)
	if err != nil {
		return "", err
	}
	if err := ix.StoreSection(ctx, dir, SectionQuantized, b.Meta, b.Write); err != nil {
		return "", err
	}
	return fmt.Sprintf("quantized vectors: %d × %d as %s, %d bytes (float32: %d)", m.N, m.D, m.Kind, m.Bytes(), 4*len(ix.Vectors)), nil
}

// builtQuantized quantizes ix's vectors, as its section.
func builtQuantized(ix *index.Index, s QuantizedSettings) (*index.BuiltSection, *engine.QuantRows, error) {
	m, err := engine.Quantize(ix.Vectors, ix.N(), ix.Meta.Dims, s.Kind)
	if err != nil {
		return nil, nil, err
	}
	write := func(w *index.SectionWriter) error {
		if m.Kind == engine.QuantBF16 {
			return w.Bytes("codes.bf16", asBytes(m.BF16))
		}
		return errors.Join(w.Bytes("codes.i8", asBytes(m.I8)), w.F32("scale.f32", m.Scale))
	}
	return &index.BuiltSection{Name: SectionQuantized, Meta: quantizedMeta{Kind: m.Kind, Nodes: m.N, Dims: m.D}, Write: write}, m, nil
}

// refreshQuantized quantizes ix's vectors again as its description says
// (a live writer's stale section).
func refreshQuantized(_ context.Context, ix *index.Index, settings json.RawMessage, _ index.RefreshEnv) (*index.BuiltSection, error) {
	s, err := quantizedRefreshSettings(settings)
	if err != nil {
		return nil, err
	}
	b, _, err := builtQuantized(ix, s)
	return b, err
}

// quantizedRefreshSettings reads the kind a stale section was built with.
func quantizedRefreshSettings(settings json.RawMessage) (QuantizedSettings, error) {
	var m quantizedMeta
	if err := json.Unmarshal(settings, &m); err != nil {
		return QuantizedSettings{}, fmt.Errorf("%w: its recorded settings do not read: %v", index.ErrNotRefreshable, err)
	}
	s := QuantizedSettings{Kind: m.Kind}
	if err := Validate(&s, (*QuantizedSettings).Params); err != nil {
		return s, fmt.Errorf("%w: its recorded settings: %v", index.ErrNotRefreshable, err)
	}
	return s, nil
}

// loadQuantized reads the codes and checks them against the index's
// vectors' shape.
func loadQuantized(ix *index.Index, r *index.SectionReader) (any, error) {
	var meta quantizedMeta
	if err := r.Meta(&meta); err != nil {
		return nil, err
	}
	if meta.Nodes != ix.N() || meta.Dims != ix.Meta.Dims {
		return nil, fmt.Errorf("quantized vectors are %d×%d, the index's %d×%d", meta.Nodes, meta.Dims, ix.N(), ix.Meta.Dims)
	}
	m := &engine.QuantRows{Kind: meta.Kind, N: meta.Nodes, D: meta.Dims}
	switch meta.Kind {
	case engine.QuantBF16:
		b, err := r.Bytes("codes.bf16")
		if err != nil {
			return nil, err
		}
		m.BF16 = fromBytes[uint16](b)
		for i, v := range m.BF16 {
			if v&0x7f80 == 0x7f80 { // exponent all ones: infinite or NaN
				return nil, fmt.Errorf("quantized vectors: node %d value %d is not finite", i/meta.Dims, i%meta.Dims) // Dims = the index's, > 0
			}
		}
	case engine.QuantInt8:
		b, err := r.Bytes("codes.i8")
		if err != nil {
			return nil, err
		}
		m.I8 = fromBytes[int8](b)
		if m.Scale, err = r.F32("scale.f32"); err != nil {
			return nil, err
		}
		for i, s := range m.Scale {
			if !(s >= 0 && s <= math.MaxFloat32) {
				return nil, fmt.Errorf("quantized vectors: node %d has scale %v", i, s)
			}
		}
	}
	if err := m.Check(); err != nil {
		return nil, err
	}
	return m, nil
}

// asBytes views a slice's memory as bytes (the index's files are
// little-endian, as the machines gleaner runs on).
func asBytes[T int8 | uint16](v []T) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*int(unsafe.Sizeof(v[0])))
}

// fromBytes views bytes as a slice of T; a trailing partial value is
// dropped (Check then refuses the length).
func fromBytes[T int8 | uint16](b []byte) []T {
	var zero T
	n := len(b) / int(unsafe.Sizeof(zero))
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), n)
}

// QuantizedOf returns the index's quantized vectors, or an
// index.ErrNotBuilt error saying how to build them.
func QuantizedOf(ix *index.Index) (*engine.QuantRows, error) {
	v, err := ix.Section(SectionQuantized)
	if err != nil {
		return nil, err
	}
	return v.(*engine.QuantRows), nil
}
