// gemm: C = act(alpha·op(A)·op(B) + beta·C + bias) on row-major matrices
// with leading dimensions (engine.GemmOp), batched over blockIdx.z with
// element strides (engine BatchedGemm). A 16×16 output tile per block;
// A's and B's tiles staged through shared memory. The GPU backend runs
// GEMMs through cuBLAS; this kernel is the reference every backend's
// epilogue and transposes are checked against, and what cuda-emu runs.
//
// Reference loop: for i < M, j < N: s = Σ_k op(A)[i,k]·op(B)[k,j];
// C[i,j] = act(alpha·s + beta·C[i,j] + bias[j]) (beta = 0 never reads C).
#include "act.cuh"

#define GEMM_TILE 16

__global__ void gemm(int transA, int transB, int M, int N, int K, float alpha, const float* A, int lda, long long strideA,
                     const float* B, int ldb, long long strideB, float beta, float* C, int ldc, long long strideC,
                     const float* bias, int act) {
	__shared__ float As[GEMM_TILE][GEMM_TILE];
	__shared__ float Bs[GEMM_TILE][GEMM_TILE];
	A += blockIdx.z * strideA;
	B += blockIdx.z * strideB;
	C += blockIdx.z * strideC;
	int row = blockIdx.y * GEMM_TILE + threadIdx.y, col = blockIdx.x * GEMM_TILE + threadIdx.x;
	float acc = 0.0f;
	for (int t = 0; t < K; t += GEMM_TILE) {
		int ka = t + threadIdx.x, kb = t + threadIdx.y;
		As[threadIdx.y][threadIdx.x] = (row < M && ka < K) ? (transA ? A[(long long)ka * lda + row] : A[(long long)row * lda + ka]) : 0.0f;
		Bs[threadIdx.y][threadIdx.x] = (kb < K && col < N) ? (transB ? B[(long long)col * ldb + kb] : B[(long long)kb * ldb + col]) : 0.0f;
		__syncthreads();
		for (int i = 0; i < GEMM_TILE; i++) acc += As[threadIdx.y][i] * Bs[i][threadIdx.x];
		__syncthreads();
	}
	if (row < M && col < N) {
		float* c = C + (long long)row * ldc + col;
		float v = alpha * acc;
		if (beta != 0.0f) v += beta * *c;
		if (bias) v += bias[col];
		*c = act_apply(act, v);
	}
}
