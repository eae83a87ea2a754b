// Package safetensors reads and writes the safetensors format
// (https://huggingface.co/docs/safetensors): an 8-byte little-endian
// header length, a JSON header mapping tensor names to dtype, shape and
// byte offsets, then the raw data. gleaner reads F32 (and converts F16 and
// BF16) tensors; it writes F32.
package safetensors

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"sort"
	"unsafe"

	"github.com/gleaner-rag/gleaner/internal/safefile"
)

// Tensor is a named float32 tensor.
type Tensor struct {
	Shape []int
	Data  []float32
}

type entry struct {
	Dtype   string   `json:"dtype"`
	Shape   []int    `json:"shape"`
	Offsets [2]int64 `json:"data_offsets"`
}

// maxHeader bounds the JSON header (the format's own limit is 100 MB).
const maxHeader = 100 << 20

// Read loads every tensor of a safetensors file as float32.
func Read(path string) (map[string]Tensor, error) {
	b, err := safefile.Read(path, safefile.MaxWeights)
	if err != nil {
		return nil, err
	}
	return parse(b, path, false)
}

// parse decodes a whole safetensors file held in b; with alias, F32
// tensors that are aligned in b share its memory instead of being copied
// (b must then outlive them and never change).
func parse(b []byte, path string, alias bool) (map[string]Tensor, error) {
	if len(b) < 8 {
		return nil, fmt.Errorf("safetensors: %s: %d bytes, too short to be a safetensors file (it starts with an 8-byte header length)", path, len(b))
	}
	n := binary.LittleEndian.Uint64(b[:8])
	if n > maxHeader || 8+n > uint64(len(b)) {
		return nil, fmt.Errorf("safetensors: %s: the header claims %d bytes and the file has %d: not a safetensors file, or truncated", path, n, len(b)-8)
	}
	var hdr map[string]json.RawMessage
	if err := json.Unmarshal(b[8:8+n], &hdr); err != nil {
		return nil, fmt.Errorf("safetensors: %s: the header is not a JSON object of tensors (%v): not a safetensors file, or damaged", path, err)
	}
	data := b[8+n:]
	out := map[string]Tensor{}
	for name, raw := range hdr {
		if name == "__metadata__" {
			continue
		}
		var e entry
		if err := json.Unmarshal(raw, &e); err != nil {
			return nil, fmt.Errorf("safetensors: %s: tensor %q: %w", path, name, err)
		}
		t, err := decode(e, data, alias)
		if err != nil {
			return nil, fmt.Errorf("safetensors: %s: tensor %q: %w", path, name, err)
		}
		out[name] = t
	}
	return out, nil
}

func decode(e entry, data []byte, alias bool) (Tensor, error) {
	count := 1
	for _, d := range e.Shape {
		if d < 0 {
			return Tensor{}, fmt.Errorf("negative dimension in %v", e.Shape)
		}
		count *= d
	}
	size := map[string]int{"F32": 4, "F16": 2, "BF16": 2}[e.Dtype]
	if size == 0 {
		return Tensor{}, fmt.Errorf("dtype %s is not supported (F32, F16, BF16)", e.Dtype)
	}
	lo, hi := e.Offsets[0], e.Offsets[1]
	if lo < 0 || hi < lo || hi > int64(len(data)) || hi-lo != int64(count*size) {
		return Tensor{}, fmt.Errorf("offsets %v do not hold %d %s values", e.Offsets, count, e.Dtype)
	}
	raw := data[lo:hi]
	if alias && e.Dtype == "F32" && count > 0 && littleEndian && uintptr(unsafe.Pointer(&raw[0]))%4 == 0 {
		return Tensor{Shape: e.Shape, Data: unsafe.Slice((*float32)(unsafe.Pointer(&raw[0])), count)}, nil
	}
	t := Tensor{Shape: e.Shape, Data: make([]float32, count)}
	switch e.Dtype { // one switch per tensor, not per value: a 1B-parameter file has 10⁹ of them
	case "F32":
		for i := range t.Data {
			t.Data[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
	case "BF16":
		for i := range t.Data {
			t.Data[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(raw[2*i:])) << 16)
		}
	case "F16":
		for i := range t.Data {
			t.Data[i] = f16(binary.LittleEndian.Uint16(raw[2*i:]))
		}
	}
	return t, nil
}

// f16 converts an IEEE half-precision value.
func f16(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := int((h >> 10) & 0x1f)
	frac := uint32(h & 0x3ff)
	switch {
	case exp == 0:
		v := float32(frac) / (1 << 24)
		if sign != 0 {
			v = -v
		}
		return v
	case exp == 31:
		return math.Float32frombits(sign | 0x7f800000 | frac<<13)
	}
	return math.Float32frombits(sign | uint32(exp-15+127)<<23 | frac<<13)
}

// Write stores tensors as F32 in name order.
func Write(w io.Writer, tensors map[string]Tensor) error {
	names := make([]string, 0, len(tensors))
	for n := range tensors {
		names = append(names, n)
	}
	sort.Strings(names)
	hdr := map[string]entry{}
	var off int64
	for _, n := range names {
		t := tensors[n]
		hdr[n] = entry{Dtype: "F32", Shape: t.Shape, Offsets: [2]int64{off, off + int64(4*len(t.Data))}}
		off += int64(4 * len(t.Data))
	}
	hb, err := json.Marshal(hdr)
	if err != nil {
		return err
	}
	for len(hb)%8 != 0 {
		hb = append(hb, ' ')
	}
	if err := binary.Write(w, binary.LittleEndian, uint64(len(hb))); err != nil {
		return err
	}
	if _, err := w.Write(hb); err != nil {
		return err
	}
	for _, n := range names {
		if err := binary.Write(w, binary.LittleEndian, tensors[n].Data); err != nil {
			return err
		}
	}
	return nil
}

// Parse decodes a safetensors file held in b; name labels errors.
func Parse(b []byte, name string) (map[string]Tensor, error) { return parse(b, name, false) }

// littleEndian: the file's F32 values are the host's float32s.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// Normal is a tensor of the given shape drawn from N(mean, scale²) by rng:
// how gleaner makes random test weights.
func Normal(rng *rand.Rand, mean, scale float64, shape ...int) Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(mean + scale*rng.NormFloat64())
	}
	return Tensor{Shape: shape, Data: v}
}
