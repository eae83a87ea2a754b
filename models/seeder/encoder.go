package seeder

import (
	"context"
	"errors"
	"fmt"

	"github.com/gleaner-rag/gleaner/engine"
)

// Encoder is a trained model's forward pass (inference: no dropout) as
// engine ops on one backend, so the cpu engine, a GPU or its emulation
// runs it. The weights are bound once; each Forward allocates its own
// activations and frees them before it returns, so an Encoder is safe for
// concurrent use. Training keeps the generic float32/float64 network of
// forward.go, whose backward passes are checked against finite
// differences; the two forwards are checked against each other.
type Encoder struct {
	c        Config
	b        engine.Backend
	w        boundWeights
	pathSkip []float32 // host-side: added to the n downloaded head values
	owned    []engine.Buffer
}

// boundWeights are the model's tensors on the backend. extra holds the
// expander's and the virtual node's edge-feature rows (zeros for parts
// the config turns off), so the edge table is one copy.
type boundWeights struct {
	inW, inB, hopEmb, gateW, gateB engine.Buffer
	vnW, vnB, relW, relB, extra    engine.Buffer
	wordEmb, relEmb                engine.Buffer
	layers                         []boundLayer
	polW1, polB1, polW2, polB2     engine.Buffer
	scW1, scB1, scW2, scB2         engine.Buffer
}

type boundLayer struct {
	q, k, v, e, ln1g, ln1b, w1, b1, w2, b2, ln2g, ln2b engine.Buffer
	m, em, ln3g, ln3b                                  engine.Buffer
}

// Bind uploads m's weights to b (a host backend aliases them). It refuses
// a backend without the encoder's ops (engine.EncoderOps) before any
// upload.
func (m *Model) Bind(b engine.Backend) (*Encoder, error) {
	if b == nil {
		return nil, errors.New("seeder: Bind needs a backend")
	}
	if err := probeEncoderOps(b); err != nil {
		return nil, err
	}
	e := &Encoder{c: m.Config, b: b, pathSkip: m.W.PathSkip}
	var err error
	up := func(x []float32) engine.Buffer {
		if err != nil || x == nil {
			return nil
		}
		var buf engine.Buffer
		if buf, err = b.Bind(x); err == nil {
			e.owned = append(e.owned, buf)
		}
		return buf
	}
	e.bindWeights(m.W, up)
	if err != nil {
		e.Close()
		return nil, fmt.Errorf("seeder: binding the weights on %s: %w", b.Name(), err)
	}
	return e, nil
}

func (e *Encoder) bindWeights(w *Weights[float32], up func([]float32) engine.Buffer) {
	d := e.c.Hidden
	extra := make([]float32, extraRows*d)
	copy(extra[rowExp*d:], w.ExpT)
	copy(extra[rowToVN*d:], w.VNIn)
	copy(extra[rowFromVN*d:], w.VNOut)
	e.w = boundWeights{
		inW: up(w.InW), inB: up(w.InB), hopEmb: up(w.HopEmb), gateW: up(w.GateW), gateB: up(w.GateB),
		vnW: up(w.VNW), vnB: up(w.VNB), relW: up(w.RelW), relB: up(w.RelB), extra: up(extra),
		wordEmb: up(w.WordEmb), relEmb: up(w.RelEmb),
		polW1: up(w.PolW1), polB1: up(w.PolB1), polW2: up(w.PolW2), polB2: up(w.PolB2),
		scW1: up(w.ScW1), scB1: up(w.ScB1), scW2: up(w.ScW2), scB2: up(w.ScB2),
	}
	for _, l := range w.Layers {
		e.w.layers = append(e.w.layers, boundLayer{
			q: up(l.Q), k: up(l.K), v: up(l.V), e: up(l.E), ln1g: up(l.LN1G), ln1b: up(l.LN1B),
			w1: up(l.W1), b1: up(l.B1), w2: up(l.W2), b2: up(l.B2), ln2g: up(l.LN2G), ln2b: up(l.LN2B),
			m: up(l.M), em: up(l.EM), ln3g: up(l.LN3G), ln3b: up(l.LN3B),
		})
	}
}

// Close frees the weights on the backend; the Encoder must not be used
// after.
func (e *Encoder) Close() {
	for _, buf := range e.owned {
		e.b.Free(buf)
	}
	e.owned = nil
}

// Backend is the backend the encoder runs on.
func (e *Encoder) Backend() engine.Backend { return e.b }

// probeEncoderOps refuses a backend that lacks one of the encoder's
// optional ops (engine.ErrNotImplemented), naming it; any other failure
// of the tiny probe is returned as it is.
func probeEncoderOps(b engine.Backend) error {
	var bufs []engine.Buffer
	defer func() {
		for _, x := range bufs {
			b.Free(x)
		}
	}()
	up := func(x any) (engine.Buffer, error) {
		buf, err := b.Bind(x)
		if err == nil {
			bufs = append(bufs, buf)
		}
		return buf, err
	}
	x, err1 := up([]float32{1, 1})
	out, err2 := b.Alloc(engine.F32, 2) // written by the probe: not a (read-only) bound buffer
	if err2 == nil {
		bufs = append(bufs, out)
	}
	ptr, err3 := up([]int64{0, 0})
	idx, err4 := up([]int32{0})
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return fmt.Errorf("seeder: probing backend %s: %w", b.Name(), err)
	}
	for _, p := range []struct {
		name string
		err  error
	}{
		{"Mul", b.Mul(engine.MulOp{N: 1, X: x, Y: x, Out: out})},
		{"CopyRows", b.CopyRows(engine.CopyRowsOp{N: 1, Cols: 1, X: x, Out: out})},
		{"EdgeMessage", b.EdgeMessage(engine.EdgeMessageOp{N: 1, D: 1, Rows: 1, Ptr: ptr, Src: idx, ERow: idx, M: x, F: x, Out: out})},
	} {
		switch {
		case errors.Is(p.err, engine.ErrNotImplemented):
			return fmt.Errorf("seeder: backend %s cannot run the encoder: %s: %w", b.Name(), p.name, p.err)
		case p.err != nil:
			return fmt.Errorf("seeder: probing backend %s: %s: %w", b.Name(), p.name, p.err)
		}
	}
	return nil
}

// Forward runs the encoder over gs as one batch (their disjoint union)
// and returns each graph's policy logits and scores, as Model.Forward does
// on the host.
func (e *Encoder) Forward(ctx context.Context, gs []*Graph) ([]Output, error) {
	bt, err := newBatch[float32](e.c, gs)
	if err != nil {
		return nil, err
	}
	out := make([]Output, len(gs))
	if bt.n == 0 {
		return out, nil
	}
	be, release, err := engine.OnQueue(e.b) // concurrent batches overlap on a device with queues
	if err != nil {
		return nil, err
	}
	defer release()
	r := &run{e: e, b: be, bt: bt, a: arena{b: be}}
	defer r.a.free()
	p, s, err := r.forward(ctx)
	if err != nil {
		return nil, fmt.Errorf("seeder: encoder on %s: %w", e.b.Name(), err)
	}
	for gi, g := range gs {
		lo, hi := bt.first[gi], bt.first[gi]+g.Nodes()
		out[gi] = Output{Policy: p[lo:hi], Score: s[lo:hi]}
	}
	return out, nil
}

// arena allocates a forward pass's buffers and frees them together; the
// first error sticks and later requests return nil.
type arena struct {
	b    engine.Backend
	bufs []engine.Buffer
	err  error
}

func (a *arena) keep(buf engine.Buffer, err error) engine.Buffer {
	if err != nil {
		a.err = err
		return nil
	}
	a.bufs = append(a.bufs, buf)
	return buf
}

// f32 allocates n values (at least one: some backends refuse empty
// buffers).
func (a *arena) f32(n int) engine.Buffer {
	if a.err != nil {
		return nil
	}
	return a.keep(a.b.Alloc(engine.F32, max(n, 1)))
}

// upload copies host data (padded to one element when empty).
func upload[T engine.Element](a *arena, x []T) engine.Buffer {
	if a.err != nil {
		return nil
	}
	if len(x) == 0 {
		x = make([]T, 1)
	}
	return a.keep(engine.Upload(a.b, x))
}

func (a *arena) free() {
	for _, buf := range a.bufs {
		a.b.Free(buf)
	}
	a.bufs = nil
}
