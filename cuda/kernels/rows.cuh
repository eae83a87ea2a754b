// Block-wide reductions for the row kernels: a shared-memory tree over
// ROW_THREADS threads (the launch's block size, cuda/launch.go). Every
// thread gets the result; the trailing barrier lets red be reused.
#pragma once
#define ROW_THREADS 32

__device__ __forceinline__ float block_max(float* red, float v) {
	red[threadIdx.x] = v;
	__syncthreads();
	for (int s = blockDim.x / 2; s > 0; s >>= 1) {
		if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
		__syncthreads();
	}
	float out = red[0];
	__syncthreads();
	return out;
}

__device__ __forceinline__ float block_sum(float* red, float v) {
	red[threadIdx.x] = v;
	__syncthreads();
	for (int s = blockDim.x / 2; s > 0; s >>= 1) {
		if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
		__syncthreads();
	}
	float out = red[0];
	__syncthreads();
	return out;
}

__device__ __forceinline__ double block_sum_d(double* red, double v) {
	red[threadIdx.x] = v;
	__syncthreads();
	for (int s = blockDim.x / 2; s > 0; s >>= 1) {
		if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
		__syncthreads();
	}
	double out = red[0];
	__syncthreads();
	return out;
}
