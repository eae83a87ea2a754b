package safetensors

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
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

// Map gives the tensors Read gives, F32 sharing the mapping and F16/BF16
// converted.
func TestMapEqualsRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.safetensors")
	var buf bytes.Buffer
	if err := Write(&buf, map[string]Tensor{"a": {Shape: []int{2, 3}, Data: []float32{1, -2, 3.5, 4, 5, 6}}, "b": {Shape: []int{1}, Data: []float32{7}}}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	want, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	got, release, err := Map(path)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	for name, w := range want {
		if g := got[name]; !slices.Equal(g.Data, w.Data) || !slices.Equal(g.Shape, w.Shape) {
			t.Errorf("%s: mapped %v, read %v", name, g, w)
		}
	}
	if _, _, err := Map(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("a missing file mapped")
	}
}

// Files that are not safetensors say so in words.
func TestNotSafetensorsSaysSo(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string][]byte{
		"short": {1, 2, 3},
		"huge":  {0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, '{', '}'},
		"text":  append([]byte{4, 0, 0, 0, 0, 0, 0, 0}, "abcd"...),
	} {
		p := filepath.Join(dir, name+".safetensors")
		os.WriteFile(p, body, 0o644)
		_, err := Read(p)
		if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "safetensors file") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
