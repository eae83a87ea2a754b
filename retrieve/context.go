package retrieve

import (
	"context"
	"fmt"
	"strconv"

	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/internal/ctxtable"
	"github.com/gleaner-rag/gleaner/models/tiktoken"
)

// LLMContext is the text a method hands an answering LLM, with its size
// in cl100k_base tokens and the index nodes whose text it quotes, in order.
type LLMContext struct {
	Text     string
	Tokens   int
	Nodes    []int32
	Sections []ContextSection // the tables it joins, in order
}

// ContextSection describes one table of a context.
type ContextSection struct {
	Name   string
	Rows   int
	Tokens int
}

// ContextBuilder is a method that assembles its own context under a token
// budget (ketrag). Other methods' contexts are their top nodes
// (FillContext).
type ContextBuilder interface {
	BuildContext(ctx context.Context, q Query, budget int) (*LLMContext, error)
}

// MaxContextBudget bounds a context's size in tokens: far beyond any
// model's window, and small enough that budget arithmetic cannot overflow.
const MaxContextBudget = 1 << 30

// CheckBudget refuses a budget outside [1, MaxContextBudget].
func CheckBudget(budget int) error {
	if budget < 1 || budget > MaxContextBudget {
		return fmt.Errorf("retrieve: context budget must be in [1, %d] tokens, got %d", MaxContextBudget, budget)
	}
	return nil
}

// SourcesHeader heads a table of quoted chunks, GraphRAG's way.
const SourcesHeader = "-----Text sources-----\nid|text\n"

// BuildContext returns m's context for q within budget tokens: its own
// when m is a ContextBuilder, else FillContext over its top depth nodes.
func BuildContext(ctx context.Context, m Method, ix *index.Index, q Query, budget, depth int) (*LLMContext, error) {
	if err := CheckBudget(budget); err != nil {
		return nil, err
	}
	if cb, ok := m.(ContextBuilder); ok {
		return cb.BuildContext(ctx, q, budget)
	}
	hits, err := m.Retrieve(ctx, q, depth)
	if err != nil {
		return nil, err
	}
	nodes := make([]int32, len(hits))
	for i, h := range hits {
		nodes[i] = h.Index
	}
	return FillContext(ix, nodes, budget)
}

// FillContext quotes nodes in order as "chunk_<rank>|text" rows under
// SourcesHeader while the whole stays within budget tokens; a node that
// does not fit ends the table, as GraphRAG's table builders stop.
func FillContext(ix *index.Index, nodes []int32, budget int) (*LLMContext, error) {
	if err := CheckBudget(budget); err != nil {
		return nil, err
	}
	tok, err := tiktoken.CL100K()
	if err != nil {
		return nil, err
	}
	t := ctxtable.New(tok, SourcesHeader, budget)
	out := &LLMContext{}
	for _, n := range nodes {
		if !t.Add(ChunkRow(ix, len(out.Nodes), n)) {
			break
		}
		out.Nodes = append(out.Nodes, n)
	}
	out.Text, out.Tokens = t.Finish()
	out.Nodes = out.Nodes[:t.Rows]
	out.Sections = []ContextSection{{Name: "sources", Rows: t.Rows, Tokens: out.Tokens}}
	return out, nil
}

// ChunkRow is node n's row in a sources table at 0-based position i,
// numbered as KET-RAG numbers its rows (chunk_1, chunk_2, …).
func ChunkRow(ix *index.Index, i int, n int32) string {
	return "chunk_" + strconv.Itoa(i+1) + "|" + ix.Text(int(n)) + "\n"
}
