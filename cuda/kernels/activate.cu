// activate: out[i] = act(x[i]) over n elements (engine.ActivateOp), grid-stride.
//
// Reference loop: gelu 0.5·x·(1 + erf(x/√2)), tanh, relu max(x, 0).
#include "act.cuh"

__global__ void activate(int act, int n, const float* x, float* out) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		out[i] = act_apply(act, x[i]);
	}
}
