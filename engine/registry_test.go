package engine_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gleaner-rag/gleaner/cuda"
	"github.com/gleaner-rag/gleaner/engine"
	_ "github.com/gleaner-rag/gleaner/kernels/cpu"
)

func TestSelect(t *testing.T) {
	if b, err := engine.Select("cpu"); err != nil || b.Name() != "cpu" {
		t.Fatalf("cpu: %v %v", b, err)
	}
	if _, err := engine.Select("cuda"); !errors.Is(err, cuda.ErrNotBuilt) {
		t.Errorf("cuda without the tag: %v", err)
	}
	_, err := engine.Open("metal")
	if err == nil || !strings.Contains(err.Error(), "cpu") {
		t.Errorf("unknown backend: %v", err)
	}
	t.Setenv(engine.EnvBackend, "cuda")
	if _, err := engine.Select(""); err == nil {
		t.Error("GLEANER_BACKEND=cuda fell back silently")
	}
}
