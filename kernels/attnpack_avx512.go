//go:build cgo && amd64 && !purego

package kernels

/*
#cgo CFLAGS: -O3
#include <immintrin.h>
#include <stddef.h>
#include <string.h>

// attn_pack512 copies one head's rows out of the [seq, hd] activations:
// q = Q·scale and v as they are (l×d), and kt = Kᵀ (d×l), so both of the
// head's products are row-broadcast GEMMs. The row copies run 16 lanes at
// a time with the tail under a mask.
__attribute__((target("avx512f")))
static void attn_pack512(const float* Q, const float* K, const float* V, int l, int d, int hd, float scale,
		float* q, float* kt, float* v) {
	__m512 sv = _mm512_set1_ps(scale);
	for (int i = 0; i < l; i++) {
		const float* qs = Q + (size_t)i * hd;
		const float* ks = K + (size_t)i * hd;
		for (int j = 0; j < d; j += 16) {
			__mmask16 mk = d - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (d - j)) - 1);
			_mm512_mask_storeu_ps(q + (size_t)i * d + j, mk, _mm512_mul_ps(_mm512_maskz_loadu_ps(mk, qs + j), sv));
		}
		memcpy(v + (size_t)i * d, V + (size_t)i * hd, (size_t)d * sizeof(float));
		for (int j = 0; j < d; j++) kt[(size_t)j * l + i] = ks[j];
	}
}

// attn_unpack copies the head's l×d output back into its [seq, hd] rows.
static void attn_unpack(const float* o, float* Out, int l, int d, int hd) {
	for (int i = 0; i < l; i++) memcpy(Out + (size_t)i * hd, o + (size_t)i * d, (size_t)d * sizeof(float));
}
*/
import "C"

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

func init() {
	if cpu.X86.HasAVX512F {
		attnPack, attnUnpack = attnPackAVX512, attnUnpackC
	}
}

// attnPackAVX512 is attnPackGo with the copies in C: the per-element Go
// loops cost as much as the head's two products.
func attnPackAVX512(a AttentionArgs, w *headScratch, off, l, hd int, scale float32) {
	d := a.HeadDim
	end := off + (l-1)*hd + d
	_, _, _ = a.Q[end-1], a.K[end-1], a.V[end-1]
	_, _, _ = w.q[l*d-1], w.kt[l*d-1], w.v[l*d-1]
	C.attn_pack512((*C.float)(unsafe.Pointer(&a.Q[off])), (*C.float)(unsafe.Pointer(&a.K[off])), (*C.float)(unsafe.Pointer(&a.V[off])),
		C.int(l), C.int(d), C.int(hd), C.float(scale),
		(*C.float)(unsafe.Pointer(&w.q[0])), (*C.float)(unsafe.Pointer(&w.kt[0])), (*C.float)(unsafe.Pointer(&w.v[0])))
}

func attnUnpackC(a AttentionArgs, w *headScratch, off, l, hd int) {
	d := a.HeadDim
	_, _ = a.Out[off+(l-1)*hd+d-1], w.o[l*d-1]
	C.attn_unpack((*C.float)(unsafe.Pointer(&w.o[0])), (*C.float)(unsafe.Pointer(&a.Out[off])), C.int(l), C.int(d), C.int(hd))
}
