// The .cu sources of cuda/kernels, compiled as C++ against cudaemu.h. Go's build
// cache keys this file by its own text, not by what it includes: after editing a
// .cu file, `go clean -cache` (or edit this file) before testing here; CI builds
// from a clean cache.
#include "cudaemu.h"
#include "launch.h"

#include "../kernels/activate.cu"
#include "../kernels/attention.cu"
#include "../kernels/axpby.cu"
#include "../kernels/bf16.cu"
#include "../kernels/biasact.cu"
#include "../kernels/copyrows.cu"
#include "../kernels/edgeattn.cu"
#include "../kernels/edgemsg.cu"
#include "../kernels/gemm.cu"
#include "../kernels/jointattn.cu"
#include "../kernels/layernorm.cu"
#include "../kernels/lowrank.cu"
#include "../kernels/mul.cu"
#include "../kernels/rmsnorm.cu"
#include "../kernels/rope.cu"
#include "../kernels/smooth.cu"
#include "../kernels/softmax.cu"
#include "../kernels/spmm.cu"
#include "../kernels/swiglu.cu"
#include "../kernels/topk.cu"

extern "C" {
void emu_axpby(unsigned g, unsigned b, int n, float alpha, const float* x, float beta, const float* y, float* out) {
	cudaemu::launch(dim3(g), dim3(b), [=] { axpby(n, alpha, x, beta, y, out); });
}
void emu_activate(unsigned g, unsigned b, int act, int n, const float* x, float* out) {
	cudaemu::launch(dim3(g), dim3(b), [=] { activate(act, n, x, out); });
}
void emu_bias_act(unsigned g, unsigned b, int rows, int cols, int ld, const float* bias, int act, float* x) {
	cudaemu::launch(dim3(g), dim3(b), [=] { bias_act(rows, cols, ld, bias, act, x); });
}
void emu_softmax(unsigned g, unsigned b, int rows, int cols, const float* x, const float* mask, float* out) {
	cudaemu::launch(dim3(g), dim3(b), [=] { softmax(rows, cols, x, mask, out); });
}
void emu_layer_norm(unsigned g, unsigned b, int rows, int cols, const float* x, const float* gamma, const float* beta, float eps, float* out) {
	cudaemu::launch(dim3(g), dim3(b), [=] { layer_norm(rows, cols, x, gamma, beta, eps, out); });
}
void emu_joint_attention(unsigned g, unsigned b, int n, int lm, int lt, int d, int dv, const float* q, int ldq, const float* km,
                         int ldkm, const float* vm, int ldvm, const float* kt, int ldkt, const float* vt, int ldvt, float* out,
                         int ldout, int causal, float scale, float* scratch) {
	cudaemu::launch(dim3(g), dim3(b), [=] {
		joint_attention(n, lm, lt, d, dv, q, ldq, km, ldkm, vm, ldvm, kt, ldkt, vt, ldvt, out, ldout, causal, scale, scratch);
	});
}
void emu_low_rank(unsigned g, unsigned b, int l, int de, int r, int dkv, const float* m, const float* gamma, const float* beta,
                  const float* a, const float* bm, float eps, float* out, float* scratch) {
	cudaemu::launch(dim3(g), dim3(b), [=] { low_rank(l, de, r, dkv, m, gamma, beta, a, bm, eps, out, scratch); });
}
void emu_rms_norm(unsigned g, unsigned b, int rows, int cols, const float* x, const float* gamma, float eps, float* out) {
	cudaemu::launch(dim3(g), dim3(b), [=] { rms_norm(rows, cols, x, gamma, eps, out); });
}
void emu_rope(unsigned g, unsigned b, int rows, int heads, int head_dim, int ld, int pos0, const float* inv_freq, float* x) {
	cudaemu::launch(dim3(g), dim3(b), [=] { rope(rows, heads, head_dim, ld, pos0, inv_freq, x); });
}
void emu_swiglu(unsigned g, unsigned b, int rows, int cols, const float* x, float* out) {
	cudaemu::launch(dim3(g), dim3(b), [=] { swiglu(rows, cols, x, out); });
}
void emu_gemm(unsigned gx, unsigned gy, unsigned gz, unsigned tile, int transA, int transB, int M, int N, int K, float alpha,
              const float* A, int lda, long long strideA, const float* B, int ldb, long long strideB, float beta, float* C,
              int ldc, long long strideC, const float* bias, int act) {
	cudaemu::launch(dim3(gx, gy, gz), dim3(tile, tile), [=] {
		gemm(transA, transB, M, N, K, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC, bias, act);
	});
}
void emu_edge_attention(unsigned g, unsigned b, int n, int heads, int head_dim, const long long* ptr, const int* src,
                        const int* erow, const float* K, const float* Q, const float* V, const float* E, float* out) {
	cudaemu::launch(dim3(g), dim3(b), [=] { edge_attention(n, heads, head_dim, ptr, src, erow, K, Q, V, E, out); });
}
void emu_f32_to_bf16(unsigned g, unsigned b, long long n, const float* x, unsigned short* y) {
	cudaemu::launch(dim3(g), dim3(b), [=] { f32_to_bf16(n, x, y); });
}
void emu_mul(unsigned g, unsigned b, int n, const float* x, const float* y, int accumulate, float* out) {
	cudaemu::launch(dim3(g), dim3(b), [=] { mul(n, x, y, accumulate, out); });
}
void emu_copy_rows(unsigned g, unsigned b, int n, int cols, const float* x, const int* src, const int* dst, int add, float* out) {
	cudaemu::launch(dim3(g), dim3(b), [=] { copy_rows(n, cols, x, src, dst, add, out); });
}
void emu_edge_message(unsigned g, unsigned b, int n, int d, int rows, const long long* ptr, const int* src, const int* erow,
                      const float* M, const float* F, float* out) {
	cudaemu::launch(dim3(g), dim3(b), [=] { edge_message(n, d, rows, ptr, src, erow, M, F, out); });
}
void emu_attention(unsigned g, unsigned b, int batch, int seq, int heads, int hd, const float* Q, const float* K, const float* V,
                   const int* lengths, float* out) {
	cudaemu::launch(dim3(g), dim3(b), [=] { attention(batch, seq, heads, hd, Q, K, V, lengths, out); });
}
void emu_topk(unsigned g, unsigned b, int rows, int cols, int k, const float* scores, int* out_idx, float* out_score) {
	cudaemu::launch(dim3(g), dim3(b), [=] { topk(rows, cols, k, scores, out_idx, out_score); });
}
void emu_smooth(unsigned g, unsigned b, int m, int d, const long long* ptr, const int* idx, const float* deg, const float* H,
                float alpha, int keep, float* out) {
	cudaemu::launch(dim3(g), dim3(b), [=] { smooth(m, d, ptr, idx, deg, H, alpha, keep, out); });
}
void emu_spmm(unsigned g, unsigned b, int rows, int d, const long long* ptr, const int* idx, const float* val, const float* x, float* y) {
	cudaemu::launch(dim3(g), dim3(b), [=] { spmm(rows, d, ptr, idx, val, x, y); });
}
}
