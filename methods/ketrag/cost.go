package ketrag

// Cost is the LLM extraction cost of a skeleton at one β.
type Cost struct {
	Beta         float64 `json:"beta"`
	Core         int     `json:"core_chunks"`
	Calls        int     `json:"calls"`
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"` // -1: unknown (no LLM extracted this skeleton)
}

// ChatOverheadTokens is what OpenAI's chat format adds to one
// two-message request: 3 tokens per message, 1 per role, 3 to prime the
// reply.
const ChatOverheadTokens = 2*(3+1) + 3

// Costs estimates, from the stored token counts and PageRank, the calls
// and tokens an LLM extractor would spend on the skeleton at each β (same
// selection, seed and unit size as built): one call per unit, each sending
// the prompt (promptTokens), the unit and the chat overhead. Output tokens
// scale the output per unit-text token the LLM's accounted replies show
// when one extracted this skeleton; -1 otherwise (what a model writes
// cannot be known without one). β = 1 is GraphRAG's cost of extracting
// every chunk.
func (k *KETRAG) Costs(betas []float64, promptTokens int) []Cost {
	m := k.Meta
	perToken := -1.0
	if m.Usage.Calls+m.Usage.CacheHits > 0 && m.UnitTextTokens > 0 {
		perToken = float64(m.Usage.OutputTokens+m.Usage.CachedOutput) / float64(m.UnitTextTokens)
	}
	var rows []Cost
	for _, b := range betas {
		core := coreOf(k.RankOrder, b, m.Selection, m.Seed)
		ptr := unitBounds(core, k.NodeTokens, m.UnitTokens, m.Chunked, 1)
		text := 0
		for u := 0; u+1 < len(ptr); u++ {
			part := core[ptr[u]:ptr[u+1]]
			for i, c := range part {
				text += int(k.NodeTokens[c])
				if i > 0 && !m.Chunked {
					text++ // the line break between passages
				}
			}
		}
		calls := len(ptr) - 1
		out := -1
		if perToken >= 0 {
			out = int(perToken*float64(text) + 0.5)
		}
		rows = append(rows, Cost{Beta: b, Core: len(core), Calls: calls,
			InputTokens: text + calls*(promptTokens+ChatOverheadTokens), OutputTokens: out})
	}
	return rows
}
