package engine_test

import (
	"strings"
	"testing"

	"github.com/gleaner-rag/gleaner/engine"
	_ "github.com/gleaner-rag/gleaner/kernels/cpu"
)

func TestOpen(t *testing.T) {
	if b, err := engine.Open("cpu"); err != nil || b.Name() != "cpu" {
		t.Fatalf("cpu: %v %v", b, err)
	}
	checkCUDANotBuilt(t)
	_, err := engine.Open("metal")
	if err == nil || !strings.Contains(err.Error(), "cpu") {
		t.Errorf("unknown backend: %v", err)
	}
	if _, err := engine.Open(""); err == nil {
		t.Error("an empty backend name was accepted")
	}
}
