// rms_norm: out = x/√(mean(x²) + eps)·gamma per row of cols values
// (engine.RMSNormOp, Llama's RMSNorm). A block per row; the mean of squares
// accumulated in double by a block reduction (rows.cuh). out may alias x.
//
// Reference loop: the mean of squares in float64 over the row, then the
// scale.
#include "rows.cuh"

__global__ void rms_norm(int rows, int cols, const float* x, const float* gamma, float eps, float* out) {
	__shared__ double red[ROW_THREADS];
	for (int r = blockIdx.x; r < rows; r += gridDim.x) {
		const float* xr = x + (long long)r * cols;
		float* o = out + (long long)r * cols;
		double ss = 0.0;
		for (int c = threadIdx.x; c < cols; c += blockDim.x) ss += (double)xr[c] * xr[c];
		double inv = 1.0 / sqrt(block_sum_d(red, ss) / cols + (double)eps);
		for (int c = threadIdx.x; c < cols; c += blockDim.x) o[c] = (float)(xr[c] * inv) * gamma[c];
	}
}
