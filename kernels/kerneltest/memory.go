package kerneltest

import (
	"errors"
	"math"
	"slices"

	"github.com/gleaner-rag/gleaner/engine"
)

// testBind: a bound buffer (Memory.Bind) holds its source, serves as any
// op's input, and is read-only — Upload into it and an op writing it fail
// with engine.ErrReadOnly and leave it as it was — so a device backend may
// keep what it derives from it (a bfloat16 copy of a weight, a host copy
// of its indices).
func testBind(h *H) {
	x := h.Rand(17 * 3)
	xb := h.bind(x)
	if got := h.Down(xb); !slices.Equal(got, x) {
		h.Fatalf("bound f32: downloaded %v, want %v", got[:3], x[:3])
	}
	ptr := []int64{0, 2, 5}
	p64 := h.bind(ptr)
	if got, err := engine.Download[int64](h.B, p64); err != nil || !slices.Equal(got, ptr) {
		h.Fatalf("bound i64: downloaded %v (%v), want %v", got, err, ptr)
	}
	src := []int32{16, 0, 5}
	sb := h.bind(src)
	out := h.Poisoned(3 * 3)
	h.Must(h.B.SpMM(engine.SpMMOp{Rows: 3, Cols: 17, D: 3, Ptr: h.bind([]int64{0, 1, 2, 3}), Idx: sb, X: xb, Y: out}))
	h.Close("gather (SpMM) from bound buffers", h.Down(out), gathered(x, src, 3), 0)

	readOnly := func(what string, err error) {
		h.Helper()
		if errors.Is(err, engine.ErrNotImplemented) {
			return
		}
		if !errors.Is(err, engine.ErrReadOnly) {
			h.Errorf("%s: got %v, want engine.ErrReadOnly", what, err)
		}
	}
	readOnly("upload into a bound f32 buffer", h.B.Upload(xb, 1, []float32{7}))
	readOnly("upload into a bound i32 buffer", h.B.Upload(sb, 0, []int32{1}))
	y := h.Up(h.Rand(len(x)))
	readOnly("axpby into a bound buffer", h.B.Axpby(engine.AxpbyOp{N: len(x), Alpha: 1, X: y, Beta: 1, Y: y, Out: xb}))
	readOnly("spmm into a bound buffer", h.B.SpMM(engine.SpMMOp{Rows: 2, Cols: 2, D: 3, Ptr: p64, Idx: h.UpI32([]int32{0, 1, 1, 0, 1}), X: y, Y: xb}))
	readOnly("gemm into a bound buffer", h.B.Gemm(engine.GemmOp{M: 3, N: 3, K: 3, Alpha: 1, A: y, B: y, C: xb}))
	readOnly("bias_act on a bound buffer", h.B.BiasAct(engine.BiasActOp{X: xb, Rows: 17, Cols: 3, Act: engine.ActReLU}))
	readOnly("top-k indices into a bound buffer", h.B.TopK(engine.TopKOp{Scores: y, Rows: 1, Cols: 4, K: 4, OutIdx: h.bind([]int32{0, 0, 0, 0}), OutScore: h.Poisoned(4)}))
	if got := h.Down(xb); !slices.Equal(got, x) {
		h.Errorf("a refused write changed the bound buffer")
	}
	if got, err := engine.Download[int32](h.B, sb); err != nil || !slices.Equal(got, src) {
		h.Errorf("a refused write changed the bound indices: %v (%v)", got, err)
	}
	indicesRewritten(h, x)
	boundBF16Rebound(h)
}

// indicesRewritten: an index buffer's checks see its latest contents,
// whether an Upload (whole or partial) or a kernel (top-k) wrote them — a
// backend that caches indices on the host must follow both.
func indicesRewritten(h *H, x []float32) {
	xb, ptr := h.Up(x), h.UpI64([]int64{0, 1, 2, 3})
	src := []int32{1, 2, 3}
	sb := h.UpI32(src)
	run := func() (engine.Buffer, error) { // rows src of x, by SpMM
		out := h.Poisoned(3 * 3)
		return out, h.B.SpMM(engine.SpMMOp{Rows: 3, Cols: 17, D: 3, Ptr: ptr, Idx: sb, X: xb, Y: out})
	}
	out, err := run()
	h.Must(err)
	h.Close("gather", h.Down(out), gathered(x, src, 3), 0)
	src[1] = 9 // a partial upload
	h.Must(h.B.Upload(sb, 1, src[1:2]))
	out, err = run()
	h.Must(err)
	h.Close("gather after a partial upload", h.Down(out), gathered(x, src, 3), 0)
	h.Must(h.B.Upload(sb, 2, []int32{17})) // column 17 of 17: out of range
	if _, err := run(); err == nil {
		h.Errorf("spmm with an index uploaded out of range: no error")
	}

	// Out-of-range indices, then top-k's valid ones over them: the op
	// must check what the kernel wrote, not what was uploaded.
	h.Must(h.B.Upload(sb, 0, []int32{100, 100, 100}))
	scores := []float32{0.5, 3, -1, 2, 0}
	h.Must(h.B.TopK(engine.TopKOp{Scores: h.Up(scores), Rows: 1, Cols: 5, K: 3, OutIdx: sb, OutScore: h.Poisoned(3)}))
	out, err = run()
	if err != nil {
		h.Fatalf("spmm by top-k's indices (the uploaded ones were out of range): %v", err)
	}
	h.Close("gather by top-k's indices", h.Down(out), gathered(x, []int32{1, 3, 0}, 3), 0)
}

// boundBF16Rebound: a bfloat16 product with a bound B, then with another
// B bound after the first is freed (a device may hand the new one the old
// block): each stays within the bfloat16 bound of its own B.
func boundBF16Rebound(h *H) {
	m, n, k := 5, 17, 33
	a := h.Rand(m * k)
	ab := h.Up(a)
	for i := range 2 {
		bm := h.Rand(k * n)
		bb := h.bind(bm)
		c := h.Poisoned(m * n)
		h.Must(h.B.Gemm(engine.GemmOp{M: m, N: n, K: k, Alpha: 1, A: ab, B: bb, C: c, Precision: engine.PrecisionBF16}))
		want, mag := refGemm(false, false, m, n, k, 1, a, k, bm, n, 0, nil, n)
		u := engine.PrecisionBF16.UnitRoundoff()
		tol := make([]float64, len(mag))
		for j := range mag {
			tol[j] = Tol(k+1, mag[j]) + (2*u+u*u)*mag[j]
		}
		h.Close(name("bf16 gemm with bound B #", i+1), h.Down(c), want, tol...)
		h.B.Free(bb)
	}
}

// bind binds host data, failing the test on an error.
func (h *H) bind(src any) engine.Buffer {
	h.Helper()
	buf, err := h.B.Bind(src)
	if err != nil {
		h.Fatal(err)
	}
	return buf
}

// gathered is rows src of x (cols wide), as float64.
func gathered(x []float32, src []int32, cols int) []float64 {
	out := make([]float64, 0, len(src)*cols)
	for _, s := range src {
		for _, v := range x[int(s)*cols : int(s+1)*cols] {
			out = append(out, float64(v))
		}
	}
	return out
}

// testQueues: a backend with queues (engine.Queuer) runs the work of
// several views at once — each with its own buffers, all reading a weight
// and an index bound on the backend itself — with every view's results
// those of its own inputs. A backend without queues passes.
func testQueues(h *H) {
	if _, ok := h.B.(engine.Queuer); !ok {
		h.Logf("%s has no queues (engine.Queuer): nothing to check", h.B.Name())
		return
	}
	m, n, k := 17, 33, 64
	w := h.Rand(k * n)
	wb := h.bind(w)
	ptr, idx := h.bind([]int64{0, 2, 3}), h.bind([]int32{5, 1, 16})
	const views = 4
	inputs := make([][]float32, views)
	for i := range inputs {
		inputs[i] = h.Rand(m * k)
	}
	errs := make(chan error, views)
	results := make([][2][]float32, views)
	for i := range views {
		go func() { errs <- queueWork(h.B, inputs[i], wb, ptr, idx, m, n, k, &results[i]) }()
	}
	for range views {
		if err := <-errs; err != nil {
			h.Fatal(err)
		}
	}
	for i, a := range inputs {
		want, mag := refGemm(false, false, m, n, k, 1, a, k, w, n, 0, nil, n)
		tol := make([]float64, len(mag))
		for j := range mag {
			tol[j] = Tol(k+1, mag[j])
		}
		h.Close(name("gemm on queue view ", i), results[i][0], want, tol...)
		// The SpMM sums rows 5 and 1 of the view's product, then takes row 16.
		c := results[i][0]
		want2, mag2 := make([]float64, 2*n), make([]float64, 2*n)
		for j := range n {
			x, y := float64(c[5*n+j]), float64(c[1*n+j])
			want2[j], mag2[j] = x+y, math.Abs(x)+math.Abs(y)
			want2[n+j], mag2[n+j] = float64(c[16*n+j]), math.Abs(float64(c[16*n+j]))
		}
		tol2 := make([]float64, len(mag2))
		for j, v := range mag2 {
			tol2[j] = Tol(2, v)
		}
		h.Close(name("spmm on queue view ", i), results[i][1], want2, tol2...)
	}
}

// queueWork runs a GEMM with the bound weight and an SpMM with the bound
// index on a view of b, and downloads both results.
func queueWork(b engine.Backend, a []float32, w, ptr, idx engine.Buffer, m, n, k int, out *[2][]float32) (err error) {
	v, release, err := engine.OnQueue(b)
	if err != nil {
		return err
	}
	defer release()
	var bufs []engine.Buffer
	defer func() {
		for _, x := range bufs {
			v.Free(x)
		}
	}()
	ab, err := engine.Upload(v, a)
	if err != nil {
		return err
	}
	bufs = append(bufs, ab)
	c, err1 := v.Alloc(engine.F32, m*n)
	y, err2 := v.Alloc(engine.F32, 2*n)
	bufs = append(bufs, c, y)
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	if err := v.Gemm(engine.GemmOp{M: m, N: n, K: k, Alpha: 1, A: ab, B: w, C: c}); err != nil {
		return err
	}
	if err := v.SpMM(engine.SpMMOp{Rows: 2, Cols: m, D: n, Ptr: ptr, Idx: idx, X: c, Y: y}); err != nil {
		return err
	}
	if out[0], err = engine.Download[float32](v, c); err != nil {
		return err
	}
	out[1], err = engine.Download[float32](v, y)
	return err
}
