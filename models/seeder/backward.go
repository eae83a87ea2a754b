package seeder

// backward accumulates into g the gradients of a loss whose gradients
// with respect to the policy logits and scores are dP and dS (one per row).
func (t *tape[F]) backward(w *Weights[F], g *Weights[F], dP, dS []F) {
	b, d := t.b, t.c.Hidden
	h := t.hin
	if len(t.layers) > 0 {
		h = t.layers[len(t.layers)-1].h2
	}
	if t.c.Paths > 0 {
		for i := 0; i < b.n; i++ {
			y := pathMass(t.c, b.xn, i)
			g.PathSkip[0] += dP[i] * y
			g.PathSkip[1] += dS[i] * y
		}
	}
	dh := headBack(h, t.pz, w.PolW1, w.PolW2, g.PolW1, g.PolB1, g.PolW2, g.PolB2, dP, b.n, d)
	addInto(dh, headBack(h, t.sz, w.ScW1, w.ScW2, g.ScW1, g.ScB1, g.ScW2, g.ScB2, dS, b.n, d))
	detab0 := make([]F, len(t.etab0))
	for l := len(t.layers) - 1; l >= 0; l-- {
		dh = t.layerBack(&t.layers[l], &w.Layers[l], &g.Layers[l], dh, detab0)
	}
	t.edgeTableBack(g, detab0)
	t.embedNodesBack(w, g, dh)
}

// headBack is the backward of y = relu(h·W1 + b1)·w2 + b2 (z the hidden
// layer): it accumulates the head's gradients and returns dh.
func headBack[F Float](h, z, w1, w2, dw1, db1, dw2, db2, dy []F, n, d int) []F {
	dz := make([]F, n*d)
	for i := 0; i < n; i++ {
		db2[0] += dy[i]
		for j := 0; j < d; j++ {
			dw2[j] += dy[i] * z[i*d+j]
			dz[i*d+j] = dy[i] * w2[j]
		}
	}
	reluBack(dz, z)
	return linearBack(h, w1, dz, dw1, db1, n, d, d, true)
}

// layerBack is one layer's backward: dh2 in, dh (the layer input's
// gradient) out; edge-feature gradients accumulate into detab0.
func (t *tape[F]) layerBack(lt *layerTape[F], lw, lg *layerWeights[F], dh2, detab0 []F) []F {
	c, b, d := t.c, t.b, t.c.Hidden
	da := make([]F, b.n*d)
	for _, vn := range b.vn {
		if vn >= 0 { // a virtual node's state is its attention output
			copy(da[vn*d:(vn+1)*d], dh2[vn*d:(vn+1)*d])
			clear(dh2[vn*d : (vn+1)*d])
		}
	}
	dv := layerNormBack(dh2, lt.xhat2, lt.inv2, lw.LN2G, lg.LN2G, lg.LN2B, b.n, d)
	df1 := linearBack(mul(lt.f1, lt.mask1), lw.W2, mul(dv, lt.mask2), lg.W2, lg.B2, b.n, 2*d, d, true)
	df1 = mul(df1, lt.mask1)
	reluBack(df1, lt.f1)
	dh1 := addInto(linearBack(lt.h1, lw.W1, df1, lg.W1, lg.B1, b.n, d, 2*d, true), dv)
	du := layerNormBack(dh1, lt.xhat1, lt.inv1, lw.LN1G, lg.LN1G, lg.LN1B, b.n, d)
	var dhLocal []F
	if c.Local {
		dul := layerNormBack(dh1, lt.xhat3, lt.inv3, lw.LN3G, lg.LN3G, lg.LN3B, b.n, d)
		dm, dlf := localMessagesBack(b, d, lt.lm, lt.lf, mul(dul, lt.maskL))
		dhLocal = addInto(linearBack(lt.hin, lw.M, dm, lg.M, nil, b.n, d, d, true), dul)
		addInto(detab0[:b.nRel*d], linearBack(t.etab0[:b.nRel*d], lw.EM, dlf, lg.EM, nil, b.nRel, d, d, true))
	}
	addInto(da, mul(du, lt.maskA))
	dq, dk, dvv, detab := edgeAttentionBack(b, c.Heads, d, lt.q, lt.k, lt.v, lt.etab, lt.a, da)
	dh := du
	if dhLocal != nil {
		addInto(dh, dhLocal)
	}
	addInto(dh, linearBack(lt.hin, lw.Q, dq, lg.Q, nil, b.n, d, d, true))
	addInto(dh, linearBack(lt.hin, lw.K, dk, lg.K, nil, b.n, d, d, true))
	addInto(dh, linearBack(lt.hin, lw.V, dvv, lg.V, nil, b.n, d, d, true))
	addInto(detab0, linearBack(t.etab0, lw.E, detab, lg.E, nil, b.nRel+extraRows, d, d, true))
	return dh
}

// edgeTableBack sends the edge-feature gradients to the relation
// projection and the learned rows.
func (t *tape[F]) edgeTableBack(g *Weights[F], detab0 []F) {
	c, b, d := t.c, t.b, t.c.Hidden
	linearBack(b.xr, nil, detab0[:b.nRel*d], g.RelW, g.RelB, b.nRel, c.relIn(), d, false)
	for r, row := range b.relEmb {
		if row >= 0 {
			addInto(g.RelEmb[int(row)*d:(int(row)+1)*d], detab0[r*d:(r+1)*d])
		}
	}
	if c.Cycles > 0 {
		addInto(g.ExpT, detab0[(b.nRel+rowExp)*d:(b.nRel+rowExp+1)*d])
	}
	if c.Virtual {
		addInto(g.VNIn, detab0[(b.nRel+rowToVN)*d:(b.nRel+rowToVN+1)*d])
		addInto(g.VNOut, detab0[(b.nRel+rowFromVN)*d:(b.nRel+rowFromVN+1)*d])
	}
}

// embedNodesBack is the backward of embedNodes given dh, the gradient of
// the first layer's input.
func (t *tape[F]) embedNodesBack(w, g *Weights[F], dh []F) {
	c, b, d := t.c, t.b, t.c.Hidden
	if c.Words > 0 { // every row of a graph got its bag of words
		for gi, words := range b.words {
			if len(words) == 0 {
				continue
			}
			du := make([]F, d)
			for i := b.first[gi]; i < b.graphEnd(gi); i++ {
				addInto(du, dh[i*d:(i+1)*d])
			}
			for _, wd := range words {
				row := g.WordEmb[int(wd)*d : (int(wd)+1)*d]
				for j := range row {
					row[j] += du[j] / F(len(words))
				}
			}
		}
	}
	if c.Virtual {
		dvs := make([]F, len(b.vn)*d)
		for gi, v := range b.vn {
			copy(dvs[gi*d:(gi+1)*d], dh[v*d:(v+1)*d])
			clear(dh[v*d : (v+1)*d])
		}
		linearBack(b.xq, nil, dvs, g.VNW, g.VNB, len(b.vn), c.In, d, false)
	}
	dh0 := dh
	if c.HopGate {
		dh0 = append([]F(nil), dh...)
		dgp := make([]F, b.n*d)
		dhop := make([]F, b.n*d)
		for i, x := range dh {
			gt := t.gate[i]
			dhop[i] = x * gt
			dgp[i] = x * t.hopE[i] * gt * (1 - gt)
		}
		dgin := linearBack(t.gin, w.GateW, dgp, g.GateW, g.GateB, b.n, 2*d, d, true)
		for i := 0; i < b.n; i++ {
			addInto(dh0[i*d:(i+1)*d], dgin[i*2*d:i*2*d+d])
			addInto(dhop[i*d:(i+1)*d], dgin[i*2*d+d:(i+1)*2*d])
			addInto(g.HopEmb[b.hop[i]*d:(b.hop[i]+1)*d], dhop[i*d:(i+1)*d])
		}
	}
	linearBack(b.xn, nil, dh0, g.InW, g.InB, b.n, c.nodeIn(), d, false)
}
