// mul: out = x⊙y, or out += x⊙y with accumulate (engine.MulOp; SeedER's
// hop gate h += σ(g)⊙hop). A grid-stride loop over the n elements.
//
// Reference loop: out[i] = x[i]·y[i] (+ out[i]), in float64.
__global__ void mul(int n, const float* x, const float* y, int accumulate, float* out) {
	for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < n; t += (long long)gridDim.x * blockDim.x) {
		const float p = x[t] * y[t];
		out[t] = accumulate ? out[t] + p : p;
	}
}
