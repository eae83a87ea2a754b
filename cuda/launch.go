package cuda

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
