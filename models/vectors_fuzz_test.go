package models

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"
)

func npyBytes(header string, data []float32) []byte {
	h := header
	for (10+len(h)+1)%64 != 0 {
		h += " "
	}
	h += "\n"
	b := append([]byte("\x93NUMPY\x01\x00"), byte(len(h)), byte(len(h)>>8))
	b = append(b, h...)
	for _, x := range data {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

// FuzzVectors: .npy and vector JSONL inputs decode or fail with an error,
// and never allocate more than the input can fill.
func FuzzVectors(f *testing.F) {
	f.Add(npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", []float32{1, 2, 3, 4}), []byte(`{"id":"a","vector":[1,2]}`+"\n"+`{"id":"b","vector":[3,4]}`))
	f.Add(npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 99999999999), }", nil), []byte(`{"id":"a","vector":[1e39]}`))
	f.Add([]byte("\x93NUMPY\x02\x00\xff\xff\xff\xff"), []byte(`{"id":"a","vector":[]}`))
	ids := []string{"a", "b"}
	f.Fuzz(func(t *testing.T, npy, jsonl []byte) {
		decodeNPY(bytes.NewReader(npy), int64(len(npy)), "v.npy", len(ids))
		decodeVectorsJSONL(bytes.NewReader(jsonl), "v.jsonl", ids)
	})
}
