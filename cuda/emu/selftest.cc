// A kernel that exercises cudaemu.h's warp shuffles and atomics (the
// gleaner kernels reduce rows by shuffles and, for determinism, use no
// atomics), so the emulation itself is tested against CUDA's semantics.
#include "cudaemu.h"

// warp_selftest: block of 64 threads (two warps), grid blocks; per thread t
// of block 0, out[t*6 + i] holds the i-th shuffle result; counters gets
// (atomicAdd of 1 by every thread, atomicMax of the global thread ids,
// CAS winners) and fsum the float atomicAdd of 0.5 by every thread.
__global__ void warp_selftest(int* out, int* counters, float* fsum, float* xsum) {
	const int t = threadIdx.x, l = t % warpSize, w = t / warpSize;
	const int v = l * 10 + w;
	const int r0 = __shfl_sync(0xffffffffu, v, 3);            // broadcast from lane 3
	const int r1 = __shfl_sync(0xffffffffu, v, 3, 8);         // lane 3 of each group of 8
	const int r2 = __shfl_down_sync(0xffffffffu, v, 5, 16);   // 5 lanes down within 16
	const int r3 = __shfl_up_sync(0xffffffffu, v, 2);         // 2 lanes up
	const int r4 = __shfl_xor_sync(0xffffffffu, v, 8, 8);     // a later group: own value
	const int r5 = __shfl_xor_sync(0xffffffffu, v, 1);        // neighbour
	float s = float(l) + 0.25f;                               // butterfly sum: every lane the warp's sum
	for (int m = warpSize / 2; m > 0; m >>= 1) s += __shfl_xor_sync(0xffffffffu, s, m);
	__syncwarp();
	if (blockIdx.x == 0) {
		int* o = out + t * 6;
		o[0] = r0, o[1] = r1, o[2] = r2, o[3] = r3, o[4] = r4, o[5] = r5;
		xsum[t] = s;
	}
	const int id = blockIdx.x * blockDim.x + t;
	atomicAdd(&counters[0], 1);
	atomicMax(&counters[1], id);
	if (atomicCAS(&counters[3], -1, id) == -1) atomicAdd(&counters[2], 1);
	atomicAdd(fsum, 0.5f);
}

extern "C" void emu_warp_selftest(unsigned grid, int* out, int* counters, float* fsum, float* xsum) {
	cudaemu::launch(dim3(grid), dim3(64), [=] { warp_selftest(out, counters, fsum, xsum); });
}
