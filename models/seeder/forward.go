package seeder

import (
	"math/rand/v2"
)

// layerTape keeps one layer's activations for the backward pass.
type layerTape[F Float] struct {
	hin, q, k, v    []F
	etab            []F
	a, maskA, maskL []F
	lm, lf, loc     []F // local sub-model: messages, edge table, output
	xhat3           []F
	inv3            []F
	h1, xhat1, inv1 []F
	f1, mask1, f2   []F
	mask2           []F
	h2, xhat2, inv2 []F
}

// tape is a forward pass over a batch, with what the backward needs.
type tape[F Float] struct {
	c         Config
	b         *batch[F]
	hopE      []F
	gin, gate []F
	hin       []F
	etab0     []F
	layers    []layerTape[F]
	pz, sz    []F // head hidden layers (after ReLU)
	P, S      []F // policy logits and scores, one per row
}

// dropout draws an inverted-dropout mask (nil when off).
func dropout[F Float](n int, p float64, rng *rand.Rand) []F {
	if p <= 0 || rng == nil {
		return nil
	}
	m := make([]F, n)
	keep := F(1 / (1 - p))
	for i := range m {
		if rng.Float64() >= p {
			m[i] = keep
		}
	}
	return m
}

func mul[F Float](x, mask []F) []F {
	if mask == nil {
		return x
	}
	y := make([]F, len(x))
	for i := range x {
		y[i] = x[i] * mask[i]
	}
	return y
}

// forward runs the network over b. With rng set it trains: dropout p.
func forward[F Float](w *Weights[F], c Config, b *batch[F], p float64, rng *rand.Rand) *tape[F] {
	t := &tape[F]{c: c, b: b}
	d := c.Hidden
	t.hin = t.embedNodes(w)
	t.etab0 = t.edgeTable(w)
	h := t.hin
	for l := range w.Layers {
		lt := t.layer(&w.Layers[l], h, p, rng)
		t.layers = append(t.layers, lt)
		h = lt.h2
	}
	t.pz = linear(h, w.PolW1, w.PolB1, b.n, d, d)
	relu(t.pz)
	t.P = linear(t.pz, w.PolW2, w.PolB2, b.n, d, 1)
	t.sz = linear(h, w.ScW1, w.ScB1, b.n, d, d)
	relu(t.sz)
	t.S = linear(t.sz, w.ScW2, w.ScB2, b.n, d, 1)
	if c.Paths > 0 {
		addPathSkip(c, b.xn, b.n, w.PathSkip, t.P, t.S)
	}
	return t
}

// pathMass is row i's hop-weighted text-side mass y (the last path input).
func pathMass[F Float](c Config, xn []F, i int) F {
	ni := c.nodeIn()
	return xn[(i+1)*ni-1]
}

// addPathSkip adds β_P·y and β_S·y to the heads' outputs.
func addPathSkip[F Float](c Config, xn []F, n int, skip, p, s []F) {
	for i := 0; i < n; i++ {
		y := pathMass(c, xn, i)
		p[i] += skip[0] * y
		s[i] += skip[1] * y
	}
}

// embedNodes is the input projection, the gated hop embedding
// (h = h0 + σ(W_g[h0; hop])⊙hop) and the virtual nodes' query state.
func (t *tape[F]) embedNodes(w *Weights[F]) []F {
	c, b, d := t.c, t.b, t.c.Hidden
	h0 := linear(b.xn, w.InW, w.InB, b.n, c.nodeIn(), d)
	h := append([]F(nil), h0...)
	if c.HopGate {
		t.hopE, t.gin = make([]F, b.n*d), make([]F, b.n*2*d)
		for i := 0; i < b.n; i++ {
			copy(t.hopE[i*d:(i+1)*d], w.HopEmb[b.hop[i]*d:])
			copy(t.gin[i*2*d:], h0[i*d:(i+1)*d])
			copy(t.gin[i*2*d+d:(i+1)*2*d], t.hopE[i*d:(i+1)*d])
		}
		t.gate = linear(t.gin, w.GateW, w.GateB, b.n, 2*d, d)
		for i, x := range t.gate {
			t.gate[i] = F(sigmoid(float64(x)))
			h[i] += t.gate[i] * t.hopE[i]
		}
	}
	if c.Virtual {
		vs := linear(b.xq, w.VNW, w.VNB, len(b.vn), c.In, d)
		for gi, v := range b.vn {
			copy(h[v*d:(v+1)*d], vs[gi*d:(gi+1)*d])
		}
	}
	if c.Words > 0 {
		for gi, words := range b.words {
			u := bagOfWords(w.WordEmb, words, d)
			for i := b.first[gi]; i < b.graphEnd(gi); i++ {
				addInto(h[i*d:(i+1)*d], u)
			}
		}
	}
	return h
}

// bagOfWords is the mean of the words' embeddings (zeros for none).
func bagOfWords[F Float](emb []F, words []int32, d int) []F {
	u := make([]F, d)
	for _, w := range words {
		addInto(u, emb[int(w)*d:(int(w)+1)*d])
	}
	if len(words) > 0 {
		for j := range u {
			u[j] /= F(len(words))
		}
	}
	return u
}

// edgeTable is the edge features before each layer's projection: the
// relation rows, then the expander's and the virtual node's learned rows.
func (t *tape[F]) edgeTable(w *Weights[F]) []F {
	c, b, d := t.c, t.b, t.c.Hidden
	e := make([]F, (b.nRel+extraRows)*d)
	copy(e, linear(b.xr, w.RelW, w.RelB, b.nRel, c.relIn(), d))
	for r, row := range b.relEmb {
		if row >= 0 {
			addInto(e[r*d:(r+1)*d], w.RelEmb[int(row)*d:(int(row)+1)*d])
		}
	}
	copy(e[(b.nRel+rowExp)*d:], w.ExpT)
	copy(e[(b.nRel+rowToVN)*d:], w.VNIn)
	copy(e[(b.nRel+rowFromVN)*d:], w.VNOut)
	return e
}

// layer is one Exphormer layer: h1 = LN(h + drop(attn)), h2 = LN(h1 +
// drop(FFN(h1))); a virtual node's new state is its attention output.
func (t *tape[F]) layer(lw *layerWeights[F], h []F, p float64, rng *rand.Rand) layerTape[F] {
	c, b, d := t.c, t.b, t.c.Hidden
	lt := layerTape[F]{hin: h}
	lt.q = linear(h, lw.Q, nil, b.n, d, d)
	lt.k = linear(h, lw.K, nil, b.n, d, d)
	lt.v = linear(h, lw.V, nil, b.n, d, d)
	lt.etab = linear(t.etab0, lw.E, nil, b.nRel+extraRows, d, d)
	lt.a = edgeAttention(b, c.Heads, d, lt.q, lt.k, lt.v, lt.etab)
	lt.maskA = dropout[F](len(lt.a), p, rng)
	u := mul(lt.a, lt.maskA)
	u = addInto(append([]F(nil), u...), h)
	lt.h1, lt.xhat1, lt.inv1 = layerNorm(u, lw.LN1G, lw.LN1B, b.n, d)
	if c.Local { // GraphGPS: the local block's LN(h + local) adds to the attention block's
		lt.lm = linear(h, lw.M, nil, b.n, d, d)
		lt.lf = linear(t.etab0[:b.nRel*d], lw.EM, nil, b.nRel, d, d)
		lt.loc = localMessages(b, d, lt.lm, lt.lf)
		lt.maskL = dropout[F](len(lt.loc), p, rng)
		ul := addInto(append([]F(nil), mul(lt.loc, lt.maskL)...), h)
		var hloc []F
		hloc, lt.xhat3, lt.inv3 = layerNorm(ul, lw.LN3G, lw.LN3B, b.n, d)
		addInto(lt.h1, hloc)
	}
	lt.f1 = linear(lt.h1, lw.W1, lw.B1, b.n, d, 2*d)
	relu(lt.f1)
	lt.mask1 = dropout[F](len(lt.f1), p, rng)
	lt.f2 = linear(mul(lt.f1, lt.mask1), lw.W2, lw.B2, b.n, 2*d, d)
	lt.mask2 = dropout[F](len(lt.f2), p, rng)
	v := addInto(append([]F(nil), mul(lt.f2, lt.mask2)...), lt.h1)
	lt.h2, lt.xhat2, lt.inv2 = layerNorm(v, lw.LN2G, lw.LN2B, b.n, d)
	for _, vn := range b.vn {
		if vn >= 0 {
			copy(lt.h2[vn*d:(vn+1)*d], lt.a[vn*d:(vn+1)*d])
		}
	}
	return lt
}

// addInto adds y to x in place and returns x.
func addInto[F Float](x, y []F) []F {
	for i := range x {
		x[i] += y[i]
	}
	return x
}
