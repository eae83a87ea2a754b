// Package cuda is gleaner's CUDA backend. The kernels are CUDA C in
// cuda/kernels (one op per file, each with its reference loop), compiled to
// PTX by nvcc (cuda/ptx, embedded; make cuda-check) and tested on every CI
// run by host emulation (cuda/emu, backend "cuda-emu"). The backend that
// runs them on a GPU through gorgonia.org/cu (backend.go, memory.go,
// ops*.go, cublas.go, staging.go) is behind the `cuda` build tag, because gorgonia.org/cu exits the process
// at init on machines without a GPU. launch.go holds the launch
// configurations both use; pool.go the caching device allocator (a free
// list per stream), queues.go the streams handed to queue views, mirror.go
// the host mirror of index buffers — device-agnostic, so tested on the CPU.
package cuda
