package retrieve

import (
	"context"

	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/kernels"
)

func init() { mustRegister("hybrid", newHybrid) }

// hybrid ranks by the hybrid first stage alone (Options.Hybrid), so the
// fusion every graph method can start from is evaluated on its own.
type hybrid struct{ st *stage }

func newHybrid(ix *index.Index, o Options) (Method, error) {
	o.FirstStage = StageHybrid
	st, err := newStage(ix, o)
	if err != nil {
		return nil, err
	}
	return &hybrid{st}, nil
}

func (m *hybrid) Name() string { return "hybrid" }

func (m *hybrid) Retrieve(ctx context.Context, q Query, k int) ([]kernels.Hit, error) {
	return m.st.run(ctx, q, k)
}
