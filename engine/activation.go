package engine

import "fmt"

// Activation is an elementwise function applied in a GEMM epilogue or by
// Activate.
type Activation uint8

// Activations.
const (
	ActNone Activation = iota
	ActGELU            // exact (erf) GELU: 0.5·x·(1 + erf(x/√2))
	ActTanh
	ActReLU
	ActSigmoid // 1/(1 + e^−x): SeedER's hop gate
)

func (a Activation) String() string {
	if int(a) < len(actNames) {
		return actNames[a]
	}
	return fmt.Sprintf("activation(%d)", uint8(a))
}

var actNames = [...]string{"none", "gelu", "tanh", "relu", "sigmoid"}
