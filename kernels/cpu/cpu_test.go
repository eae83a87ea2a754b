package cpu_test

import (
	"testing"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/kernels/cpu"
	"github.com/gleaner-rag/gleaner/kernels/kerneltest"
)

func TestConformance(t *testing.T) {
	t.Logf("backend: %s", cpu.New().Caps().Device)
	kerneltest.RunAll(t, cpu.New())
}

func TestRegistry(t *testing.T) {
	b, err := engine.Select("")
	if err != nil || b.Name() != "cpu" {
		t.Fatalf("default backend: %v, %v", b, err)
	}
	t.Setenv(engine.EnvBackend, "tpu")
	if _, err := engine.Select(""); err == nil {
		t.Error("unknown backend from the environment accepted")
	}
}
