// joint_attention: one head of FuseRAG's joint attention, fused
// (engine.JointAttentionOp): query row i of Q (n × d, row stride ldq)
// attends over the lm memory keys and the lt text keys under one softmax,
// scaled by 1/√d; with causal, text key j is visible to row i when
// j ≤ i + lt − n (memory keys always are). out row i (dv values, stride
// ldout) = Σ_j p_j·V_j over [vm; vt]. Every matrix comes with its row
// stride, so one call reads one head of a [positions, heads·d] KV cache.
// A block per query row (grid-stride over rows): each thread scores keys
// into the row's scratch (n × (lm + lt)), the max and the sum are
// block reductions (rows.cuh; the sum in double), then each thread owns
// output columns: one writer per value, no atomics.
//
// Reference loop: for each query, scores over all visible keys, float64
// softmax, weighted sum of the values.
#include "rows.cuh"

__device__ __forceinline__ const float* jkey(int j, int lm, const float* km, int ldkm, const float* kt, int ldkt) {
	return j < lm ? km + (long long)j * ldkm : kt + (long long)(j - lm) * ldkt;
}

__global__ void joint_attention(int n, int lm, int lt, int d, int dv, const float* q, int ldq, const float* km, int ldkm,
                                const float* vm, int ldvm, const float* kt, int ldkt, const float* vt, int ldvt, float* out,
                                int ldout, int causal, float scale, float* scratch) {
	__shared__ float red[ROW_THREADS];
	__shared__ double redd[ROW_THREADS];
	int w = lm + lt;
	for (int i = blockIdx.x; i < n; i += gridDim.x) {
		const float* qi = q + (long long)i * ldq;
		float* s = scratch + (long long)i * w;
		int visible = causal ? lm + (i + lt - n) + 1 : w; // keys 0 … visible−1
		float m = -INFINITY;
		for (int j = threadIdx.x; j < visible; j += blockDim.x) {
			const float* kj = jkey(j, lm, km, ldkm, kt, ldkt);
			float acc = 0.0f;
			for (int c = 0; c < d; c++) acc += qi[c] * kj[c];
			s[j] = acc * scale;
			m = fmaxf(m, s[j]);
		}
		m = block_max(red, m);
		double z = 0.0;
		for (int j = threadIdx.x; j < visible; j += blockDim.x) {
			s[j] = expf(s[j] - m);
			z += s[j];
		}
		z = block_sum_d(redd, z);
		__syncthreads(); // every thread's s[j] written before any thread reads them all
		float inv = (float)(1.0 / z);
		float* o = out + (long long)i * ldout;
		for (int c = threadIdx.x; c < dv; c += blockDim.x) {
			float acc = 0.0f;
			for (int j = 0; j < visible; j++) {
				const float* vj = j < lm ? vm + (long long)j * ldvm : vt + (long long)(j - lm) * ldvt;
				acc += s[j] * vj[c];
			}
			o[c] = acc * inv;
		}
	}
}
