package kernels

import "fmt"

// LowRankArgs describes FuseRAG's memory key/value projection (docs/methods.md
// §7.4): Out = (LN(M)·A)·B with M (L×De), A (De×R), B (R×Dkv), LayerNorm
// parameters Gamma, Beta (De) and epsilon Eps.
type LowRankArgs struct {
	L, De, R, Dkv  int
	M, Gamma, Beta []float32
	A, B, Out      []float32
	Eps            float32
}

// LowRankProject computes Out = (LN(M)·A)·B, in two GEMMs through the
// rank-R bottleneck (L·R·(De+Dkv) multiply-adds rather than L·De·Dkv).
//
// Reference loop: normalise each row of M in float64, multiply by A then B.
func LowRankProject(a LowRankArgs) error {
	if a.L < 0 || a.De <= 0 || a.R <= 0 || a.Dkv <= 0 || len(a.M) < a.L*a.De || len(a.Gamma) < a.De || len(a.Beta) < a.De ||
		len(a.A) < a.De*a.R || len(a.B) < a.R*a.Dkv || len(a.Out) < a.L*a.Dkv {
		return fmt.Errorf("kernels: low-rank projection: bad shapes L=%d De=%d R=%d Dkv=%d", a.L, a.De, a.R, a.Dkv)
	}
	if a.L == 0 {
		return nil
	}
	ln := make([]float32, a.L*a.De)
	LayerNorm(a.M, a.Gamma, a.Beta, ln, a.L, a.De, a.Eps)
	mid := make([]float32, a.L*a.R)
	if err := Gemm(GemmArgs{M: a.L, N: a.R, K: a.De, Alpha: 1, A: ln, B: a.A, C: mid}); err != nil {
		return err
	}
	return Gemm(GemmArgs{M: a.L, N: a.Dkv, K: a.R, Alpha: 1, A: mid, B: a.B, C: a.Out})
}
