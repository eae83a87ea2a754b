// f32_to_bf16: rounds n floats to bfloat16 (the upper 16 bits of the
// float32, rounded to nearest, ties to even; NaN stays a quiet NaN) for
// the bf16 GEMM path (engine.PrecisionBF16, cublasGemmEx with float32
// accumulation). Integer arithmetic on the bits, so the host emulation
// computes exactly what the GPU does. A grid-stride loop.
//
// Reference loop: bits = float32 bits of x; y = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16.
__global__ void f32_to_bf16(long long n, const float* x, unsigned short* y) {
	for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < n; t += (long long)gridDim.x * blockDim.x) {
		union {
			float f;
			unsigned int u;
		} v;
		v.f = x[t];
		if ((v.u & 0x7F800000u) == 0x7F800000u && (v.u & 0x007FFFFFu) != 0) {
			y[t] = (unsigned short)((v.u >> 16) | 0x0040u);
		} else {
			y[t] = (unsigned short)((v.u + 0x7FFFu + ((v.u >> 16) & 1u)) >> 16);
		}
	}
}
