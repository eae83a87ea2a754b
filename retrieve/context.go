package retrieve

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/gleaner-rag/gleaner/index"
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

// checkBudget refuses a budget outside [1, MaxContextBudget].
func checkBudget(budget int) error {
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
	if err := checkBudget(budget); err != nil {
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
	if err := checkBudget(budget); err != nil {
		return nil, err
	}
	tok, err := tiktoken.CL100K()
	if err != nil {
		return nil, err
	}
	t := newTable(tok, SourcesHeader, budget)
	out := &LLMContext{}
	for _, n := range nodes {
		if !t.add(chunkRow(ix, len(out.Nodes), n)) {
			break
		}
		out.Nodes = append(out.Nodes, n)
	}
	out.Text, out.Tokens = t.finish()
	out.Nodes = out.Nodes[:t.rows]
	out.Sections = []ContextSection{{Name: "sources", Rows: t.rows, Tokens: out.Tokens}}
	return out, nil
}

// chunkRow is node n's row in a sources table at 0-based position i,
// numbered as KET-RAG numbers its rows (chunk_1, chunk_2, …).
func chunkRow(ix *index.Index, i int, n int32) string {
	return "chunk_" + strconv.Itoa(i+1) + "|" + ix.Text(int(n)) + "\n"
}

// table accumulates rows under a header while the token count, summed
// row by row as GraphRAG sums it, stays within the budget; finish then
// checks the joined text itself and drops rows from the end while it is
// over (tokens can merge across a row boundary), so the result never
// exceeds the budget.
type table struct {
	tok    *tiktoken.Encoder
	budget int
	lines  []string
	counts []int
	used   int
	rows   int
}

func newTable(tok *tiktoken.Encoder, header string, budget int) *table {
	t := &table{tok: tok, budget: budget}
	if n := tok.Count(header); n <= budget {
		t.lines, t.counts, t.used = []string{header}, []int{n}, n
	}
	return t
}

// add appends a row if it fits; false when it does not (or no header fit).
func (t *table) add(row string) bool { return t.addCounted(row, -1) }

// addCounted is add with the row's token count known (n < 0: count it).
func (t *table) addCounted(row string, n int) bool {
	if len(t.lines) == 0 {
		return false
	}
	if n < 0 {
		n = t.tok.Count(row)
	}
	if t.used+n > t.budget {
		return false
	}
	t.lines, t.counts = append(t.lines, row), append(t.counts, n)
	t.used += n
	t.rows++
	return true
}

// dropLast removes the last row.
func (t *table) dropLast() {
	t.used -= t.counts[len(t.counts)-1]
	t.lines, t.counts, t.rows = t.lines[:len(t.lines)-1], t.counts[:len(t.counts)-1], t.rows-1
}

// text joins the table as summed (no recount); a table without rows is
// empty.
func (t *table) text() string {
	if t.rows == 0 {
		return ""
	}
	return strings.Join(t.lines, "")
}

// finish returns the table's text and exact token count; a table without
// rows is empty.
func (t *table) finish() (string, int) {
	for t.rows > 0 {
		s := strings.Join(t.lines, "")
		if n := t.tok.Count(s); n <= t.budget {
			return s, n
		}
		t.dropLast()
	}
	return "", 0
}

// itoa is strconv.Itoa for table ids.
func itoa(i int) string { return strconv.Itoa(i) }

// tokenCache remembers the token counts of rows that recur across queries
// (chunk, entity and text-unit rows); safe for concurrent use.
type tokenCache struct{ n []atomic.Int32 } // count+1; 0: not yet counted

func newTokenCache(n int) *tokenCache { return &tokenCache{n: make([]atomic.Int32, n)} }

// count returns the tokens of row number i, counting it once.
func (c *tokenCache) count(tok *tiktoken.Encoder, i int, row string) int {
	if v := c.n[i].Load(); v > 0 {
		return int(v - 1)
	}
	v := tok.Count(row)
	c.n[i].Store(int32(v + 1))
	return v
}
