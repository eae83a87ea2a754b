// cudaemu.h runs CUDA C kernels on the host, unchanged, so that every CI
// run tests gleaner's .cu sources without a GPU: one std::thread per CUDA
// thread of a block, which plays that thread in every block of the grid,
// the blocks one after another (a barrier between them, so a block's
// shared memory is never overwritten while in use); __shared__ variables
// as static storage (launches are therefore serialised); __syncthreads as
// a std::barrier over the block's threads. Warps are the block's threads
// 32 by 32 in linear order: a warp shuffle writes each lane's value to
// its warp's slots, meets the warp's other lanes at a barrier, reads the
// source lane's slot and meets them again, so every lane of the warp must
// take part: the mask must be full (anything else aborts), and a lane that
// has returned must not be waited for (CUDA lets exited lanes drop out;
// here the others would wait for ever — no gleaner kernel shuffles after
// an early return). __syncwarp is that barrier. Atomics run under one
// mutex, so they are atomic with respect to each other, as on the GPU;
// they take the types CUDA's do.
#pragma once
#define CUDAEMU 1
#include <barrier>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

struct dim3 {
	unsigned x, y, z;
	constexpr dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};

namespace cudaemu {
constexpr int kWarp = 32;

// warp is one warp's exchange: a slot per lane and a barrier over its
// lanes (fewer than 32 in a block's last, partial warp).
struct warp {
	unsigned long long slot[kWarp];
	int lanes;
	std::barrier<> bar;
	explicit warp(int n) : lanes(n), bar(n) {}
};

inline thread_local dim3 tIdx, bIdx;
inline dim3 bDim, gDim;
inline thread_local std::barrier<>* bar = nullptr;
inline thread_local warp* myWarp = nullptr;
inline thread_local int lane = 0;
inline std::mutex launchMu, atomicMu;

// fail reports a kernel's misuse of the emulated device and aborts (a
// GPU would give undefined results).
[[noreturn]] inline void fail(const char* why) {
	std::fprintf(stderr, "cudaemu: %s\n", why);
	std::abort();
}

// fullMask refuses a shuffle mask that leaves lanes out.
inline void fullMask(unsigned mask) {
	if (mask != 0xffffffffu) fail("a warp shuffle with a partial mask (the emulation runs full warps only)");
}

// shuffle returns lane src's v (the caller's own for a lane outside the
// warp's), every lane of the warp calling it together.
template <class T>
T shuffle(T v, int src) {
	static_assert(sizeof(T) <= sizeof(unsigned long long), "shuffle of a value wider than 8 bytes");
	warp& w = *myWarp;
	std::memcpy(&w.slot[lane], &v, sizeof(T));
	w.bar.arrive_and_wait();
	T out = v;
	if (src >= 0 && src < w.lanes) std::memcpy(&out, &w.slot[src], sizeof(T));
	w.bar.arrive_and_wait();  // every lane has read before any slot is written again
	return out;
}

// group is the first lane of the caller's group of width lanes.
inline int group(int width) { return lane & ~(width - 1); }

// launch runs body as the kernel of a grid × block launch.
template <class F>
void launch(dim3 grid, dim3 block, F body) {
	std::lock_guard<std::mutex> hold(launchMu);
	gDim = grid;
	bDim = block;
	const unsigned nt = block.x * block.y * block.z;
	std::barrier<> b(nt);
	std::vector<std::unique_ptr<warp>> warps;
	for (unsigned w = 0; w < nt; w += kWarp) warps.push_back(std::make_unique<warp>(int(std::min<unsigned>(kWarp, nt - w))));
	std::vector<std::thread> threads;
	threads.reserve(nt);
	for (unsigned t = 0; t < nt; t++)
		threads.emplace_back([&, t] {
			tIdx = dim3(t % block.x, (t / block.x) % block.y, t / (block.x * block.y));
			bar = &b;
			myWarp = warps[t / kWarp].get();
			lane = int(t % kWarp);
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
#define warpSize (cudaemu::kWarp)
#define __syncwarp(...) (cudaemu::myWarp->bar.arrive_and_wait())

// Warp shuffles (full mask only; lane offsets use their low five bits, as
// the hardware's shfl does).
template <class T>
T __shfl_sync(unsigned mask, T v, int src, int width = warpSize) {
	cudaemu::fullMask(mask);
	return cudaemu::shuffle(v, cudaemu::group(width) + (src & (width - 1)));
}
template <class T>
T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = warpSize) {
	cudaemu::fullMask(mask);
	const int d = int(delta & 31), in = (cudaemu::lane & (width - 1)) + d;
	return cudaemu::shuffle(v, in < width ? cudaemu::lane + d : cudaemu::lane);
}
template <class T>
T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = warpSize) {
	cudaemu::fullMask(mask);
	const int d = int(delta & 31), in = (cudaemu::lane & (width - 1)) - d;
	return cudaemu::shuffle(v, in >= 0 ? cudaemu::lane - d : cudaemu::lane);
}
template <class T>
T __shfl_xor_sync(unsigned mask, T v, int laneMask, int width = warpSize) {
	cudaemu::fullMask(mask);
	const int src = cudaemu::lane ^ (laneMask & 31);  // a later group's lane gives the caller its own value
	return cudaemu::shuffle(v, (src & ~(width - 1)) > cudaemu::group(width) ? cudaemu::lane : src);
}

// Atomics: the old value, as CUDA's, for the types CUDA has each one for.
namespace cudaemu {
template <class T, class... U>
constexpr bool oneOf = (std::is_same_v<T, U> || ...);

// atomically replaces *p by next(*p) under the atomics' lock and returns
// the old value.
template <class T, class F>
T atomically(T* p, F next) {
	std::lock_guard<std::mutex> hold(atomicMu);
	T old = *p;
	*p = next(old);
	return old;
}
}  // namespace cudaemu

template <class T>
T atomicAdd(T* p, std::type_identity_t<T> v) {
	static_assert(cudaemu::oneOf<T, int, unsigned, unsigned long long, float, double>, "atomicAdd: no such CUDA overload");
	return cudaemu::atomically(p, [&](T old) { return T(old + v); });
}
template <class T>
T atomicMax(T* p, std::type_identity_t<T> v) {
	static_assert(cudaemu::oneOf<T, int, unsigned, unsigned long long, long long>, "atomicMax: no such CUDA overload");
	return cudaemu::atomically(p, [&](T old) { return v > old ? v : old; });
}
template <class T>
T atomicMin(T* p, std::type_identity_t<T> v) {
	static_assert(cudaemu::oneOf<T, int, unsigned, unsigned long long, long long>, "atomicMin: no such CUDA overload");
	return cudaemu::atomically(p, [&](T old) { return v < old ? v : old; });
}
template <class T>
T atomicExch(T* p, std::type_identity_t<T> v) {
	static_assert(cudaemu::oneOf<T, int, unsigned, unsigned long long, float>, "atomicExch: no such CUDA overload");
	return cudaemu::atomically(p, [&](T) { return v; });
}
template <class T>
T atomicCAS(T* p, std::type_identity_t<T> compare, std::type_identity_t<T> v) {
	static_assert(cudaemu::oneOf<T, int, unsigned, unsigned long long, unsigned short>, "atomicCAS: no such CUDA overload");
	return cudaemu::atomically(p, [&](T old) { return old == compare ? v : old; });
}
