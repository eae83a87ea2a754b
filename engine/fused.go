package engine

import "errors"

// GemmFused runs op on b, applying the bias/activation epilogue through
// BiasAct when the backend's Gemm does not fuse it (ErrNotImplemented).
func GemmFused(b Backend, op GemmOp) error {
	if err := b.Gemm(op); !errors.Is(err, ErrNotImplemented) || (op.Bias == nil && op.Act == ActNone) {
		return err
	}
	bias, act := op.Bias, op.Act
	op.Bias, op.Act = nil, ActNone
	if err := b.Gemm(op); err != nil {
		return err
	}
	return b.BiasAct(BiasActOp{X: op.C, Off: op.OffC, Rows: op.M, Cols: op.N, LD: op.LDC, Bias: bias, Act: act})
}

// Smooth runs GRanker's smoothing on b: the backend's fused Smoother when it
// has one, else P·H by SpMM (P built on the host, with P_ii = 1 on isolated
// rows when KeepIsolated) followed by Axpby.
func Smooth(b Backend, op SmoothOp) error {
	if err := op.Check(); err != nil { // the fallback too refuses what no backend takes
		return err
	}
	if err := b.Smooth(op); !errors.Is(err, ErrNotImplemented) {
		return err
	}
	adj := CSRMatrix{Rows: op.M, Cols: op.M, Ptr: op.AdjPtr, Idx: op.AdjIdx}
	p, err := PropagationMatrix(adj, op.Deg, op.KeepIsolated)
	if err != nil {
		return err
	}
	bufs, err := uploadAll(b, p.Ptr, p.Idx, p.Val)
	if err != nil {
		return err
	}
	defer freeAll(b, bufs...)
	ph, err := b.Alloc(F32, op.M*op.D)
	if err != nil {
		return err
	}
	defer b.Free(ph)
	if err := b.SpMM(SpMMOp{Rows: op.M, Cols: op.M, D: op.D, Ptr: bufs[0], Idx: bufs[1], Val: bufs[2], X: op.H, Y: ph}); err != nil {
		return err
	}
	return b.Axpby(AxpbyOp{N: op.M * op.D, Alpha: 1 - op.Alpha, X: op.H, Beta: op.Alpha, Y: ph, Out: op.Out})
}

func uploadAll(b Backend, ptr []int64, idx []int32, val []float32) ([]Buffer, error) {
	var out []Buffer
	p, err := Upload(b, ptr)
	if err != nil {
		return nil, err
	}
	out = append(out, p)
	i, err := Upload(b, append(idx, 0)) // never empty: some backends refuse zero-length buffers
	if err != nil {
		freeAll(b, out...)
		return nil, err
	}
	out = append(out, i)
	v, err := Upload(b, append(val, 0))
	if err != nil {
		freeAll(b, out...)
		return nil, err
	}
	return append(out, v), nil
}

func freeAll(b Backend, bufs ...Buffer) {
	for _, x := range bufs {
		b.Free(x)
	}
}

// LowRankProject computes (LN(M)·A)·B on b: fused when available, else
// LayerNorm and two GEMMs.
func LowRankProject(b Backend, op LowRankOp) error {
	if err := op.Check(); err != nil { // the fallback too refuses what no backend takes
		return err
	}
	if err := b.LowRankProject(op); !errors.Is(err, ErrNotImplemented) {
		return err
	}
	ln, err := b.Alloc(F32, max(op.L*op.De, 1))
	if err != nil {
		return err
	}
	defer b.Free(ln)
	mid, err := b.Alloc(F32, max(op.L*op.R, 1))
	if err != nil {
		return err
	}
	defer b.Free(mid)
	if op.L == 0 {
		return nil
	}
	if err := b.LayerNorm(LayerNormOp{X: op.M, Gamma: op.Gamma, Beta: op.Beta, Out: ln, Rows: op.L, Cols: op.De, Eps: op.Eps}); err != nil {
		return err
	}
	if err := b.Gemm(GemmOp{M: op.L, N: op.R, K: op.De, Alpha: 1, A: ln, B: op.A, C: mid}); err != nil {
		return err
	}
	return b.Gemm(GemmOp{M: op.L, N: op.Dkv, K: op.R, Alpha: 1, A: mid, B: op.B, C: op.Out})
}

// JointAttention computes one head of joint attention on b: fused when
// available, else two score GEMMs into one N×(Lm+Lt) matrix, one masked
// softmax and two accumulating GEMMs.
func JointAttention(b Backend, op JointAttentionOp) error {
	if err := op.Check(); err != nil { // the fallback too refuses what no backend takes
		return err
	}
	if err := b.JointAttention(op); !errors.Is(err, ErrNotImplemented) {
		return err
	}
	return composedJointAttention(b, op)
}
