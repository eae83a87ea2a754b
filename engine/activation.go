package engine

// Activation is an elementwise function applied in a GEMM epilogue or by
// Activate.
type Activation uint8

// Activations.
const (
	ActNone Activation = iota
	ActGELU            // exact (erf) GELU: 0.5·x·(1 + erf(x/√2))
	ActTanh
	ActReLU
)

func (a Activation) String() string {
	return [...]string{"none", "gelu", "tanh", "relu"}[a]
}
