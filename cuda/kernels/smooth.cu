// smooth: GRanker's Laplacian smoothing fused in one kernel (engine.SmoothOp):
// over the subgraph of m retrieved nodes (CSR ptr/idx, global degrees deg),
// P_ij = (1/deg_j) / Σ_{j' ∈ row i} 1/deg_j', out = (1−α)·H + α·P·H; a row
// without neighbours gets P·H = H with keep, else 0 (the literal formula).
// A block per row, threads over the d latent columns; out must not alias H.
//
// Reference loop: build P densely in float64, H' = (1−α)H + αPH.
__global__ void smooth(int m, int d, const long long* ptr, const int* idx, const float* deg, const float* H, float alpha, int keep,
                       float* out) {
	for (int i = blockIdx.x; i < m; i += gridDim.x) {
		const long long lo = ptr[i], hi = ptr[i + 1];
		float wsum = 0.0f;
		for (long long p = lo; p < hi; p++) wsum += 1.0f / deg[idx[p]];
		for (int c = threadIdx.x; c < d; c += blockDim.x) {
			const float h = H[(long long)i * d + c];
			float ph = keep ? h : 0.0f;
			if (hi > lo) {
				ph = 0.0f;
				for (long long p = lo; p < hi; p++) ph += ((1.0f / deg[idx[p]]) / wsum) * H[(long long)idx[p] * d + c];
			}
			out[(long long)i * d + c] = (1.0f - alpha) * h + alpha * ph;
		}
	}
}
