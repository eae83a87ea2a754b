// Elementwise activations shared by the kernels (engine.Activation:
// 0 none, 1 exact erf GELU, 2 tanh, 3 ReLU, 4 sigmoid).
#pragma once
__device__ __forceinline__ float act_apply(int act, float v) {
	switch (act) {
	case 1:
		// GELU(−Inf) is −0, the limit; the formula would give −Inf·0 = NaN.
		return v == -INFINITY ? -0.0f : 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
	case 2:
		return tanhf(v);
	case 3:
		return v > 0.0f ? v : 0.0f;
	case 4:
		return 1.0f / (1.0f + expf(-v));
	}
	return v;
}
