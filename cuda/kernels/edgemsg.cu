// edge_message: GraphGPS's relation-gated message sum (engine.EdgeMessageOp)
// over edges grouped by destination (ptr, src, feature row erow). A block
// per destination node, a thread per output column: each thread sums its
// column over the node's edges in order, one writer per output value —
// deterministic, no atomics. Edges whose row is rows or beyond (SeedER's
// expander and virtual-node edges) carry no message.
//
// Reference loop, per destination i:
//   Out_i = Σ_{p: erow[p] < rows} M[src[p],:] ⊙ F[erow[p],:]
__global__ void edge_message(int n, int d, int rows, const long long* ptr, const int* src, const int* erow, const float* M,
                             const float* F, float* out) {
	for (int i = blockIdx.x; i < n; i += gridDim.x) {
		for (int c = threadIdx.x; c < d; c += blockDim.x) {
			float acc = 0.0f;
			for (long long p = ptr[i]; p < ptr[i + 1]; p++) {
				const long long r = erow[p];
				if (r < rows) acc += M[(long long)src[p] * d + c] * F[r * d + c];
			}
			out[(long long)i * d + c] = acc;
		}
	}
}
