// rope: rotary position embeddings in place (engine.RoPEOp): for row r
// (position pos0 + r), head h and i < head_dim/2, the pair (i, i +
// head_dim/2) of that head rotates by the angle (pos0 + r)·inv_freq[i] —
// HuggingFace's rotate_half layout. A grid-stride loop over rows × heads ×
// head_dim/2 pairs; each thread owns one pair, so there is one writer per
// value.
//
// Reference loop: the angle, its sine and cosine and the rotation in
// float64.
__global__ void rope(int rows, int heads, int head_dim, int ld, int pos0, const float* inv_freq, float* x) {
	int half = head_dim / 2;
	long long n = (long long)rows * heads * half;
	for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < n; t += (long long)gridDim.x * blockDim.x) {
		int i = (int)(t % half);
		long long rh = t / half;
		int h = (int)(rh % heads);
		int r = (int)(rh / heads);
		double a = (double)(pos0 + r) * (double)inv_freq[i];
		double s = sin(a), c = cos(a);
		float* p = x + (long long)r * ld + (long long)h * head_dim;
		double x1 = p[i], x2 = p[i + half];
		p[i] = (float)(x1 * c - x2 * s);
		p[i + half] = (float)(x2 * c + x1 * s);
	}
}
