package engine

import (
	"fmt"
	"math"
)

// composedJointAttention is JointAttention from core ops only.
func composedJointAttention(b Backend, op JointAttentionOp) (err error) {
	w := op.Lm + op.Lt
	if w == 0 || op.N < 0 || op.D <= 0 || op.Dv <= 0 || (op.Causal && op.Lt < op.N) {
		return fmt.Errorf("engine: joint attention: bad shape N=%d Lm=%d Lt=%d D=%d Dv=%d causal=%v", op.N, op.Lm, op.Lt, op.D, op.Dv, op.Causal)
	}
	if op.N == 0 {
		return nil
	}
	s, err := b.Alloc(F32, op.N*w)
	if err != nil {
		return err
	}
	defer b.Free(s)
	var mask Buffer
	if op.Causal {
		if mask, err = Upload(b, causalMask(op.N, op.Lm, op.Lt)); err != nil {
			return err
		}
		defer b.Free(mask)
	}
	scale := float32(1 / math.Sqrt(float64(op.D)))
	steps := []GemmOp{
		{TransB: true, M: op.N, N: op.Lm, K: op.D, Alpha: scale, A: op.Q, OffA: op.OffQ, LDA: op.LDQ, B: op.KMem, OffB: op.OffKMem, LDB: op.LDKMem, C: s, LDC: w},
		{TransB: true, M: op.N, N: op.Lt, K: op.D, Alpha: scale, A: op.Q, OffA: op.OffQ, LDA: op.LDQ, B: op.KText, OffB: op.OffKText, LDB: op.LDKText, C: s, OffC: op.Lm, LDC: w},
	}
	for _, g := range steps {
		if g.N > 0 {
			if err := b.Gemm(g); err != nil {
				return err
			}
		}
	}
	if err := b.Softmax(SoftmaxOp{X: s, Mask: mask, Out: s, Rows: op.N, Cols: w}); err != nil {
		return err
	}
	return accumulateValues(b, op, s, w)
}

// accumulateValues computes Out = P_mem·VMem + P_text·VText from the
// probability matrix s (N×w).
func accumulateValues(b Backend, op JointAttentionOp, s Buffer, w int) error {
	beta := float32(0)
	if op.Lm > 0 {
		if err := b.Gemm(GemmOp{M: op.N, N: op.Dv, K: op.Lm, Alpha: 1, A: s, LDA: w, B: op.VMem, OffB: op.OffVMem, LDB: op.LDVMem, C: op.Out, OffC: op.OffOut, LDC: op.LDOut}); err != nil {
			return err
		}
		beta = 1
	}
	if op.Lt > 0 {
		return b.Gemm(GemmOp{M: op.N, N: op.Dv, K: op.Lt, Alpha: 1, Beta: beta, A: s, OffA: op.Lm, LDA: w, B: op.VText, OffB: op.OffVText, LDB: op.LDVText, C: op.Out, OffC: op.OffOut, LDC: op.LDOut})
	}
	return nil
}

// causalMask: query i sees all memory keys and text keys j ≤ i + Lt − N.
func causalMask(n, lm, lt int) []float32 {
	w := lm + lt
	m := make([]float32, n*w)
	for i := 0; i < n; i++ {
		for j := 0; j < lm; j++ {
			m[i*w+j] = 1
		}
		for j := 0; j <= i+lt-n && j < lt; j++ {
			m[i*w+lm+j] = 1
		}
	}
	return m
}
