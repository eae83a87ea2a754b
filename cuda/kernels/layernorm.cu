// layer_norm: out = (x − mean)/√(var + eps)·gamma + beta per row of cols
// values, biased variance (engine.LayerNormOp). A block per row; mean and
// variance accumulated in double by block reductions (rows.cuh).
//
// Reference loop: mean and variance in float64 over the row, then the map.
#include "rows.cuh"

__global__ void layer_norm(int rows, int cols, const float* x, const float* gamma, const float* beta, float eps, float* out) {
	__shared__ double red[ROW_THREADS];
	for (int r = blockIdx.x; r < rows; r += gridDim.x)
		layer_norm_row(red, x + (long long)r * cols, cols, gamma, beta, eps, out + (long long)r * cols);
}
