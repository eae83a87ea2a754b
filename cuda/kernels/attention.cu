// attention: padded self-attention for short sequences (engine.AttentionOp):
// Q, K, V, out are [batch, seq, heads·head_dim]; keys at positions ≥
// lengths[b] are masked and padding rows are zero. A block per (sequence,
// head, query position); max and sum over the keys by block reductions,
// then a thread per output column.
//
// Reference loop: out[b,i,h,:] = softmax_j(q·k_j/√head_dim)·v_j over j < L.
#include "rows.cuh"

__device__ __forceinline__ float attn_logit(const float* q, const float* k, int hd, float scale) {
	float s = 0.0f;
	for (int c = 0; c < hd; c++) s += q[c] * k[c];
	return s * scale;
}

__global__ void attention(int batch, int seq, int heads, int hd, const float* Q, const float* K, const float* V, const int* lengths,
                          float* out) {
	__shared__ float red[ROW_THREADS];
	const int d = heads * hd;
	const float scale = 1.0f / sqrtf((float)hd);
	for (int blk = blockIdx.x; blk < batch * heads * seq; blk += gridDim.x) {
		const int i = blk % seq, h = (blk / seq) % heads, b = blk / (seq * heads);
		const int L = lengths[b];
		const long long row = (long long)b * seq;
		const float* q = Q + (row + i) * d + h * hd;
		float* o = out + (row + i) * d + h * hd;
		if (i >= L) {  // padding: the whole block takes this branch
			for (int c = threadIdx.x; c < hd; c += blockDim.x) o[c] = 0.0f;
			continue;
		}
		float m = -INFINITY;
		for (int j = threadIdx.x; j < L; j += blockDim.x) m = fmaxf(m, attn_logit(q, K + (row + j) * d + h * hd, hd, scale));
		m = block_max(red, m);
		float s = 0.0f;
		for (int j = threadIdx.x; j < L; j += blockDim.x) s += expf(attn_logit(q, K + (row + j) * d + h * hd, hd, scale) - m);
		s = block_sum(red, s);
		for (int c = threadIdx.x; c < hd; c += blockDim.x) {
			float acc = 0.0f;
			for (int j = 0; j < L; j++)
				acc += expf(attn_logit(q, K + (row + j) * d + h * hd, hd, scale) - m) * V[(row + j) * d + h * hd + c];
			o[c] = acc / s;
		}
	}
}
