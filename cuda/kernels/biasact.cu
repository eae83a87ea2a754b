// bias_act: x[r, c] = act(x[r, c] + bias[c]) in place, rows × cols with
// leading dimension ld (engine.BiasActOp); bias may be null. A block per
// row (grid-stride over rows), threads over the columns.
//
// Reference loop: for r, c: v = x[r*ld+c] + (bias ? bias[c] : 0); x[r*ld+c] = act(v).
#include "act.cuh"

__global__ void bias_act(int rows, int cols, int ld, const float* bias, int act, float* x) {
	for (int r = blockIdx.x; r < rows; r += gridDim.x) {
		for (int c = threadIdx.x; c < cols; c += blockDim.x) {
			float v = x[(long long)r * ld + c];
			if (bias) v += bias[c];
			x[(long long)r * ld + c] = act_apply(act, v);
		}
	}
}
