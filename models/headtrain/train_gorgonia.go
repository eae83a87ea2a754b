//go:build !cuda

package headtrain

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gleaner-rag/gleaner/models"
)

// fit trains the network with gorgonia (Train has checked the arguments).
func fit(ctx context.Context, groups []Group, in, k int, o Options) (*Result, error) {
	net, err := newNet(in, k, o)
	if err != nil {
		return nil, err
	}
	defer net.vm.Close()
	res := &Result{}
	rng := rand.New(rand.NewPCG(o.Seed, 17))
	order := make([]int, len(groups))
	for i := range order {
		order[i] = i
	}
	for ep := 0; ep < o.Epochs; ep++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		loss, err := net.epoch(groups, order, in, k)
		if err != nil {
			return nil, err
		}
		res.Losses = append(res.Losses, loss)
	}
	res.Head, err = net.head(in)
	return res, err
}

// net is the gorgonia graph: scores = tanh(X·W1 + b1)·w2 + b2 for a batch
// of B·(1+K) latents, reshaped to B×(1+K), softmax cross-entropy against
// column 0.
type net struct {
	g              *G.ExprGraph
	x              *G.Node
	w1, b1, w2, b2 *G.Node
	loss           *G.Node
	lossVal        G.Value
	vm             G.VM
	solver         G.Solver
	batch          int
}

func newNet(in, k int, o Options) (*net, error) {
	g := G.NewGraph()
	n := &net{g: g, batch: o.Batch}
	rows := o.Batch * (1 + k)
	n.x = G.NewMatrix(g, tensor.Float64, G.WithShape(rows, in), G.WithName("x"))
	n.w1 = G.NewMatrix(g, tensor.Float64, G.WithShape(in, o.Hidden), G.WithName("w1"), G.WithInit(seeded(o.Seed, 0.3)))
	n.b1 = G.NewVector(g, tensor.Float64, G.WithShape(o.Hidden), G.WithName("b1"), G.WithInit(G.Zeroes()))
	n.w2 = G.NewMatrix(g, tensor.Float64, G.WithShape(o.Hidden, 1), G.WithName("w2"), G.WithInit(seeded(o.Seed+1, 0.3)))
	n.b2 = G.NewScalar(g, tensor.Float64, G.WithName("b2"), G.WithValue(0.0))
	h := G.Must(G.Tanh(G.Must(G.BroadcastAdd(G.Must(G.Mul(n.x, n.w1)), n.b1, nil, []byte{0}))))
	s := G.Must(G.Reshape(G.Must(G.Add(G.Must(G.Mul(h, n.w2)), n.b2)), tensor.Shape{o.Batch, 1 + k}))
	logp := G.Must(G.Log(G.Must(G.SoftMax(s))))
	pos := G.Must(G.Slice(logp, nil, G.S(0)))
	n.loss = G.Must(G.Neg(G.Must(G.Mean(pos))))
	G.Read(n.loss, &n.lossVal)
	if _, err := G.Grad(n.loss, n.w1, n.b1, n.w2, n.b2); err != nil {
		return nil, fmt.Errorf("headtrain: gradient: %w", err)
	}
	n.vm = G.NewTapeMachine(g, G.BindDualValues(n.w1, n.b1, n.w2, n.b2))
	n.solver = G.NewAdamSolver(G.WithLearnRate(o.LearnRate))
	return n, nil
}

// seeded initialises a matrix uniformly in ±scale from a fixed seed.
func seeded(seed uint64, scale float64) G.InitWFn {
	return func(dt tensor.Dtype, s ...int) interface{} {
		rng := rand.New(rand.NewPCG(seed, 99))
		n := 1
		for _, d := range s {
			n *= d
		}
		v := make([]float64, n)
		for i := range v {
			v[i] = (2*rng.Float64() - 1) * scale
		}
		return v
	}
}

func (n *net) epoch(groups []Group, order []int, in, k int) (float64, error) {
	var total float64
	steps := 0
	buf := make([]float64, n.batch*(1+k)*in)
	for lo := 0; lo+n.batch <= len(order); lo += n.batch {
		for b, gi := range order[lo : lo+n.batch] {
			for j, x := range groups[gi].Latents {
				buf[b*(1+k)*in+j] = float64(x)
			}
		}
		if err := G.Let(n.x, tensor.New(tensor.WithShape(n.batch*(1+k), in), tensor.WithBacking(append([]float64(nil), buf...)))); err != nil {
			return 0, err
		}
		if err := n.vm.RunAll(); err != nil {
			return 0, err
		}
		total += n.lossVal.Data().(float64)
		if err := n.solver.Step(G.NodesToValueGrads(G.Nodes{n.w1, n.b1, n.w2, n.b2})); err != nil {
			return 0, err
		}
		n.vm.Reset()
		steps++
	}
	if steps == 0 {
		return 0, errors.New("headtrain: no full batch")
	}
	return total / float64(steps), nil
}

// head copies the trained parameters out (gorgonia's w1 is In×Hidden; the
// head stores Dense as Hidden×In).
func (n *net) head(in int) (*models.Head, error) {
	w1 := n.w1.Value().Data().([]float64)
	b1 := n.b1.Value().Data().([]float64)
	w2 := n.w2.Value().Data().([]float64)
	hidden := len(b1)
	h := &models.Head{In: in, Hidden: hidden, Dense: make([]float32, hidden*in), DenseB: make([]float32, hidden), Out: make([]float32, hidden)}
	for k := 0; k < in; k++ {
		for j := 0; j < hidden; j++ {
			h.Dense[j*in+k] = float32(w1[k*hidden+j])
		}
	}
	for j := 0; j < hidden; j++ {
		h.DenseB[j], h.Out[j] = float32(b1[j]), float32(w2[j])
	}
	h.OutB = float32(n.b2.Value().Data().(float64))
	return h, h.Validate()
}
