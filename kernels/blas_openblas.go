//go:build cgo && !purego

package kernels

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>

typedef void (*sgemm_fn)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*, int);
typedef void (*setthreads_fn)(int);
typedef char* (*corename_fn)(void);

static sgemm_fn gl_sgemm_ptr;
static corename_fn gl_corename_ptr;

// gl_blas_open loads an OpenBLAS shared library without linking against it,
// so gleaner builds and runs where the library is absent. OpenBLAS's idle
// threads spin for 2^28 cycles after each call before they sleep: with a
// GEMM per query they never sleep, and hold a core the Go scheduler needs
// (measured: 15 of 35 CPU-seconds spent spinning in a linearrag run on 2
// cores). Unless the user set it, the timeout is cut to 2^4 cycles; the
// library reads it when loaded (so not if the process had loaded it already).
static int gl_blas_open(const char* path, int threads) {
	setenv("OPENBLAS_THREAD_TIMEOUT", "4", 0);
	void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) return 0;
	setthreads_fn st = (setthreads_fn)dlsym(h, "openblas_set_num_threads");
	sgemm_fn f = (sgemm_fn)dlsym(h, "cblas_sgemm");
	if (!st || !f) { dlclose(h); return 0; }  // not OpenBLAS (e.g. the reference BLAS)
	st(threads);
	gl_sgemm_ptr = f;
	gl_corename_ptr = (corename_fn)dlsym(h, "openblas_get_corename");
	return 1;
}

// gl_blas_core names the kernels OpenBLAS runs, or "" if it cannot say:
// OPENBLAS_CORETYPE, when set, chooses them, and gleaner leaves it alone
// (some environments pin an older core because newer kernels of old
// OpenBLAS builds misbehave on new CPUs), so logs and benchmarks say which.
static const char* gl_blas_core(void) {
	return gl_corename_ptr ? gl_corename_ptr() : "";
}

enum { RowMajor = 101, NoTrans = 111, Trans = 112 };

static void gl_sgemm(int ta, int tb, int m, int n, int k, float alpha, const float* a, int lda,
		const float* b, int ldb, float beta, float* c, int ldc) {
	gl_sgemm_ptr(RowMajor, ta ? Trans : NoTrans, tb ? Trans : NoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
*/
import "C"

import (
	"os"
	"runtime"
	"unsafe"
)

// openBLASPaths are tried in order; GLEANER_BLAS overrides them with one
// path, or with "gonum" to force the pure-Go BLAS.
var openBLASPaths = []string{"libopenblas.so.0", "libopenblas.so", "libblas.so.3"}

func init() {
	paths := openBLASPaths
	if env := os.Getenv("GLEANER_BLAS"); env == "gonum" {
		return
	} else if env != "" {
		paths = []string{env}
	}
	for _, p := range paths {
		cp := C.CString(p)
		ok := C.gl_blas_open(cp, C.int(runtime.GOMAXPROCS(0))) == 1
		C.free(unsafe.Pointer(cp))
		if ok {
			blas = openBLAS{path: p, core: C.GoString(C.gl_blas_core())}
			return
		}
	}
}

// openBLAS is the loaded library: its path and the kernels it runs
// (openblas_get_corename, e.g. "SkylakeX"; empty if it cannot say).
type openBLAS struct{ path, core string }

func (o openBLAS) name() string {
	if o.core == "" {
		return "openblas (" + o.path + ")"
	}
	return "openblas (" + o.path + ", " + o.core + " kernels)"
}

func b2i(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// sgemm passes the slices' base pointers to C for the duration of the call;
// Go memory is not retained by OpenBLAS.
func (openBLAS) sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	C.gl_sgemm(b2i(transA), b2i(transB), C.int(m), C.int(n), C.int(k), C.float(alpha),
		(*C.float)(unsafe.Pointer(&a[0])), C.int(lda), (*C.float)(unsafe.Pointer(&b[0])), C.int(ldb),
		C.float(beta), (*C.float)(unsafe.Pointer(&c[0])), C.int(ldc))
}

// OpenBLASSgemm calls OpenBLAS's cblas_sgemm directly, bypassing gleaner's
// argument checks and epilogue (for benchmarks). It reports false when
// OpenBLAS is not loaded.
func OpenBLASSgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) bool {
	o, ok := blas.(openBLAS)
	if ok {
		o.sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	}
	return ok
}
