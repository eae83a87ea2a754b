package safetensors

import (
	"bytes"
	"testing"
)

// FuzzRead: any file, well-formed or not, reads or fails with an error.
func FuzzRead(f *testing.F) {
	var good bytes.Buffer
	Write(&good, map[string]Tensor{"w": {Shape: []int{2, 2}, Data: []float32{1, 2, 3, 4}}})
	f.Add(good.Bytes())
	f.Add([]byte("\x10\x00\x00\x00\x00\x00\x00\x00{\"w\":{\"dtype\":\"F16\",\"shape\":[-1],\"data_offsets\":[0,2]}}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		parse(b, "m.safetensors", false)
		parse(b, "m.safetensors", true) // the mapped path aliases F32 data: the same checks
	})
}
