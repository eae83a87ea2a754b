package safetensors

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestRoundTripAndErrors(t *testing.T) {
	in := map[string]Tensor{"a.weight": {Shape: []int{2, 3}, Data: []float32{1, 2, 3, 4, 5, -6.5}}, "b": {Shape: []int{1}, Data: []float32{7}}}
	var buf bytes.Buffer
	if err := Write(&buf, in); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "m.safetensors")
	os.WriteFile(path, buf.Bytes(), 0o644)
	out, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("round trip: %v", out)
	}
	os.WriteFile(path, buf.Bytes()[:buf.Len()-4], 0o644)
	if _, err := Read(path); err == nil {
		t.Error("truncated file accepted")
	}
	if got := f16(0x3c00); got != 1 {
		t.Errorf("f16(1.0) = %v", got)
	}
	if got := f16(0xc000); got != -2 {
		t.Errorf("f16(-2.0) = %v", got)
	}
}
