package seeder

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/kernels/cpu"
)

// widenWeights copies float32 weights into float64 ones (the reference's).
func widenWeights(c Config, w *Weights[float32]) *Weights[float64] {
	var src []*[]float32
	w.each(c, func(_ string, _ []int, p *[]float32) { src = append(src, p) })
	out, i := zeros[float64](c), 0
	out.each(c, func(_ string, _ []int, p *[]float64) { *p = widen(*src[i]); i++ })
	return out
}

// encoderConfigs turn each optional part off in turn.
func encoderConfigs() map[string]Config {
	all := DefaultConfig()
	all.In, all.Words, all.Relations = 8, 5, 4
	out := map[string]Config{"all": all}
	for name, off := range map[string]func(*Config){
		"no local": func(c *Config) { c.Local = false }, "no virtual": func(c *Config) { c.Virtual = false },
		"no hop gate": func(c *Config) { c.HopGate = false }, "no cycles": func(c *Config) { c.Cycles = 0 },
		"paper inputs": func(c *Config) { c.Words, c.Relations = 0, 0 },
	} {
		c := all
		off(&c)
		out[name] = c
	}
	return out
}

// encoderGraphs mixes sizes: one node, a graph without relations, edges
// or words, and graphs of up to `largest` nodes (stage 2's cap is 500).
func encoderGraphs(c Config, rng *rand.Rand, largest int) []*Graph {
	gs := []*Graph{randomGraph(c, 1, 0, 1, rng), randomGraph(c, 40, 120, 6, rng), randomGraph(c, largest, 3*largest, 8, rng)}
	bare := randomGraph(c, 9, 0, 0, rng)
	bare.Words = nil
	return append(gs, bare)
}

// checkEncoder runs the engine forward on b over graphs of up to largest
// nodes and compares every head value with the float64 reference forward
// of the same weights.
func checkEncoder(t *testing.T, b engine.Backend, largest int, only ...string) {
	for name, c := range encoderConfigs() {
		if len(only) > 0 && !slices.Contains(only, name) {
			continue
		}
		w32, err := NewWeights[float32](c)
		if err != nil {
			t.Fatal(err)
		}
		m := &Model{Config: c, W: w32}
		enc, err := m.Bind(b)
		if err != nil {
			t.Fatal(err)
		}
		gs := encoderGraphs(c, rand.New(rand.NewPCG(11, 12)), largest)
		got, err := enc.Forward(context.Background(), gs)
		enc.Close()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		bt, err := newBatch[float64](c, gs)
		if err != nil {
			t.Fatal(err)
		}
		ref := forward(widenWeights(c, w32), c, bt, 0, nil)
		worst := 0.0
		for gi, g := range gs {
			for r := 0; r < g.Nodes(); r++ {
				i := bt.first[gi] + r
				for _, v := range []struct {
					what      string
					got, want float64
				}{{"policy", float64(got[gi].Policy[r]), ref.P[i]}, {"score", float64(got[gi].Score[r]), ref.S[i]}} {
					d := math.Abs(v.got-v.want) / (1 + math.Abs(v.want))
					worst = max(worst, d)
					if !(d <= encoderTol) {
						t.Fatalf("%s on %s: graph %d row %d %s = %v, float64 reference %v", name, b.Name(), gi, r, v.what, v.got, v.want)
					}
				}
			}
		}
		t.Logf("%s on %s: worst relative error %.3g", name, b.Name(), worst)
	}
}

// encoderTol bounds the float32 forward's error against float64,
// relative to 1 + |value|: the recursive-sum bound 2·n·eps32 for the
// widest product (n = 2·Hidden = 64), 1.5e-5, rounded up. The float32
// host forward errs by < 1e-6 on these graphs (TestEncoderTolerance keeps
// it 10× inside), the engine forward by as little.
const encoderTol = 2e-5

func TestEncoderMatchesReference(t *testing.T) { checkEncoder(t, cpu.New(), 500) }

// TestEncoderTolerance: the float32 host forward (training's) stays well
// inside encoderTol, so the bound is not loose enough to hide a bug of
// that size.
func TestEncoderTolerance(t *testing.T) {
	c := encoderConfigs()["all"]
	w32, _ := NewWeights[float32](c)
	gs := encoderGraphs(c, rand.New(rand.NewPCG(11, 12)), 500)
	b32, _ := newBatch[float32](c, gs)
	b64, _ := newBatch[float64](c, gs)
	f32, f64 := forward(w32, c, b32, 0, nil), forward(widenWeights(c, w32), c, b64, 0, nil)
	worst := 0.0
	for i := range f64.P {
		worst = max(worst, math.Abs(float64(f32.P[i])-f64.P[i])/(1+math.Abs(f64.P[i])), math.Abs(float64(f32.S[i])-f64.S[i])/(1+math.Abs(f64.S[i])))
	}
	t.Logf("float32 host forward: worst relative error %.3g (bound %.3g)", worst, encoderTol)
	if worst > encoderTol/10 {
		t.Errorf("float32 host forward errs by %.3g, within 10× of the bound %.3g", worst, encoderTol)
	}
}
