package seeder

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/gleaner-rag/gleaner/kernels/cpu"
)

// benchGraph is a 500-node candidate graph with 2,000 random directed KG
// edges over 24 relation rows, at the default width.
func benchGraph(c Config, seed uint64) *Graph {
	rng := rand.New(rand.NewPCG(seed, 1))
	g := randomGraph(c, 500, 2000, 24, rng)
	return g
}

// BenchmarkForward500 is one query's encoder pass over a 500-node graph.
func BenchmarkForward500(b *testing.B) {
	c := DefaultConfig()
	w, _ := NewWeights[float32](c)
	m := &Model{Config: c, W: w}
	gs := []*Graph{benchGraph(c, 1)}
	b.ResetTimer()
	for range b.N {
		if _, err := m.Forward(gs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncoder500 is the same pass as engine ops on the cpu backend
// (inference's path; a device backend runs the same calls).
func BenchmarkEncoder500(b *testing.B) {
	c := DefaultConfig()
	w, _ := NewWeights[float32](c)
	enc, err := (&Model{Config: c, W: w}).Bind(cpu.New())
	if err != nil {
		b.Fatal(err)
	}
	defer enc.Close()
	gs := []*Graph{benchGraph(c, 1)}
	b.ResetTimer()
	for range b.N {
		if _, err := enc.Forward(context.Background(), gs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTrainStep16 is one optimiser step on 16 such graphs.
func BenchmarkTrainStep16(b *testing.B) {
	c := DefaultConfig()
	w, _ := NewWeights[float32](c)
	var exs []Example
	for i := range 16 {
		exs = append(exs, Example{G: benchGraph(c, uint64(i)), T: Target{Gold: []int{3, 40, 77}, NumGold: 3}})
	}
	o := DefaultTrainOptions()
	tr := &trainer{c: c, o: o, w: w, opt: newAdamW(c), rng: rand.New(rand.NewPCG(1, 1)), steps: 100}
	b.ResetTimer()
	for range b.N {
		tr.step(exs, &EpochReport{})
	}
}
