package retrieve

import (
	"context"

	"github.com/gleaner-rag/gleaner/index"
)

func init() {
	Must(Register(Def[HybridOptions]{Name: "hybrid", Summary: "the hybrid first stage on its own: BM25 and vector search fused",
		Defaults: DefaultHybrid, Params: (*HybridOptions).Params, Filters: true,
		Tune: &Tuning{Axes: []TuneAxis{{Setting: "hybrid-weight", Values: []string{"0.8", "0.5", "0.3"}}}},
		New: func(ix *index.Index, env Env, o HybridOptions) (Method, error) {
			st, err := NewStage(ix, env.Backend, StageOptions{Kind: StageHybrid, Hybrid: o})
			if err != nil {
				return nil, err
			}
			return hybrid{st}, nil
		}}))
}

// hybrid ranks by the hybrid first stage alone, so the fusion every graph
// method can start from is evaluated on its own.
type hybrid struct{ st *Stage }

func (m hybrid) Name() string { return "hybrid" }

func (m hybrid) Retrieve(ctx context.Context, q Query, k int) ([]Hit, error) {
	return m.st.Run(ctx, q, k)
}
