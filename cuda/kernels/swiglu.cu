// swiglu: Llama's gated feed-forward activation (engine.SwiGLUOp): each row
// of x holds [gate | up] (2·cols values) and out[r][j] = silu(gate)·up, with
// silu(g) = g/(1 + e^(−g)). A grid-stride loop over rows × cols.
//
// Reference loop: the sigmoid and the product in float64.
__global__ void swiglu(int rows, int cols, const float* x, float* out) {
	long long n = (long long)rows * cols;
	for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < n; t += (long long)gridDim.x * blockDim.x) {
		long long r = t / cols;
		int j = (int)(t % cols);
		double g = x[r * 2 * cols + j], u = x[r * 2 * cols + cols + j];
		out[t] = (float)(g / (1.0 + exp(-g)) * u);
	}
}
