// axpby: out = alpha·x + beta·y over n elements (engine.AxpbyOp), grid-stride.
//
// Reference loop: for i < n: out[i] = alpha*x[i] + beta*y[i].
__global__ void axpby(int n, float alpha, const float* x, float beta, const float* y, float* out) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		out[i] = alpha * x[i] + beta * y[i];
	}
}
