// Block-wide reductions for the row kernels over ROW_THREADS threads (the
// launch's block size, cuda/launch.go): one warp, so a butterfly of warp
// shuffles, with no shared memory or barrier; a shared-memory tree if the
// block were ever wider. Every thread gets the result, bit for bit the
// tree's (lane i meets lane i^s, the tree's pair t, t+s, and the ops
// commute; for max, up to the sign of a zero, which no caller can see:
// they use it as x − m and m == −∞). Then a LayerNorm of one row built on
// them.
#pragma once
#define ROW_THREADS 32

struct RedMax {
	__device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct RedSum {
	template <class T>
	__device__ T operator()(T a, T b) const { return a + b; }
};

template <class T, class Op>
__device__ __forceinline__ T block_reduce(T* red, T v, Op op) {
#if ROW_THREADS == 32
	(void)red;
#ifdef CUDAEMU
	if (blockDim.x != ROW_THREADS) cudaemu::fail("block_reduce: a row kernel launched with a block other than ROW_THREADS");
#endif
	for (int s = ROW_THREADS / 2; s > 0; s >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, s));
	return v;
#else
	red[threadIdx.x] = v;
	__syncthreads();
	for (int s = blockDim.x / 2; s > 0; s >>= 1) {
		if (threadIdx.x < s) red[threadIdx.x] = op(red[threadIdx.x], red[threadIdx.x + s]);
		__syncthreads();
	}
	T out = red[0];
	__syncthreads();
	return out;
#endif
}

__device__ __forceinline__ float block_max(float* red, float v) { return block_reduce(red, v, RedMax()); }
__device__ __forceinline__ float block_sum(float* red, float v) { return block_reduce(red, v, RedSum()); }
__device__ __forceinline__ double block_sum_d(double* red, double v) { return block_reduce(red, v, RedSum()); }

// layer_norm_row normalises one row of cols values into out (which may be
// x): (x − mean)/√(var + eps)·gamma + beta with the biased variance, mean
// and variance accumulated in double; the block's threads stride over the
// row. LayerNorm and the fused low-rank projection share it.
__device__ __forceinline__ void layer_norm_row(double* red, const float* x, int cols, const float* gamma, const float* beta,
                                               float eps, float* out) {
	double s = 0.0;
	for (int c = threadIdx.x; c < cols; c += blockDim.x) s += x[c];
	const double mean = block_sum_d(red, s) / cols;
	double ss = 0.0;
	for (int c = threadIdx.x; c < cols; c += blockDim.x) {
		const double d = x[c] - mean;
		ss += d * d;
	}
	const double inv = 1.0 / sqrt(block_sum_d(red, ss) / cols + (double)eps);
	for (int c = threadIdx.x; c < cols; c += blockDim.x) out[c] = (float)((x[c] - mean) * inv) * gamma[c] + beta[c];
}
