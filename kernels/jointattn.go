package kernels

import (
	"fmt"
	"math"
)

// JointAttentionArgs describes one head of FuseRAG's joint attention
// (docs/methods.md §7): N decoder queries attend over [memory keys ; text keys]
// with one softmax. Q is N×D, KMem Lm×D, VMem Lm×Dv, KText Lt×D, VText
// Lt×Dv, Out N×Dv, each with its row stride (LD…; 0 = packed), so one
// call reads one head of row-major multi-head buffers such as a decoder's
// [positions, heads·D] KV cache. With Causal, query i (the i-th of the
// last N text positions) sees text keys j ≤ i + Lt − N; memory keys are
// always visible.
type JointAttentionArgs struct {
	N, Lm, Lt, D, Dv int
	Q, KMem, VMem    []float32
	KText, VText     []float32
	Out              []float32
	Causal           bool

	LDQ, LDKMem, LDVMem, LDKText, LDVText, LDOut int
}

// JointAttention computes softmax([Q·KMemᵀ, Q·KTextᵀ]/√D)·[VMem; VText]:
// both score blocks land side by side in one N×(Lm+Lt) matrix (GEMMs with
// a leading dimension), one masked softmax normalises them together, and
// two GEMMs accumulate the output.
//
// Reference loop: for each query, scores over all visible keys, float64
// softmax, weighted sum of the values.
func JointAttention(a JointAttentionArgs) error {
	if err := a.check(); err != nil {
		return err
	}
	if a.N == 0 {
		return nil
	}
	w := a.Lm + a.Lt
	buf := scratch.get(a.N * w)
	defer scratch.put(buf)
	s := *buf
	scale := float32(1 / math.Sqrt(float64(a.D)))
	if a.Lm > 0 {
		if err := Gemm(GemmArgs{TransB: true, M: a.N, N: a.Lm, K: a.D, Alpha: scale, A: a.Q, LDA: a.LDQ, B: a.KMem, LDB: a.LDKMem, C: s, LDC: w}); err != nil {
			return err
		}
	}
	if a.Lt > 0 {
		if err := Gemm(GemmArgs{TransB: true, M: a.N, N: a.Lt, K: a.D, Alpha: scale, A: a.Q, LDA: a.LDQ, B: a.KText, LDB: a.LDKText, C: s[a.Lm:], LDC: w}); err != nil {
			return err
		}
	}
	if a.Causal {
		hideFuture(s, a.N, a.Lm, a.Lt)
	}
	Softmax(s, nil, s, a.N, w)
	beta := float32(0) // BLAS semantics: β = 0 overwrites Out, whatever it held
	if a.Lm > 0 {
		if err := Gemm(GemmArgs{M: a.N, N: a.Dv, K: a.Lm, Alpha: 1, A: s, LDA: w, B: a.VMem, LDB: a.LDVMem, C: a.Out, LDC: a.LDOut}); err != nil {
			return err
		}
		beta = 1
	}
	if a.Lt > 0 {
		return Gemm(GemmArgs{M: a.N, N: a.Dv, K: a.Lt, Alpha: 1, Beta: beta, A: s[a.Lm:], LDA: w, B: a.VText, LDB: a.LDVText, C: a.Out, LDC: a.LDOut})
	}
	return nil
}

// strided is the length a rows×cols matrix with row stride ld (0 =
// packed) needs.
func strided(rows, cols, ld int) int {
	if rows == 0 {
		return 0
	}
	if ld == 0 {
		ld = cols
	}
	return (rows-1)*ld + cols
}

func (a *JointAttentionArgs) check() error {
	switch {
	case a.N < 0 || a.Lm < 0 || a.Lt < 0 || a.D <= 0 || a.Dv <= 0:
		return fmt.Errorf("kernels: joint attention: bad shape")
	case a.Lm+a.Lt == 0:
		return fmt.Errorf("kernels: joint attention: no keys")
	case a.Causal && a.Lt < a.N:
		return fmt.Errorf("kernels: joint attention: causal needs at least as many text keys (%d) as queries (%d)", a.Lt, a.N)
	case badLD(a.LDQ, a.D) || badLD(a.LDKMem, a.D) || badLD(a.LDKText, a.D) || badLD(a.LDVMem, a.Dv) || badLD(a.LDVText, a.Dv) || badLD(a.LDOut, a.Dv):
		return fmt.Errorf("kernels: joint attention: a row stride is below its row length")
	case len(a.Q) < strided(a.N, a.D, a.LDQ) || len(a.KMem) < strided(a.Lm, a.D, a.LDKMem) || len(a.VMem) < strided(a.Lm, a.Dv, a.LDVMem) ||
		len(a.KText) < strided(a.Lt, a.D, a.LDKText) || len(a.VText) < strided(a.Lt, a.Dv, a.LDVText) || len(a.Out) < strided(a.N, a.Dv, a.LDOut):
		return fmt.Errorf("kernels: joint attention: buffers too short")
	}
	return nil
}

// badLD: a stride is 0 (packed) or at least the row length.
func badLD(ld, cols int) bool { return ld != 0 && ld < cols }

// hideFuture sets the scores of the text keys query i may not see (j > i
// + Lt − N) to −Inf, which the softmax turns into zero weight: no mask to
// allocate, and a prefill of thousands of positions costs no N×(Lm+Lt)
// mask per head.
func hideFuture(s []float32, n, lm, lt int) {
	w := lm + lt
	ninf := float32(math.Inf(-1))
	for i := 0; i < n; i++ {
		row := s[i*w+lm : (i+1)*w]
		for j := i + lt - n + 1; j < lt; j++ {
			row[j] = ninf
		}
	}
}
