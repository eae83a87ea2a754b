// exp512.h: the 16-lane exp shared by the AVX-512 kernels (cgo compiles
// each file's preamble apart, so shared inline helpers live in a header).
#ifndef GLEANER_EXP512_H
#define GLEANER_EXP512_H
#include <immintrin.h>

// exp512: e^x for 16 lanes (Cephes expf, as exp256: range reduction by
// ln 2 and a degree-5 polynomial; relative error about 2e-7 on [-87, 88]);
// 0 below -87.3 (−Inf included), e^88.3 above 88.3.
__attribute__((target("avx512f")))
static inline __m512 exp512(__m512 x) {
	__mmask16 under = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.3f), _CMP_LT_OQ); // e^x below float32's normals: 0
	x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.3f)), _mm512_set1_ps(88.3f));
	__m512 fx = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	x = _mm512_fnmadd_ps(fx, _mm512_set1_ps(0.693359375f), x);
	x = _mm512_fnmadd_ps(fx, _mm512_set1_ps(-2.12194440e-4f), x);
	__m512 y = _mm512_set1_ps(1.9875691500e-4f);
	y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(1.3981999507e-3f));
	y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(8.3334519073e-3f));
	y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(4.1665795894e-2f));
	y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(1.6666665459e-1f));
	y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(5.0000001201e-1f));
	y = _mm512_fmadd_ps(y, _mm512_mul_ps(x, x), _mm512_add_ps(x, _mm512_set1_ps(1.0f)));
	__m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(fx), _mm512_set1_epi32(127)), 23);
	return _mm512_maskz_mul_ps((__mmask16)~under, y, _mm512_castsi512_ps(e));
}

#endif
