// A kernel that exercises cudaemu.h's warp shuffles and atomics (the
// gleaner kernels reduce rows by shuffles and, for determinism, use no
// atomics), so the emulation itself is tested against CUDA's semantics.
#include "cudaemu.h"

constexpr int kShuffles = 8;

// warp_selftest: per thread t (linear in a 1- or 2-D block) of every
// block, out[(block·threads + t)·8 + i] holds the i-th shuffle of v = lane·10
// + warp + 1000·block, and xsum a butterfly sum in double; counters gets
// (atomicAdd of 1 by every thread, atomicMax of the global thread ids, CAS
// winners, the CAS word) and fsum the float atomicAdd of 0.5 by every
// thread.
__global__ void warp_selftest(int* out, int* counters, float* fsum, double* xsum) {
	const int nt = blockDim.x * blockDim.y, t = threadIdx.y * blockDim.x + threadIdx.x;
	const int l = t % warpSize, w = t / warpSize, v = l * 10 + w + 1000 * int(blockIdx.x);
	int* o = out + ((long long)blockIdx.x * nt + t) * kShuffles;
	o[0] = __shfl_sync(0xffffffffu, v, 3);           // broadcast from lane 3
	o[1] = __shfl_sync(0xffffffffu, v, 3, 8);        // lane 3 of each group of 8
	o[2] = __shfl_down_sync(0xffffffffu, v, 5, 16);  // 5 lanes down within 16
	o[3] = __shfl_up_sync(0xffffffffu, v, 2);        // 2 lanes up
	o[4] = __shfl_xor_sync(0xffffffffu, v, 8, 8);    // a later group: own value
	o[5] = __shfl_xor_sync(0xffffffffu, v, 1);       // neighbour
	o[6] = __shfl_up_sync(0xffffffffu, v, 3, 8);     // 3 lanes up within 8
	o[7] = __shfl_sync(0xffffffffu, v, -1);          // source lane −1: lane 31 (modulo the width)
	double s = double(l) + 0.25 + blockIdx.x;        // butterfly: every lane of a full warp the warp's sum
	for (int m = warpSize / 2; m > 0; m >>= 1) s += __shfl_xor_sync(0xffffffffu, s, m);
	__syncwarp();
	xsum[(long long)blockIdx.x * nt + t] = s;
	const int id = blockIdx.x * nt + t;
	atomicAdd(&counters[0], 1);
	atomicMax(&counters[1], id);
	if (atomicCAS(&counters[3], -1, id) == -1) atomicAdd(&counters[2], 1);
	atomicAdd(fsum, 0.5f);
}

extern "C" void emu_warp_selftest(unsigned grid, unsigned bx, unsigned by, int* out, int* counters, float* fsum, double* xsum) {
	cudaemu::launch(dim3(grid), dim3(bx, by), [=] { warp_selftest(out, counters, fsum, xsum); });
}
