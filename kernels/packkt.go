//go:build cgo && !purego

package kernels

/*
#cgo CFLAGS: -O3
#include <stddef.h>

// pack_kt writes kt (d×l) = scale·Kᵀ for the l rows of K, hd floats
// apart: the one copy an attention head needs, so that Q·Kᵀ is a
// row-broadcast GEMM.
static void pack_kt(const float* K, float* kt, int l, int d, int hd, float scale) {
	for (int i = 0; i < l; i++) {
		const float* ks = K + (size_t)i * hd;
		for (int j = 0; j < d; j++) kt[(size_t)j * l + i] = ks[j] * scale;
	}
}
*/
import "C"

import "unsafe"

func init() { packKT = packKTC }

// packKTC is packKTGo in C: the per-element Go loop cost as much as the
// head's two products.
func packKTC(k, kt []float32, l, d, hd int, scale float32) {
	if l == 0 || d == 0 {
		return
	}
	_, _ = k[(l-1)*hd+d-1], kt[d*l-1]
	C.pack_kt((*C.float)(unsafe.Pointer(&k[0])), (*C.float)(unsafe.Pointer(&kt[0])), C.int(l), C.int(d), C.int(hd), C.float(scale))
}
