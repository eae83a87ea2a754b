//go:build cuda

package cuda

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdint.h>

// cuBLAS is opened at run time (dlopen), not linked: a GPU machine with
// CUDA 12's libcublas.so.12 and one with 11's both run the same binary,
// and one without cuBLAS still runs gleaner's own GEMM kernel. The entry
// points below have had the same ABI since CUDA 11.

typedef int (*gl_create_t)(void**);
typedef int (*gl_destroy_t)(void*);
typedef int (*gl_set_stream_t)(void*, void*);
typedef int (*gl_sgemm_t)(void*, int, int, int, int, int, const float*, const float*, int, const float*, int, const float*,
                          float*, int);
typedef int (*gl_sgemm_batched_t)(void*, int, int, int, int, int, const float*, const float*, int, long long, const float*,
                                  int, long long, const float*, float*, int, long long, int);
typedef int (*gl_gemm_ex_t)(void*, int, int, int, int, int, const void*, const void*, int, int, const void*, int, int,
                            const void*, void*, int, int, int, int);

static void* gl_lib;
static gl_create_t gl_create;
static gl_destroy_t gl_destroy;
static gl_set_stream_t gl_set_stream_fn;
static gl_sgemm_t gl_sgemm_fn;
static gl_sgemm_batched_t gl_sgemm_batched_fn;
static gl_gemm_ex_t gl_gemm_ex_fn;

// gl_cublas_open loads libcublas; NULL on success, else why not. Go calls
// it once (cublasOnce).
static const char* gl_cublas_open(void) {
	static const char* names[] = {"libcublas.so.12", "libcublas.so.11", 0}; // not a bare .so: CUDA 10's GemmEx differs
	if (gl_lib) return 0;
	for (int i = 0; names[i] && !gl_lib; i++) gl_lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	if (!gl_lib) return "libcublas.so.12/.11 not found";
	gl_create = (gl_create_t)dlsym(gl_lib, "cublasCreate_v2");
	gl_destroy = (gl_destroy_t)dlsym(gl_lib, "cublasDestroy_v2");
	gl_set_stream_fn = (gl_set_stream_t)dlsym(gl_lib, "cublasSetStream_v2");
	gl_sgemm_fn = (gl_sgemm_t)dlsym(gl_lib, "cublasSgemm_v2");
	gl_sgemm_batched_fn = (gl_sgemm_batched_t)dlsym(gl_lib, "cublasSgemmStridedBatched");
	gl_gemm_ex_fn = (gl_gemm_ex_t)dlsym(gl_lib, "cublasGemmEx");
	if (!gl_create || !gl_destroy || !gl_set_stream_fn || !gl_sgemm_fn || !gl_sgemm_batched_fn || !gl_gemm_ex_fn) {
		dlclose(gl_lib);
		gl_lib = 0;
		return "libcublas lacks an entry point gleaner uses";
	}
	return 0;
}

static int gl_cublas_create(uintptr_t* h) {
	void* p = 0;
	int st = gl_create(&p);
	*h = (uintptr_t)p;
	return st;
}

static int gl_cublas_destroy(uintptr_t h) { return gl_destroy((void*)h); }

static int gl_cublas_set_stream(uintptr_t h, uintptr_t stream) { return gl_set_stream_fn((void*)h, (void*)stream); }

static int gl_sgemm(uintptr_t h, int ta, int tb, int m, int n, int k, float alpha, uint64_t a, int lda, uint64_t b, int ldb,
                    float beta, uint64_t c, int ldc) {
	return gl_sgemm_fn((void*)h, ta, tb, m, n, k, &alpha, (const float*)a, lda, (const float*)b, ldb, &beta, (float*)c, ldc);
}

static int gl_sgemm_batched(uintptr_t h, int ta, int tb, int m, int n, int k, float alpha, uint64_t a, int lda, long long sa,
                            uint64_t b, int ldb, long long sb, float beta, uint64_t c, int ldc, long long sc, int batch) {
	return gl_sgemm_batched_fn((void*)h, ta, tb, m, n, k, &alpha, (const float*)a, lda, sa, (const float*)b, ldb, sb, &beta,
	                           (float*)c, ldc, sc, batch);
}

static int gl_gemm_ex(uintptr_t h, int ta, int tb, int m, int n, int k, float alpha, uint64_t a, int atype, int lda,
                      uint64_t b, int btype, int ldb, float beta, uint64_t c, int ldc, int compute) {
	// CUDA_R_32F = 0 for C; CUBLAS_GEMM_DEFAULT = -1
	return gl_gemm_ex_fn((void*)h, ta, tb, m, n, k, &alpha, (const void*)a, atype, lda, (const void*)b, btype, ldb, &beta,
	                     (void*)c, 0, ldc, compute, -1);
}
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"unsafe"

	"github.com/gleaner-rag/gleaner/engine"
)

// cuBLAS constants (cublas_api.h, library_types.h).
const (
	cublasOpN            = 0
	cublasOpT            = 1
	cudaR32F             = 0
	cudaR16BF            = 14
	cublasCompute32F     = 68
	cublasCompute32FTF32 = 77
)

// cublasOnce loads the library once per process: the C state above is
// not guarded, and two backends may open at once.
var (
	cublasOnce sync.Once
	cublasErr  error
)

func loadCuBLAS() error {
	cublasOnce.Do(func() {
		if why := C.gl_cublas_open(); why != nil {
			cublasErr = fmt.Errorf("cuda: cuBLAS: %s", C.GoString(why))
		}
	})
	return cublasErr
}

// blasHandle is a cuBLAS handle created on the backend's context for one
// stream (blasFor); every call runs on the context's thread (cu.Ctx.Do),
// under the backend's mutex, in order with that stream's kernels.
type blasHandle struct{ h C.uintptr_t }

// openCuBLAS loads cuBLAS and creates a handle on b's context.
func openCuBLAS(b *Backend) (*blasHandle, error) {
	if err := loadCuBLAS(); err != nil {
		return nil, err
	}
	var bh *blasHandle
	err := b.ctx.Do(func() error {
		var h C.uintptr_t
		if st := C.gl_cublas_create(&h); st != 0 {
			return fmt.Errorf("cuda: cublasCreate: status %d", int(st))
		}
		bh = &blasHandle{h: h}
		return nil
	})
	return bh, err
}

// blasFor returns b's stream's cuBLAS handle, made and bound to the
// stream on first use (a handle per stream: cuBLAS picks its workspace per
// handle, and one shared by streams can give bitwise different results).
// Call under b.mu.
func (b *Backend) blasFor() (*blasHandle, error) {
	if bh, ok := b.blas[b.q]; ok {
		if bh == nil {
			return nil, errNoHandle
		}
		return bh, nil
	}
	bh, err := openCuBLAS(b)
	if err != nil {
		b.blas[b.q] = nil // remembered: this stream's GEMMs run gemm.cu
		return nil, err
	}
	stream := C.uintptr_t(uintptr(unsafe.Pointer(b.stream().C())))
	err = b.ctx.Do(func() error {
		if st := C.gl_cublas_set_stream(bh.h, stream); st != 0 {
			return fmt.Errorf("cuda: cublasSetStream: status %d", int(st))
		}
		return nil
	})
	if err != nil {
		bh.close(b)
		b.blas[b.q] = nil
		return nil, err
	}
	b.blas[b.q] = bh
	return bh, nil
}

// errNoHandle: a stream whose cuBLAS handle could not be made.
var errNoHandle = errors.New("cuda: no cuBLAS handle for this stream")

// streamHasBLAS says whether b's stream has (or can make) a cuBLAS handle.
func (b *Backend) streamHasBLAS() bool {
	return b.call(func() error { _, err := b.blasFor(); return err }) == nil
}

func (bh *blasHandle) close(b *Backend) {
	b.ctx.Do(func() error { C.gl_cublas_destroy(bh.h); return nil }) // at Close: nothing to do on failure
}

// rowMajor maps a row-major C (M×N) = op(A)·op(B) onto column-major
// cuBLAS: the same memory read column-major is Cᵀ = op(B)ᵀ·op(A)ᵀ, so
// cuBLAS gets B first, with the operations as given, and M, N swapped.
type rowMajor struct {
	opA, opB      C.int
	m, n, k       C.int
	lda, ldb, ldc C.int
}

func gemmShape(op engine.GemmOp, lda, ldb, ldc int) rowMajor {
	r := rowMajor{opA: cublasOpN, opB: cublasOpN, m: C.int(op.M), n: C.int(op.N), k: C.int(op.K), lda: C.int(lda), ldb: C.int(ldb), ldc: C.int(ldc)}
	if op.TransA {
		r.opA = cublasOpT
	}
	if op.TransB {
		r.opB = cublasOpT
	}
	return r
}

// blasGemm runs one GEMM (or a strided batch) through cuBLAS at op's
// precision: SGEMM for float32, GemmEx with TF32 compute for TF32, and
// GemmEx on bfloat16 copies of A and B (a16, b16, made by bf16.cu) for
// bfloat16, accumulating in float32 in every case.
func (b *Backend) blasGemm(op engine.GemmOp, r rowMajor, a, bm, c, a16, b16 devArg, batch, sa, sb, sc int) error {
	return b.call(func() error {
		bh, err := b.blasFor()
		if err != nil {
			return err
		}
		return b.ctx.Do(func() error {
			var st C.int
			al, be := C.float(op.Alpha), C.float(op.Beta)
			switch {
			case batch > 1:
				st = C.gl_sgemm_batched(bh.h, r.opB, r.opA, r.n, r.m, r.k, al, C.uint64_t(bm), r.ldb, C.longlong(sb),
					C.uint64_t(a), r.lda, C.longlong(sa), be, C.uint64_t(c), r.ldc, C.longlong(sc), C.int(batch))
			case op.Precision == engine.PrecisionTF32:
				st = C.gl_gemm_ex(bh.h, r.opB, r.opA, r.n, r.m, r.k, al, C.uint64_t(bm), cudaR32F, r.ldb,
					C.uint64_t(a), cudaR32F, r.lda, be, C.uint64_t(c), r.ldc, cublasCompute32FTF32)
			case op.Precision == engine.PrecisionBF16:
				st = C.gl_gemm_ex(bh.h, r.opB, r.opA, r.n, r.m, r.k, al, C.uint64_t(b16), cudaR16BF, r.ldb,
					C.uint64_t(a16), cudaR16BF, r.lda, be, C.uint64_t(c), r.ldc, cublasCompute32F)
			default:
				st = C.gl_sgemm(bh.h, r.opB, r.opA, r.n, r.m, r.k, al, C.uint64_t(bm), r.ldb, C.uint64_t(a), r.lda, be, C.uint64_t(c), r.ldc)
			}
			if st != 0 {
				return fmt.Errorf("cuda: cuBLAS gemm (%s, batch %d): status %d", op.Precision, batch, int(st))
			}
			return nil
		})
	})
}

// toBF16 rounds n floats at x into a fresh bfloat16 scratch buffer
// (bf16.cu); the caller frees it.
func (b *Backend) toBF16(x devArg, n int) (*buffer, error) {
	y, err := b.scratch(engine.F32, (n+1)/2) // two bfloat16 per float32 slot, all written by bf16.cu
	if err != nil {
		return nil, err
	}
	if err := b.launch("bf16", rows(Elementwise(n)), int64(n), x, devArg(y.ptr)); err != nil {
		b.Free(y)
		return nil, err
	}
	return y, nil
}

// rounded is a bfloat16 copy of a GEMM operand: kept with a bound
// operand, scratch otherwise.
type rounded struct {
	buf  *buffer
	kept bool
}

// done frees a scratch copy once the GEMM is submitted (its stream
// orders the block's reuse after it).
func (r rounded) done(b *Backend) {
	if !r.kept {
		b.Free(r.buf)
	}
}

// bf16Of rounds n floats of operand x from element off (at p) to
// bfloat16. A bound operand (a weight: read-only, so its rounding cannot
// go stale) is rounded once and the copy kept until x is freed; any other
// is rounded into scratch for this GEMM.
func (b *Backend) bf16Of(x engine.Buffer, off int, p devArg, n int) (rounded, error) {
	d, _ := x.(*buffer) // checked by arg
	if d == nil || !d.bound {
		y, err := b.toBF16(p, n)
		return rounded{buf: y}, err
	}
	d.derived.mu.Lock()
	defer d.derived.mu.Unlock()
	key := [2]int{off, n}
	if y, ok := d.derived.bf16[key]; ok {
		return rounded{buf: y, kept: true}, nil
	}
	y, err := b.toBF16(p, n)
	if err == nil && b.q != 0 { // other streams will read the copy: let it land first
		err = b.waitStream(context.Background())
	}
	if err != nil {
		if y != nil {
			b.Free(y)
		}
		return rounded{}, err
	}
	// Freed with the weight, maybe while other streams still read it: the
	// default stream's free list reuses it only after every stream's work.
	y.q = 0
	if d.derived.bf16 == nil {
		d.derived.bf16 = map[[2]int]*buffer{}
	}
	d.derived.bf16[key] = y
	return rounded{buf: y, kept: true}, nil
}

// useBLAS says whether op (batch matrices, leading dimensions resolved)
// goes to cuBLAS: not without a handle, not for K = 0 (cuBLAS wants
// leading dimensions ≥ 1), not for a batch with an epilogue (gemm.cu
// fuses it per matrix), and not for sizes past cuBLAS's 32-bit ints
// (gemm.cu's launch refuses those with an error).
func (b *Backend) useBLAS(op engine.GemmOp, batch, lda, ldb, ldc int) bool {
	for _, v := range []int{op.M, op.N, op.K, lda, ldb, ldc, batch} {
		if v > math.MaxInt32 {
			return false
		}
	}
	return b.blas != nil && op.K > 0 && (batch == 1 || (op.Bias == nil && op.Act == engine.ActNone))
}

// gemmCuBLAS runs op through cuBLAS (g: op's shape with the leading
// dimensions resolved), then its bias/activation epilogue by biasact.cu.
func (b *Backend) gemmCuBLAS(op engine.GemmOp, lda, ldb, ldc int, a, bm, c, bias devArg, batch, sa, sb, sc int) error {
	var a16, b16 devArg
	if batch == 1 && op.Precision == engine.PrecisionBF16 {
		ar, ac := op.M, op.K
		if op.TransA {
			ar, ac = ac, ar
		}
		br, bc := op.K, op.N
		if op.TransB {
			br, bc = bc, br
		}
		x, err := b.bf16Of(op.A, op.OffA, a, (ar-1)*lda+ac)
		if err != nil {
			return err
		}
		defer x.done(b)
		y, err := b.bf16Of(op.B, op.OffB, bm, (br-1)*ldb+bc)
		if err != nil {
			return err
		}
		defer y.done(b)
		a16, b16 = devArg(x.buf.ptr), devArg(y.buf.ptr)
	}
	if err := b.blasGemm(op, gemmShape(op, lda, ldb, ldc), a, bm, c, a16, b16, batch, sa, sb, sc); err != nil {
		return err
	}
	if op.Bias == nil && op.Act == engine.ActNone {
		return nil
	}
	return b.launch("biasact", rows(Rows(op.M)), op.M, op.N, ldc, bias, int(op.Act), c)
}
