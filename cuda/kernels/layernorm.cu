// layer_norm: out = (x − mean)/√(var + eps)·gamma + beta per row of cols
// values, biased variance (engine.LayerNormOp). A block per row; mean and
// variance accumulated in double by shared-memory reductions.
//
// Reference loop: mean and variance in float64 over the row, then the map.
#include "rows.cuh"

__global__ void layer_norm(int rows, int cols, const float* x, const float* gamma, const float* beta, float eps, float* out) {
	__shared__ double red[ROW_THREADS];
	for (int r = blockIdx.x; r < rows; r += gridDim.x) {
		const float* xr = x + (long long)r * cols;
		float* o = out + (long long)r * cols;
		double s = 0.0;
		for (int c = threadIdx.x; c < cols; c += blockDim.x) s += xr[c];
		double mean = block_sum_d(red, s) / cols;
		double ss = 0.0;
		for (int c = threadIdx.x; c < cols; c += blockDim.x) {
			double d = xr[c] - mean;
			ss += d * d;
		}
		double inv = 1.0 / sqrt(block_sum_d(red, ss) / cols + (double)eps);
		for (int c = threadIdx.x; c < cols; c += blockDim.x)
			o[c] = (float)((xr[c] - mean) * inv) * gamma[c] + beta[c];
	}
}
