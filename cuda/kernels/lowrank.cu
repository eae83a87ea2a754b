// low_rank: FuseRAG's memory key/value projection, fused (engine.LowRankOp):
// out row i = (LN(m_i)·A)·B with m (l × de), LayerNorm parameters gamma and
// beta (de, biased variance, eps inside the square root), A (de × r) and B
// (r × dkv), through the rank-r bottleneck. A block per row (grid-stride
// over rows): mean and variance by double block reductions (rows.cuh), the
// normalised row and its r projections kept in the row's scratch
// (de + r values), then each thread owns output columns: one writer per
// value.
//
// Reference loop: normalise each row of m in float64, multiply by A then B.
#include "rows.cuh"

__global__ void low_rank(int l, int de, int r, int dkv, const float* m, const float* gamma, const float* beta, const float* a,
                         const float* b, float eps, float* out, float* scratch) {
	__shared__ double red[ROW_THREADS];
	for (int i = blockIdx.x; i < l; i += gridDim.x) {
		const float* x = m + (long long)i * de;
		float* ln = scratch + (long long)i * (de + r);
		float* mid = ln + de;
		layer_norm_row(red, x, de, gamma, beta, eps, ln);
		__syncthreads(); // the whole normalised row before any projection reads it
		for (int j = threadIdx.x; j < r; j += blockDim.x) {
			float acc = 0.0f;
			for (int c = 0; c < de; c++) acc += ln[c] * a[(long long)c * r + j];
			mid[j] = acc;
		}
		__syncthreads(); // every projection before the output reads them
		float* o = out + (long long)i * dkv;
		for (int k = threadIdx.x; k < dkv; k += blockDim.x) {
			float acc = 0.0f;
			for (int j = 0; j < r; j++) acc += mid[j] * b[(long long)j * dkv + k];
			o[k] = acc;
		}
	}
}
