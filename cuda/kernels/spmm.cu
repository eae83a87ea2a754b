// spmm: y = A·x for A in CSR (ptr, idx, val; val null means ones), x cols×d
// and y rows×d row-major (engine.SpMMOp). A block per row, threads over d;
// each output element has one writer, so no atomics.
//
// Reference loop: y[i,:] = Σ_{p ∈ row i} val[p]·x[idx[p],:].
__global__ void spmm(int rows, int d, const long long* ptr, const int* idx, const float* val, const float* x, float* y) {
	for (int r = blockIdx.x; r < rows; r += gridDim.x) {
		for (int j = threadIdx.x; j < d; j += blockDim.x) {
			float acc = 0.0f;
			for (long long p = ptr[r]; p < ptr[r + 1]; p++)
				acc += (val ? val[p] : 1.0f) * x[(long long)idx[p] * d + j];
			y[(long long)r * d + j] = acc;
		}
	}
}
