//go:build cgo && amd64 && !purego

package kernels

/*
#cgo CFLAGS: -O3
#include <math.h>

// gelu_bias_row computes row[j] = gelu(row[j] + bias[j]) with the same
// float64 formula as the Go twin (erf by Abramowitz & Stegun 7.1.28); GCC
// vectorizes the loop for AVX2.
__attribute__((target("avx2,fma")))
static void gelu_bias_row(float* row, const float* bias, int n) {
	for (int j = 0; j < n; j++) {
		double x = (double)row[j] + (bias ? (double)bias[j] : 0.0);
		double z = fabs(x) * 0.70710678118654752440;
		double p = 1 + z*(0.0705230784+z*(0.0422820123+z*(0.0092705272+z*(0.0001520143+z*(0.0002765672+z*0.0000430638)))));
		p *= p; p *= p; p *= p; p *= p;
		double e = 1 - 1 / p;
		e = x < 0 ? -e : e;
		row[j] = (float)(0.5 * x * (1 + e));
	}
}
*/
import "C"

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

func init() {
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		geluImpls["avx2"] = geluBiasRowAVX2
		geluBiasRow = geluBiasRowAVX2
	}
}

func geluBiasRowAVX2(row, bias []float32) {
	if len(row) == 0 {
		return
	}
	var bp *C.float
	if bias != nil {
		bp = (*C.float)(unsafe.Pointer(&bias[0]))
	}
	C.gelu_bias_row((*C.float)(unsafe.Pointer(&row[0])), bp, C.int(len(row)))
}
