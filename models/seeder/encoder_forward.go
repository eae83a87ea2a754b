package seeder

import (
	"context"

	"github.com/gleaner-rag/gleaner/engine"
)

// run is one Encoder.Forward: the batch on the host, its inputs and
// indices on the backend, and the edge table every layer projects.
type run struct {
	e  *Encoder
	b  engine.Backend // e's backend, or a queue view of it, for this pass
	bt *batch[float32]
	a  arena

	ptr, src, erow engine.Buffer // attention edges grouped by destination
	vn             engine.Buffer // graph → virtual-node row (when the config has one)
	e0             engine.Buffer // (nRel + extraRows) × d edge features
}

// steps runs ops in order, stopping at the first error.
func steps(ops ...func() error) error {
	for _, op := range ops {
		if err := op(); err != nil {
			return err
		}
	}
	return nil
}

// linear is c = act(x·W[wOff:] + bias) + beta·c for a rows×in x and an
// in×out W starting at element wOff.
func (r *run) linear(x engine.Buffer, rows, in int, w engine.Buffer, wOff int, bias engine.Buffer, out int, act engine.Activation, c engine.Buffer, beta float32) func() error {
	return func() error {
		if rows == 0 {
			return nil
		}
		return engine.GemmFused(r.b, engine.GemmOp{M: rows, N: out, K: in, Alpha: 1, Beta: beta, A: x, B: w, OffB: wOff, C: c, Bias: bias, Act: act})
	}
}

// add is out = x + y over n values.
func (r *run) add(n int, x, y, out engine.Buffer) func() error {
	return func() error { return r.b.Axpby(engine.AxpbyOp{N: n, Alpha: 1, X: x, Beta: 1, Y: y, Out: out}) }
}

func (r *run) norm(rows int, x, g, b, out engine.Buffer) func() error {
	return func() error {
		return r.b.LayerNorm(engine.LayerNormOp{X: x, Gamma: g, Beta: b, Out: out, Rows: rows, Cols: r.e.c.Hidden, Eps: lnEps})
	}
}

func (r *run) forward(ctx context.Context) (p, s []float32, err error) {
	bt := r.bt
	r.ptr, r.src, r.erow = upload(&r.a, bt.ptr), upload(&r.a, bt.src), upload(&r.a, bt.erow)
	if r.e.c.Virtual {
		r.vn = upload(&r.a, int32s(bt.vn))
	}
	h, err := r.embed()
	if err != nil {
		return nil, nil, err
	}
	if err := r.edgeTable(); err != nil {
		return nil, nil, err
	}
	for l := range r.e.w.layers {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		if h, err = r.layer(&r.e.w.layers[l], h); err != nil {
			return nil, nil, err
		}
	}
	return r.heads(h)
}

// embed is forward.go's embedNodes: the input projection, the gated hop
// embedding, the virtual nodes' query state and the question's words.
func (r *run) embed() (engine.Buffer, error) {
	c, bt, w, a, d := r.e.c, r.bt, &r.e.w, &r.a, r.e.c.Hidden
	b, n, graphs := r.b, bt.n, len(bt.first)
	h := a.f32(n * d)
	ops := []func() error{r.linear(upload(a, bt.xn), n, c.nodeIn(), w.inW, 0, w.inB, d, engine.ActNone, h, 0)}
	if c.HopGate { // h += σ([h0; hop]·W_g + b_g) ⊙ hop, the gate's two halves accumulated
		hop, g, idx := a.f32(n*d), a.f32(n*d), upload(a, int32s(bt.hop))
		ops = append(ops,
			func() error { return b.CopyRows(engine.CopyRowsOp{N: n, Cols: d, X: w.hopEmb, Out: hop, Src: idx}) },
			r.linear(h, n, d, w.gateW, 0, nil, d, engine.ActNone, g, 0),
			r.linear(hop, n, d, w.gateW, d*d, w.gateB, d, engine.ActSigmoid, g, 1),
			func() error { return b.Mul(engine.MulOp{N: n * d, X: g, Y: hop, Out: h, Accumulate: true}) })
	}
	if c.Virtual {
		vs := a.f32(graphs * d)
		ops = append(ops, r.linear(upload(a, bt.xq), graphs, c.In, w.vnW, 0, w.vnB, d, engine.ActNone, vs, 0),
			func() error { return b.CopyRows(engine.CopyRowsOp{N: graphs, Cols: d, X: vs, Out: h, Dst: r.vn}) })
	}
	if c.Words > 0 {
		ops = append(ops, r.words(h))
	}
	if a.err != nil {
		return nil, a.err
	}
	return h, steps(ops...)
}

// words adds each graph's mean question-word embedding to its rows: the
// means by SpMM (a row per graph, weights 1/len), then one CopyRows.
func (r *run) words(h engine.Buffer) func() error {
	bt, a, d := r.bt, &r.a, r.e.c.Hidden
	graphs := len(bt.first)
	ptr, idx, val := []int64{0}, []int32{}, []float32{}
	for _, ws := range bt.words {
		for _, wd := range ws {
			idx, val = append(idx, wd), append(val, 1/float32(len(ws)))
		}
		ptr = append(ptr, int64(len(idx)))
	}
	rowGraph := make([]int32, bt.n)
	for gi := range bt.first {
		for i := bt.first[gi]; i < bt.graphEnd(gi); i++ {
			rowGraph[i] = int32(gi)
		}
	}
	u, pb, ib, vb, rg := a.f32(graphs*d), upload(a, ptr), upload(a, idx), upload(a, val), upload(a, rowGraph)
	return func() error {
		return steps(
			func() error {
				return r.b.SpMM(engine.SpMMOp{Rows: graphs, Cols: r.e.c.Words, D: d, Ptr: pb, Idx: ib, Val: vb, X: r.e.w.wordEmb, Y: u})
			},
			func() error {
				return r.b.CopyRows(engine.CopyRowsOp{N: bt.n, Cols: d, X: u, Out: h, Src: rg, Add: true})
			})
	}
}

// edgeTable is forward.go's edgeTable: the relation rows' projection plus
// their learned embeddings, then the expander's and virtual node's rows.
func (r *run) edgeTable() error {
	c, bt, w, a, d := r.e.c, r.bt, &r.e.w, &r.a, r.e.c.Hidden
	b, nRel := r.b, bt.nRel
	r.e0 = a.f32((nRel + extraRows) * d)
	ops := []func() error{r.linear(upload(a, bt.xr), nRel, c.relIn(), w.relW, 0, w.relB, d, engine.ActNone, r.e0, 0)}
	if c.Relations > 0 && nRel > 0 {
		idx := upload(a, bt.relEmb)
		ops = append(ops, func() error {
			return b.CopyRows(engine.CopyRowsOp{N: nRel, Cols: d, X: w.relEmb, Out: r.e0, Src: idx, Add: true})
		})
	}
	dst := upload(a, []int32{int32(nRel + rowExp), int32(nRel + rowToVN), int32(nRel + rowFromVN)})
	ops = append(ops, func() error {
		return b.CopyRows(engine.CopyRowsOp{N: extraRows, Cols: d, X: w.extra, Out: r.e0, Dst: dst})
	})
	if a.err != nil {
		return a.err
	}
	return steps(ops...)
}

// layer is forward.go's layer without dropout: h1 = LN(h + attn) (+
// LN(h + local)), h2 = LN(h1 + FFN(h1)), a virtual node keeping its
// attention output.
func (r *run) layer(lw *boundLayer, h engine.Buffer) (engine.Buffer, error) {
	c, bt, a, d := r.e.c, r.bt, &r.a, r.e.c.Hidden
	b, n, rowsE := r.b, bt.n, bt.nRel+extraRows
	q, k, v, att, u, h1, f1, f2, h2 := a.f32(n*d), a.f32(n*d), a.f32(n*d), a.f32(n*d), a.f32(n*d), a.f32(n*d), a.f32(2*n*d), a.f32(n*d), a.f32(n*d)
	etab := a.f32(rowsE * d)
	ops := []func() error{
		r.linear(h, n, d, lw.q, 0, nil, d, engine.ActNone, q, 0),
		r.linear(h, n, d, lw.k, 0, nil, d, engine.ActNone, k, 0),
		r.linear(h, n, d, lw.v, 0, nil, d, engine.ActNone, v, 0),
		r.linear(r.e0, rowsE, d, lw.e, 0, nil, d, engine.ActNone, etab, 0),
		func() error {
			return b.EdgeAttention(engine.EdgeAttentionOp{N: n, Heads: c.Heads, HeadDim: d / c.Heads, Ptr: r.ptr, Src: r.src, ERow: r.erow,
				K: k, Q: q, V: v, E: etab, Out: att})
		},
		r.add(n*d, att, h, u),
		r.norm(n, u, lw.ln1g, lw.ln1b, h1),
	}
	if c.Local {
		ops = append(ops, r.local(lw, h, h1))
	}
	ops = append(ops,
		r.linear(h1, n, d, lw.w1, 0, lw.b1, 2*d, engine.ActReLU, f1, 0),
		r.linear(f1, n, 2*d, lw.w2, 0, lw.b2, d, engine.ActNone, f2, 0),
		r.add(n*d, f2, h1, u),
		r.norm(n, u, lw.ln2g, lw.ln2b, h2))
	if c.Virtual {
		ops = append(ops, func() error {
			return b.CopyRows(engine.CopyRowsOp{N: len(bt.first), Cols: d, X: att, Out: h2, Src: r.vn, Dst: r.vn})
		})
	}
	if a.err != nil {
		return nil, a.err
	}
	return h2, steps(ops...)
}

// local is GraphGPS's local block: h1 += LN(h + Σ_j (h_j·W_m)⊙(e_ji·W_e')).
func (r *run) local(lw *boundLayer, h, h1 engine.Buffer) func() error {
	bt, a, d := r.bt, &r.a, r.e.c.Hidden
	b, n, nRel := r.b, bt.n, bt.nRel
	m, f, loc, u, hl := a.f32(n*d), a.f32(nRel*d), a.f32(n*d), a.f32(n*d), a.f32(n*d)
	return func() error {
		return steps(
			r.linear(h, n, d, lw.m, 0, nil, d, engine.ActNone, m, 0),
			r.linear(r.e0, nRel, d, lw.em, 0, nil, d, engine.ActNone, f, 0),
			func() error {
				return b.EdgeMessage(engine.EdgeMessageOp{N: n, D: d, Rows: nRel, Ptr: r.ptr, Src: r.src, ERow: r.erow, M: m, F: f, Out: loc})
			},
			r.add(n*d, loc, h, u),
			r.norm(n, u, lw.ln3g, lw.ln3b, hl),
			r.add(n*d, h1, hl, h1))
	}
}

// heads runs the policy and scoring heads (d → d → 1, ReLU between) and
// downloads their n values each.
func (r *run) heads(h engine.Buffer) (p, s []float32, err error) {
	w, a, d, n := &r.e.w, &r.a, r.e.c.Hidden, r.bt.n
	pz, sz, pb, sb := a.f32(n*d), a.f32(n*d), a.f32(n), a.f32(n)
	if a.err != nil {
		return nil, nil, a.err
	}
	err = steps(
		r.linear(h, n, d, w.polW1, 0, w.polB1, d, engine.ActReLU, pz, 0),
		r.linear(pz, n, d, w.polW2, 0, w.polB2, 1, engine.ActNone, pb, 0),
		r.linear(h, n, d, w.scW1, 0, w.scB1, d, engine.ActReLU, sz, 0),
		r.linear(sz, n, d, w.scW2, 0, w.scB2, 1, engine.ActNone, sb, 0),
		func() (err error) { p, err = engine.Download[float32](r.b, pb); return err },
		func() (err error) { s, err = engine.Download[float32](r.b, sb); return err })
	if err == nil && r.e.c.Paths > 0 { // n values: the host adds the skip
		addPathSkip(r.e.c, r.bt.xn, n, r.e.pathSkip, p, s)
	}
	return p, s, err
}

func int32s(x []int) []int32 {
	out := make([]int32, len(x))
	for i, v := range x {
		out[i] = int32(v)
	}
	return out
}
