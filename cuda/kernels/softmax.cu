// softmax: each row of x (rows × cols) normalised into out, entries with
// mask 0 excluded (probability 0); a fully masked row becomes zeros
// (engine.SoftmaxOp). A block per row; max and sum by block reductions
// (rows.cuh: warp shuffles; blockDim.x must be ROW_THREADS).
//
// Reference loop: m = max over unmasked; e_j = exp(x_j − m); out_j = e_j/Σe.
#include "rows.cuh"

__global__ void softmax(int rows, int cols, const float* x, const float* mask, float* out) {
	__shared__ float red[ROW_THREADS];
	for (int r = blockIdx.x; r < rows; r += gridDim.x) {
		const float* xr = x + (long long)r * cols;
		const float* mr = mask ? mask + (long long)r * cols : 0;
		float* o = out + (long long)r * cols;
		float m = -INFINITY;
		for (int c = threadIdx.x; c < cols; c += blockDim.x)
			if (!mr || mr[c] != 0.0f) m = fmaxf(m, xr[c]);
		m = block_max(red, m);
		if (m == -INFINITY) { // every entry masked: the whole block takes this branch
			for (int c = threadIdx.x; c < cols; c += blockDim.x) o[c] = 0.0f;
			continue;
		}
		float s = 0.0f;
		for (int c = threadIdx.x; c < cols; c += blockDim.x) {
			float e = (!mr || mr[c] != 0.0f) ? expf(xr[c] - m) : 0.0f;
			o[c] = e;
			s += e;
		}
		float inv = 1.0f / block_sum(red, s);
		for (int c = threadIdx.x; c < cols; c += blockDim.x) o[c] *= inv;
	}
}
