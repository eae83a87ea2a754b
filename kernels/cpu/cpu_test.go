package cpu_test

import (
	"testing"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/kernels/cpu"
	"github.com/gleaner-rag/gleaner/kernels/kerneltest"
)

func TestConformance(t *testing.T) {
	t.Logf("backend: %s", cpu.New().Caps().Device)
	if skipped := kerneltest.RunAll(t, cpu.New()); len(skipped) > 0 {
		t.Errorf("the cpu backend must implement every op; skipped %v", skipped)
	}
}

// partial is a backend still landing op by op: its edge attention is not
// there yet.
type partial struct{ *cpu.Backend }

func (partial) EdgeAttention(engine.EdgeAttentionOp) error { return engine.ErrNotImplemented }

// An op that returns ErrNotImplemented is skipped and listed, not failed.
func TestConformanceSkipsMissingOps(t *testing.T) {
	var skipped []string
	t.Run("partial", func(t *testing.T) { skipped = kerneltest.RunAll(t, partial{cpu.New()}) })
	if len(skipped) != 1 || skipped[0] != "EdgeAttention" {
		t.Errorf("skipped %v, want [EdgeAttention]", skipped)
	}
}

func TestRegistry(t *testing.T) {
	b, err := engine.Open(cpu.Name)
	if err != nil || b.Name() != "cpu" {
		t.Fatalf("cpu backend: %v, %v", b, err)
	}
}
