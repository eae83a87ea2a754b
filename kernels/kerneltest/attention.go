package kerneltest

import (
	"math"

	"github.com/gleaner-rag/gleaner/engine"
)

// refAttention is padded self-attention in float64.
func refAttention(q, k, v []float32, lengths []int32, batch, seq, heads, hd int) []float64 {
	d := heads * hd
	out := make([]float64, batch*seq*d)
	for b := 0; b < batch; b++ {
		l := int(lengths[b])
		for hh := 0; hh < heads; hh++ {
			for i := 0; i < l; i++ {
				s := make([]float64, l)
				m := math.Inf(-1)
				for j := 0; j < l; j++ {
					for p := 0; p < hd; p++ {
						s[j] += float64(q[(b*seq+i)*d+hh*hd+p]) * float64(k[(b*seq+j)*d+hh*hd+p])
					}
					s[j] /= math.Sqrt(float64(hd))
					m = math.Max(m, s[j])
				}
				var z float64
				for j := range s {
					s[j] = math.Exp(s[j] - m)
					z += s[j]
				}
				for j := 0; j < l; j++ {
					for p := 0; p < hd; p++ {
						out[(b*seq+i)*d+hh*hd+p] += s[j] / z * float64(v[(b*seq+j)*d+hh*hd+p])
					}
				}
			}
		}
	}
	return out
}

func testAttention(h *H) {
	for _, c := range []struct{ batch, seq, heads, hd int }{{1, 1, 1, 1}, {3, 17, 2, 8}, {2, 33, 3, 17}, {4, 5, 1, 64}} {
		n := c.batch * c.seq * c.heads * c.hd
		q, k, v := h.Rand(n), h.Rand(n), h.Rand(n)
		lengths := make([]int32, c.batch)
		for b := range lengths {
			lengths[b] = int32(h.rng.IntN(c.seq + 1))
		}
		lengths[0] = int32(c.seq) // one full sequence; others padded, possibly empty
		out := h.Poisoned(n)
		h.Must(h.B.Attention(engine.AttentionOp{Batch: c.batch, Seq: c.seq, Heads: c.heads, HeadDim: c.hd,
			Q: h.Up(q), K: h.Up(k), V: h.Up(v), Out: out, Lengths: h.UpI32(lengths)}))
		want := refAttention(q, k, v, lengths, c.batch, c.seq, c.heads, c.hd)
		h.Close(name("attention ", c), h.Down(out), want, Tol(c.seq*c.hd, 16))
	}
}
