// Package kerneltest is the conformance suite every engine backend must
// pass: RunAll checks each op against a float64 reference on seeded random
// inputs with awkward sizes (1, 3, 17, 129, …), masks, empty rows and
// isolated nodes. Output buffers are poisoned with NaN before every run, so
// an op that skips an element fails; NaN never passes a comparison.
// Tolerances derive from float32 precision and the length of each sum.
//
// An op that returns engine.ErrNotImplemented skips its test (RunAll logs
// the list), so a backend can land op by op. A backend's tests call it in
// one line:
//
//	func TestConformance(t *testing.T) { kerneltest.RunAll(t, cpu.New()) }
package kerneltest

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gleaner-rag/gleaner/engine"
)

// eps32 is float32's machine epsilon.
const eps32 = 1.0 / (1 << 23)

// Sizes are the awkward extents the suite sweeps.
var Sizes = []int{1, 3, 17, 129}

// RunAll runs every op's conformance test against b and returns the tests
// it skipped because b does not implement an op yet.
func RunAll(t *testing.T, b engine.Backend) (skipped []string) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(*H)
	}{
		{"Gemm", testGemm}, {"GemmPrecision", testGemmPrecision}, {"GemmEpilogue", testGemmEpilogue}, {"GemmBoundB", testGemmBoundB}, {"BatchedGemm", testBatchedGemm}, {"BiasAct", testBiasAct},
		{"LayerNorm", testLayerNorm}, {"Activate", testActivate}, {"Softmax", testSoftmax},
		{"Attention", testAttention}, {"SpMM", testSpMM}, {"Axpby", testAxpby},
		{"EdgeAttention", testEdgeAttention}, {"TopK", testTopK}, {"FlatIP", testFlatIP}, {"ScoreRows", testScoreRows},
		{"Smooth", testSmooth}, {"LowRankProject", testLowRank}, {"JointAttention", testJointAttention}, {"GAT", testGAT},
		{"RMSNorm", testRMSNorm}, {"RoPE", testRoPE}, {"SwiGLU", testSwiGLU},
		{"Mul", testMul}, {"CopyRows", testCopyRows}, {"EdgeMessage", testEdgeMessage},
		{"Composed", testComposed}, {"BadInputs", testBadInputs}, {"Shapes", testShapes}, {"Bind", testBind}, {"Queues", testQueues},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if t.Skipped() {
					skipped = append(skipped, tc.name)
				}
			}()
			tc.fn(&H{T: t, B: b, rng: rand.New(rand.NewPCG(uint64(i)+1, 42))})
		})
	}
	names := make([]string, 0, len(tests))
	for _, tc := range tests {
		if !slices.Contains(skipped, tc.name) {
			names = append(names, tc.name)
		}
	}
	t.Logf("%s: %d of %d conformance tests ran: %v", b.Name(), len(names), len(tests), names)
	if len(skipped) > 0 {
		t.Logf("%s: not implemented, skipped: %v", b.Name(), skipped)
	}
	return skipped
}

// H carries the backend, a seeded RNG and the test through one op's checks.
type H struct {
	*testing.T
	B   engine.Backend
	rng *rand.Rand
}

// Rand returns n standard-normal values.
func (h *H) Rand(n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(h.rng.NormFloat64())
	}
	return x
}

// Up uploads host data.
func (h *H) Up(x []float32) engine.Buffer {
	h.Helper()
	buf, err := engine.Upload(h.B, x)
	if err != nil {
		h.Fatal(err)
	}
	return buf
}

// UpI32 and UpI64 upload index data.
func (h *H) UpI32(x []int32) engine.Buffer {
	h.Helper()
	buf, err := engine.Upload(h.B, x)
	if err != nil {
		h.Fatal(err)
	}
	return buf
}

func (h *H) UpI64(x []int64) engine.Buffer {
	h.Helper()
	buf, err := engine.Upload(h.B, x)
	if err != nil {
		h.Fatal(err)
	}
	return buf
}

// Poisoned returns a buffer of n NaNs.
func (h *H) Poisoned(n int) engine.Buffer {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(math.NaN())
	}
	return h.Up(x)
}

// Down downloads a float32 buffer.
func (h *H) Down(buf engine.Buffer) []float32 {
	h.Helper()
	x, err := engine.Download[float32](h.B, buf)
	if err != nil {
		h.Fatal(err)
	}
	return x
}

// Must fails the test on err; an op the backend does not implement yet
// (engine.ErrNotImplemented) skips the test instead, so a backend can land
// op by op and RunAll lists what it skipped.
func (h *H) Must(err error) {
	h.Helper()
	if errors.Is(err, engine.ErrNotImplemented) {
		h.Skip(err)
	}
	if err != nil {
		h.Fatal(err)
	}
}

// Close compares got with the float64 reference want: |got−want| ≤ tol[i]
// (tol has one value per element, or one for all). NaN never passes.
func (h *H) Close(what string, got []float32, want []float64, tol ...float64) {
	h.Helper()
	if len(got) < len(want) {
		h.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	bad := 0
	for i, w := range want {
		tl := tol[0]
		if len(tol) > 1 {
			tl = tol[i]
		}
		g := float64(got[i])
		if math.IsNaN(g) || math.IsInf(g, 0) || math.Abs(g-w) > tl {
			if bad < 3 {
				h.Errorf("%s: element %d = %v, want %v ± %.3g", what, i, g, w, tl)
			}
			bad++
		}
	}
	if bad > 3 {
		h.Errorf("%s: %d of %d elements off", what, bad, len(want))
	}
}

// Tol is the tolerance for values computed in float32 from sums of n terms
// whose absolute values add up to mag: a forward-error bound of the
// recursive sum, 2·n·eps·mag, plus a floor of a few ulps of 1.
func Tol(n int, mag float64) float64 {
	return 2*float64(max(n, 1))*eps32*mag + 4*eps32
}

func name(parts ...any) string { return fmt.Sprint(parts...) }
