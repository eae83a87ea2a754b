// Block-wide reductions for the row kernels: a shared-memory tree over
// ROW_THREADS threads (the launch's block size, cuda/launch.go). Every
// thread gets the result; the trailing barrier lets red be reused.
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
	red[threadIdx.x] = v;
	__syncthreads();
	for (int s = blockDim.x / 2; s > 0; s >>= 1) {
		if (threadIdx.x < s) red[threadIdx.x] = op(red[threadIdx.x], red[threadIdx.x + s]);
		__syncthreads();
	}
	T out = red[0];
	__syncthreads();
	return out;
}

__device__ __forceinline__ float block_max(float* red, float v) { return block_reduce(red, v, RedMax()); }
__device__ __forceinline__ float block_sum(float* red, float v) { return block_reduce(red, v, RedSum()); }
__device__ __forceinline__ double block_sum_d(double* red, double v) { return block_reduce(red, v, RedSum()); }
