package seeder

import (
	"math"

	"github.com/gleaner-rag/gleaner/kernels"
)

// edgeClamp bounds the attention logits, as Exphormer (and
// kernels.EdgeAttention) do.
const edgeClamp = 5

// edgeAttention is Exphormer's sparse attention (docs/methods.md §3.2)
// over b's edges with per-edge features e (edges × d): float32 runs the
// engine's kernel, float64 the reference loop below.
func edgeAttention[F Float](b *batch[F], heads, d int, q, k, v, e []F) []F {
	out := make([]F, b.n*d)
	if q32, ok := any(q).([]float32); ok {
		err := kernels.EdgeAttention(kernels.EdgeAttentionArgs{N: b.n, Heads: heads, HeadDim: d / heads, Ptr: b.ptr, Src: b.src,
			K: any(k).([]float32), Q: q32, V: any(v).([]float32), E: any(e).([]float32), Out: any(out).([]float32)})
		if err != nil {
			panic(err) // the batch's own arrays: a mismatch is a bug here
		}
		return out
	}
	hd := d / heads
	scale := 1 / math.Sqrt(float64(hd))
	for i := 0; i < b.n; i++ {
		for h := 0; h < heads; h++ {
			lo, hi := h*hd, (h+1)*hd
			var z float64
			for p := b.ptr[i]; p < b.ptr[i+1]; p++ {
				s, _ := edgeWeight(q[i*d+lo:i*d+hi], k[int(b.src[p])*d+lo:], e[int(p)*d+lo:], scale)
				z += s
				for j := lo; j < hi; j++ {
					out[i*d+j] += F(s) * v[int(b.src[p])*d+j]
				}
			}
			for j := lo; j < hi; j++ {
				out[i*d+j] = F(float64(out[i*d+j]) / (z + 1e-6))
			}
		}
	}
	return out
}

// edgeWeight is one head's s = exp(clamp(Σ_j k_j·q_j/√h·e_j)) and whether
// the clamp let the logit through (its gradient is 0 otherwise).
func edgeWeight[F Float](q, k, e []F, scale float64) (float64, bool) {
	var logit float64
	for j := range q {
		logit += float64(k[j]) * float64(q[j]) * float64(e[j])
	}
	logit *= scale
	if logit <= -edgeClamp || logit >= edgeClamp {
		return math.Exp(math.Max(-edgeClamp, math.Min(edgeClamp, logit))), false
	}
	return math.Exp(logit), true
}

// edgeAttentionBack is the backward of edgeAttention given its output out
// and the output gradient dout: it returns dq, dk, dv and de. For
// destination i and head h, with s_p the edge weights, Z = Σ s_p + 1e-6
// and out_i = Σ s_p·v_src/Z:
//
//	ds_p = (dout_i·v_src − dout_i·out_i)/Z,  dlogit_p = ds_p·s_p (0 when clamped)
//	dq_i += dlogit_p·k_src⊙e_p/√h,  dk_src += dlogit_p·q_i⊙e_p/√h,
//	de_p = dlogit_p·k_src⊙q_i/√h,    dv_src += s_p/Z·dout_i
func edgeAttentionBack[F Float](b *batch[F], heads, d int, q, k, v, e, out, dout []F) (dq, dk, dv, de []F) {
	dq, dk, dv, de = make([]F, len(q)), make([]F, len(k)), make([]F, len(v)), make([]F, len(e))
	hd := d / heads
	scale := 1 / math.Sqrt(float64(hd))
	for i := 0; i < b.n; i++ {
		for h := 0; h < heads; h++ {
			lo, hi := i*d+h*hd, i*d+(h+1)*hd
			qi, oi, gi := q[lo:hi], out[lo:hi], dout[lo:hi]
			var z, go_ float64
			for p := b.ptr[i]; p < b.ptr[i+1]; p++ {
				s, _ := edgeWeight(qi, k[int(b.src[p])*d+h*hd:], e[int(p)*d+h*hd:], scale)
				z += s
			}
			z += 1e-6
			for j := range gi {
				go_ += float64(gi[j]) * float64(oi[j])
			}
			for p := b.ptr[i]; p < b.ptr[i+1]; p++ {
				so := int(b.src[p])*d + h*hd
				eo := int(p)*d + h*hd
				s, live := edgeWeight(qi, k[so:], e[eo:], scale)
				var gv float64
				for j := 0; j < hd; j++ {
					gv += float64(gi[j]) * float64(v[so+j])
					dv[so+j] += F(s / z * float64(gi[j]))
				}
				if !live {
					continue
				}
				dl := (gv - go_) / z * s * scale
				for j := 0; j < hd; j++ {
					kj, qj, ej := float64(k[so+j]), float64(qi[j]), float64(e[eo+j])
					dq[lo+j] += F(dl * kj * ej)
					dk[so+j] += F(dl * qj * ej)
					de[eo+j] += F(dl * kj * qj)
				}
			}
		}
	}
	return dq, dk, dv, de
}
