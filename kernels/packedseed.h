// packedseed.h: the bias step of the packed GEMM for kernels that do not
// start their sums from the bias in registers.
#ifndef GLEANER_PACKEDSEED_H
#define GLEANER_PACKEDSEED_H
#include <stddef.h>

// packed_seed sets columns [j0, j1) of C's m rows to bias, or adds bias to
// them when acc: the values the kernel then accumulates A·B onto, as a
// pass seeding all of C would leave them.
static inline void packed_seed(float* C, int ldc, int m, int j0, int j1, const float* bias, int acc) {
	for (int i = 0; i < m; i++) {
		float* c = C + (size_t)i * ldc;
		if (acc)
			for (int j = j0; j < j1; j++) c[j] += bias[j];
		else
			for (int j = j0; j < j1; j++) c[j] = bias[j];
	}
}

#endif
