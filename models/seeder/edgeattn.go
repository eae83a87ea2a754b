package seeder

import (
	"math"
	"runtime"
	"slices"
	"sync"

	"github.com/gleaner-rag/gleaner/kernels"
)

// edgeClamp bounds the attention logits, as Exphormer (and
// kernels.EdgeAttention) do.
const edgeClamp = 5

// edgeAttention is Exphormer's sparse attention (docs/methods.md §3.2)
// over b's edges, edge p reading row b.erow[p] of the feature table e:
// float32 runs the engine's kernel, float64 the reference loop below.
func edgeAttention[F Float](b *batch[F], heads, d int, q, k, v, e []F) []F {
	out := make([]F, b.n*d)
	if q32, ok := any(q).([]float32); ok {
		err := kernels.EdgeAttention(kernels.EdgeAttentionArgs{N: b.n, Heads: heads, HeadDim: d / heads, Ptr: b.ptr, Src: b.src, ERow: b.erow,
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
				s, _ := edgeWeight(q[i*d+lo:i*d+hi], k[int(b.src[p])*d+lo:], e[int(b.erow[p])*d+lo:], scale)
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
// and the output gradient dout: it returns dq, dk, dv and de (the feature
// table's gradient, summed over the edges sharing a row). For
// destination i and head h, with s_p the edge weights, Z = Σ s_p + 1e-6
// and out_i = Σ s_p·v_src/Z:
//
//	ds_p = (dout_i·v_src − dout_i·out_i)/Z,  dlogit_p = ds_p·s_p (0 when clamped)
//	dq_i += dlogit_p·k_src⊙e_p/√h,  dk_src += dlogit_p·q_i⊙e_p/√h,
//	de_p = dlogit_p·k_src⊙q_i/√h,    dv_src += s_p/Z·dout_i
func edgeAttentionBack[F Float](b *batch[F], heads, d int, q, k, v, e, out, dout []F) (dq, dk, dv, de []F) {
	dq = make([]F, len(q))
	// destinations own dq; dk, dv and de scatter to sources and shared
	// rows, so each worker sums them in its own buffers, added at the end
	workers := min(runtime.GOMAXPROCS(0), max(b.n/64, 1))
	dks, dvs, des := make([][]F, workers), make([][]F, workers), make([][]F, workers)
	var wg sync.WaitGroup
	for w := range workers {
		dks[w], dvs[w], des[w] = make([]F, len(k)), make([]F, len(v)), make([]F, len(e))
		lo, hi := w*b.n/workers, (w+1)*b.n/workers
		wg.Go(func() { edgeBackRange(b, heads, d, q, k, v, e, out, dout, dq, dks[w], dvs[w], des[w], lo, hi) })
	}
	wg.Wait()
	dk, dv, de = dks[0], dvs[0], des[0]
	for w := 1; w < workers; w++ {
		addInto(dk, dks[w])
		addInto(dv, dvs[w])
		addInto(de, des[w])
	}
	return dq, dk, dv, de
}

// edgeBackRange is edgeAttentionBack for destinations [lo, hi).
func edgeBackRange[F Float](b *batch[F], heads, d int, q, k, v, e, out, dout, dq, dk, dv, de []F, lo, hi int) {
	hd := d / heads
	scale := 1 / math.Sqrt(float64(hd))
	var s []float64
	var live []bool
	for i := lo; i < hi; i++ {
		deg := int(b.ptr[i+1] - b.ptr[i])
		s, live = slices.Grow(s[:0], deg)[:deg], slices.Grow(live[:0], deg)[:deg]
		for h := 0; h < heads; h++ {
			o := i*d + h*hd
			qi, oi, gi := q[o:o+hd], out[o:o+hd], dout[o:o+hd]
			var z, gout float64
			for x := range deg {
				p := int(b.ptr[i]) + x
				s[x], live[x] = edgeWeight(qi, k[int(b.src[p])*d+h*hd:], e[int(b.erow[p])*d+h*hd:], scale)
				z += s[x]
			}
			z += 1e-6
			for j := range gi {
				gout += float64(gi[j]) * float64(oi[j])
			}
			for x := range deg {
				p := int(b.ptr[i]) + x
				so, eo := int(b.src[p])*d+h*hd, int(b.erow[p])*d+h*hd
				var gv float64
				w := s[x] / z
				for j := 0; j < hd; j++ {
					gv += float64(gi[j]) * float64(v[so+j])
					dv[so+j] += F(w * float64(gi[j]))
				}
				if !live[x] {
					continue
				}
				dl := (gv - gout) * w * scale
				for j := 0; j < hd; j++ {
					kj, qj, ej := float64(k[so+j]), float64(qi[j]), float64(e[eo+j])
					dq[o+j] += F(dl * kj * ej)
					dk[so+j] += F(dl * qj * ej)
					de[eo+j] += F(dl * kj * qj)
				}
			}
		}
	}
}
