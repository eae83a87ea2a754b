// The kernels' host entry points: each runs one launch of grid blocks of
// block threads (the configuration comes from cuda/launch.go).
#pragma once
#ifdef __cplusplus
extern "C" {
#endif
void emu_axpby(unsigned grid, unsigned block, int n, float alpha, const float* x, float beta, const float* y, float* out);
void emu_activate(unsigned grid, unsigned block, int act, int n, const float* x, float* out);
void emu_bias_act(unsigned grid, unsigned block, int rows, int cols, int ld, const float* bias, int act, float* x);
void emu_softmax(unsigned grid, unsigned block, int rows, int cols, const float* x, const float* mask, float* out);
void emu_layer_norm(unsigned grid, unsigned block, int rows, int cols, const float* x, const float* gamma, const float* beta, float eps, float* out);
void emu_joint_attention(unsigned grid, unsigned block, int n, int lm, int lt, int d, int dv, const float* q, int ldq, const float* km,
                         int ldkm, const float* vm, int ldvm, const float* kt, int ldkt, const float* vt, int ldvt, float* out,
                         int ldout, int causal, float scale, float* scratch);
void emu_low_rank(unsigned grid, unsigned block, int l, int de, int r, int dkv, const float* m, const float* gamma, const float* beta,
                  const float* a, const float* bm, float eps, float* out, float* scratch);
void emu_rms_norm(unsigned grid, unsigned block, int rows, int cols, const float* x, const float* gamma, float eps, float* out);
void emu_rope(unsigned grid, unsigned block, int rows, int heads, int head_dim, int ld, int pos0, const float* inv_freq, float* x);
void emu_swiglu(unsigned grid, unsigned block, int rows, int cols, const float* x, float* out);
void emu_spmm(unsigned grid, unsigned block, int rows, int d, const long long* ptr, const int* idx, const float* val, const float* x, float* y);
void emu_gemm(unsigned gx, unsigned gy, unsigned gz, unsigned tile, int transA, int transB, int M, int N, int K, float alpha,
              const float* A, int lda, long long strideA, const float* B, int ldb, long long strideB, float beta, float* C,
              int ldc, long long strideC, const float* bias, int act);
void emu_edge_attention(unsigned grid, unsigned block, int n, int heads, int head_dim, const long long* ptr, const int* src,
                        const int* erow, const float* K, const float* Q, const float* V, const float* E, float* out);
void emu_attention(unsigned grid, unsigned block, int batch, int seq, int heads, int hd, const float* Q, const float* K, const float* V,
                   const int* lengths, float* out);
void emu_topk(unsigned grid, unsigned block, int rows, int cols, int k, const float* scores, int* out_idx, float* out_score);
void emu_smooth(unsigned grid, unsigned block, int m, int d, const long long* ptr, const int* idx, const float* deg, const float* H,
                float alpha, int keep, float* out);
void emu_f32_to_bf16(unsigned grid, unsigned block, long long n, const float* x, unsigned short* y);
void emu_mul(unsigned grid, unsigned block, int n, const float* x, const float* y, int accumulate, float* out);
void emu_copy_rows(unsigned grid, unsigned block, int n, int cols, const float* x, const int* src, const int* dst, int add, float* out);
void emu_edge_message(unsigned grid, unsigned block, int n, int d, int rows, const long long* ptr, const int* src, const int* erow,
                      const float* M, const float* F, float* out);
#ifdef __cplusplus
}
#endif
