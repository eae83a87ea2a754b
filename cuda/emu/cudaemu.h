// cudaemu.h runs CUDA C kernels on the host, unchanged, so that every CI
// run tests gleaner's .cu sources without a GPU: one std::thread per CUDA
// thread of a block, which plays that thread in every block of the grid,
// the blocks one after another (a barrier between them, so a block's
// shared memory is never overwritten while in use); __shared__ variables
// as static storage (launches are therefore serialised); __syncthreads as
// a std::barrier over the block's threads.
#pragma once
#include <barrier>
#include <cmath>
#include <mutex>
#include <thread>
#include <vector>

struct dim3 {
	unsigned x, y, z;
	constexpr dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};

namespace cudaemu {
inline thread_local dim3 tIdx, bIdx;
inline dim3 bDim, gDim;
inline thread_local std::barrier<>* bar = nullptr;
inline std::mutex launchMu;

// launch runs body as the kernel of a grid × block launch.
template <class F>
void launch(dim3 grid, dim3 block, F body) {
	std::lock_guard<std::mutex> hold(launchMu);
	gDim = grid;
	bDim = block;
	const unsigned nt = block.x * block.y * block.z;
	std::barrier<> b(nt);
	std::vector<std::thread> threads;
	threads.reserve(nt);
	for (unsigned t = 0; t < nt; t++)
		threads.emplace_back([&, t] {
			tIdx = dim3(t % block.x, (t / block.x) % block.y, t / (block.x * block.y));
			bar = &b;
			for (unsigned bz = 0; bz < grid.z; bz++)
				for (unsigned by = 0; by < grid.y; by++)
					for (unsigned bx = 0; bx < grid.x; bx++) {
						bIdx = dim3(bx, by, bz);
						body();
						b.arrive_and_wait();  // the block ends for all its threads
					}
		});
	for (auto& th : threads) th.join();
}
}  // namespace cudaemu

#define threadIdx (cudaemu::tIdx)
#define blockIdx (cudaemu::bIdx)
#define blockDim (cudaemu::bDim)
#define gridDim (cudaemu::gDim)
#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __syncthreads() (cudaemu::bar->arrive_and_wait())
