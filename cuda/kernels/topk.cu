// topk: the k best entries of each row of a rows × cols score matrix, best
// first, ties by lower column, NaN never selected; missing ranks are index
// −1 and score −Inf (engine.TopKOp). A block per row; round t selects, by a
// block-wide argmax, the best entry that comes after round t−1's pick in
// (score descending, column ascending) order — O(k·cols) per row, simple
// and exact. The exact dense top-k (FlatIP) is a GEMM followed by this.
//
// Reference loop: sort the row's (column, score) by score descending then
// column, drop NaN, keep k.
#include <climits>
#include "rows.cuh"

// better reports whether (s, i) ranks before (t, j); j < 0 is nothing.
__device__ __forceinline__ bool topk_better(float s, int i, float t, int j) {
	return i >= 0 && (j < 0 || s > t || (s == t && i < j));
}

__global__ void topk(int rows, int cols, int k, const float* scores, int* out_idx, float* out_score) {
	__shared__ float bs[ROW_THREADS];
	__shared__ int bi[ROW_THREADS];
	for (int r = blockIdx.x; r < rows; r += gridDim.x) {
		const float* s = scores + (long long)r * cols;
		float ps = INFINITY;
		int pi = -1;
		for (int t = 0; t < k; t++) {
			float best = -INFINITY;
			int bidx = -1;
			for (int c = threadIdx.x; c < cols; c += blockDim.x) {
				float v = s[c];
				if (v != v) continue;  // NaN never ranks
				bool after = v < ps || (v == ps && c > pi);
				if (after && topk_better(v, c, best, bidx)) {
					best = v;
					bidx = c;
				}
			}
			bs[threadIdx.x] = best;
			bi[threadIdx.x] = bidx;
			__syncthreads();
			for (int w = blockDim.x / 2; w > 0; w >>= 1) {
				if (threadIdx.x < w && topk_better(bs[threadIdx.x + w], bi[threadIdx.x + w], bs[threadIdx.x], bi[threadIdx.x])) {
					bs[threadIdx.x] = bs[threadIdx.x + w];
					bi[threadIdx.x] = bi[threadIdx.x + w];
				}
				__syncthreads();
			}
			best = bs[0];
			bidx = bi[0];
			__syncthreads();
			if (threadIdx.x == 0) {
				out_idx[(long long)r * k + t] = bidx;
				out_score[(long long)r * k + t] = bidx < 0 ? -INFINITY : best;
			}
			if (bidx < 0) {  // nothing left: the later ranks stay empty
				ps = -INFINITY;
				pi = INT_MAX;
			} else {
				ps = best;
				pi = bidx;
			}
		}
	}
}
