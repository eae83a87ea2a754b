// copy_rows: out[dst[i]] = x[src[i]], or += with add (engine.CopyRowsOp):
// SeedER's embedding lookups and virtual-node rows. src or dst null means
// the identity; a negative src[i] writes zeros (nothing with add). The host
// checked that destinations are distinct, so a block per move with threads
// over the columns gives every output value one writer.
//
// Reference loop: for each move i and column j, out[dst[i]][j] (+)= x[src[i]][j].
__global__ void copy_rows(int n, int cols, const float* x, const int* src, const int* dst, int add, float* out) {
	for (int i = blockIdx.x; i < n; i += gridDim.x) {
		const long long s = src ? src[i] : i, d = dst ? dst[i] : i;
		for (int j = threadIdx.x; j < cols; j += blockDim.x) {
			float* o = out + d * cols + j;
			if (s < 0) {
				if (!add) *o = 0.0f;
			} else {
				const float v = x[s * cols + j];
				*o = add ? *o + v : v;
			}
		}
	}
}
