package cuda

import (
	"fmt"

	"github.com/gleaner-rag/gleaner/engine"
)

// Name is the backend's registry name (in every build: without the cuda
// tag it names an explanatory error).
const Name = "cuda"

// Launch is a kernel's grid and block size. The cuda backend and the
// cuda-emu host emulation take their launches from these functions, so the
// emulated runs test the configurations the GPU runs.
type Launch struct{ Grid, Block uint32 }

// Block sizes of the kernel families (rows.cuh's ROW_THREADS for the row
// kernels, which reduce across the block).
const (
	ElementwiseThreads = 256
	RowThreads         = 32
	maxGrid            = 4096
)

// Elementwise launches a grid-stride kernel over n elements.
func Elementwise(n int) Launch {
	return Launch{Grid: uint32(max(1, min(maxGrid, (n+ElementwiseThreads-1)/ElementwiseThreads))), Block: ElementwiseThreads}
}

// GemmTile is gemm.cu's output tile (GEMM_TILE).
const GemmTile = 16

// Gemm3D is a tiled GEMM's launch: a GemmTile² block per output tile,
// batch in the z dimension.
type Gemm3D struct{ GridX, GridY, GridZ, Block uint32 }

// Gemm launches gemm.cu over an M×N output, batch times.
func Gemm(m, n, batch int) Gemm3D {
	return Gemm3D{GridX: uint32(max(1, (n+GemmTile-1)/GemmTile)), GridY: uint32(max(1, (m+GemmTile-1)/GemmTile)),
		GridZ: uint32(max(1, batch)), Block: GemmTile}
}

// Rows launches a block-per-row kernel (grid-stride over rows).
func Rows(rows int) Launch {
	return Launch{Grid: uint32(max(1, min(maxGrid, rows))), Block: RowThreads}
}

// CheckRoPE checks a RoPE op against the n elements its buffer holds from
// its offset and returns the row stride; the cuda backend and cuda-emu
// share it.
func CheckRoPE(op engine.RoPEOp, n int) (int, error) {
	ld := op.LD
	if ld == 0 {
		ld = op.Heads * op.HeadDim
	}
	if op.Rows < 0 || op.Heads <= 0 || op.HeadDim <= 0 || op.HeadDim%2 != 0 || op.Pos0 < 0 || ld < op.Heads*op.HeadDim ||
		len(op.InvFreq) < op.HeadDim/2 || (op.Rows > 0 && n < (op.Rows-1)*ld+op.Heads*op.HeadDim) {
		return 0, fmt.Errorf("cuda: rope: bad shape rows=%d heads=%d head_dim=%d ld=%d pos0=%d (head_dim even, %d inverse frequencies, %d values)",
			op.Rows, op.Heads, op.HeadDim, ld, op.Pos0, len(op.InvFreq), n)
	}
	return ld, nil
}

// JointLDs are a joint-attention op's row strides with 0 (packed)
// resolved.
type JointLDs struct{ Q, KMem, VMem, KText, VText, Out int }

// CheckJointAttention checks a joint-attention op against the elements its
// buffers hold from their offsets (q, km, vm, kt, vt, out) and resolves
// its row strides; the cuda backend and cuda-emu share it.
func CheckJointAttention(op engine.JointAttentionOp, q, km, vm, kt, vt, out int) (JointLDs, error) {
	ld := func(v, cols int) int {
		if v == 0 {
			return cols
		}
		return v
	}
	l := JointLDs{ld(op.LDQ, op.D), ld(op.LDKMem, op.D), ld(op.LDVMem, op.Dv), ld(op.LDKText, op.D), ld(op.LDVText, op.Dv), ld(op.LDOut, op.Dv)}
	need := func(rows, cols, stride int) int {
		if rows == 0 {
			return 0
		}
		return (rows-1)*stride + cols
	}
	switch {
	case op.N < 0 || op.Lm < 0 || op.Lt < 0 || op.D <= 0 || op.Dv <= 0 || op.Lm+op.Lt == 0 || (op.Causal && op.Lt < op.N):
		return l, fmt.Errorf("cuda: joint attention: bad shape N=%d Lm=%d Lt=%d D=%d Dv=%d causal=%v", op.N, op.Lm, op.Lt, op.D, op.Dv, op.Causal)
	case l.Q < op.D || l.KMem < op.D || l.KText < op.D || l.VMem < op.Dv || l.VText < op.Dv || l.Out < op.Dv:
		return l, fmt.Errorf("cuda: joint attention: a row stride is below its row length")
	case q < need(op.N, op.D, l.Q) || km < need(op.Lm, op.D, l.KMem) || vm < need(op.Lm, op.Dv, l.VMem) ||
		kt < need(op.Lt, op.D, l.KText) || vt < need(op.Lt, op.Dv, l.VText) || out < need(op.N, op.Dv, l.Out):
		return l, fmt.Errorf("cuda: joint attention: buffers too short for the shape")
	}
	return l, nil
}

// CheckLowRank checks a low-rank projection against the elements its
// buffers hold (m, gamma, beta, a, b, out); the cuda backend and cuda-emu
// share it.
func CheckLowRank(op engine.LowRankOp, m, gamma, beta, a, b, out int) error {
	if op.L < 0 || op.De <= 0 || op.R <= 0 || op.Dkv <= 0 || m < op.L*op.De || gamma < op.De || beta < op.De ||
		a < op.De*op.R || b < op.R*op.Dkv || out < op.L*op.Dkv {
		return fmt.Errorf("cuda: low-rank projection: bad shapes or short buffers L=%d De=%d R=%d Dkv=%d", op.L, op.De, op.R, op.Dkv)
	}
	return nil
}
