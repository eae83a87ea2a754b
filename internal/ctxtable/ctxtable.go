// Package ctxtable assembles the token-budgeted tables of an LLM context
// the way GraphRAG's table builders do (rows summed one by one while they
// fit, the joined text checked at the end), for retrieve's FillContext and
// KET-RAG's channels.
package ctxtable

import (
	"strings"
	"sync/atomic"

	"github.com/gleaner-rag/gleaner/models/tiktoken"
)

// Table accumulates rows under a header while the token count, summed row
// by row as GraphRAG sums it, stays within Budget; Finish then checks the
// joined text itself and drops rows from the end while it is over (tokens
// can merge across a row boundary), so the result never exceeds the
// budget. Lines[0] is the header; Counts are each line's tokens.
type Table struct {
	Tok    *tiktoken.Encoder
	Budget int
	Lines  []string
	Counts []int
	Used   int // tokens summed so far
	Rows   int // rows after the header
}

// New starts a table whose header counts against budget; a header that
// does not fit leaves a table that takes no rows.
func New(tok *tiktoken.Encoder, header string, budget int) *Table {
	t := &Table{Tok: tok, Budget: budget}
	if n := tok.Count(header); n <= budget {
		t.Lines, t.Counts, t.Used = []string{header}, []int{n}, n
	}
	return t
}

// Add appends a row if it fits; false when it does not (or no header fit).
func (t *Table) Add(row string) bool { return t.AddCounted(row, -1) }

// AddCounted is Add with the row's token count known (n < 0: count it).
func (t *Table) AddCounted(row string, n int) bool {
	if len(t.Lines) == 0 {
		return false
	}
	if n < 0 {
		n = t.Tok.Count(row)
	}
	if t.Used+n > t.Budget {
		return false
	}
	t.Lines, t.Counts = append(t.Lines, row), append(t.Counts, n)
	t.Used += n
	t.Rows++
	return true
}

// DropLast removes the last row.
func (t *Table) DropLast() {
	t.Used -= t.Counts[len(t.Counts)-1]
	t.Lines, t.Counts, t.Rows = t.Lines[:len(t.Lines)-1], t.Counts[:len(t.Counts)-1], t.Rows-1
}

// Text joins the table as summed (no recount); a table without rows is
// empty.
func (t *Table) Text() string {
	if t.Rows == 0 {
		return ""
	}
	return strings.Join(t.Lines, "")
}

// Finish returns the table's text and exact token count; a table without
// rows is empty.
func (t *Table) Finish() (string, int) {
	for t.Rows > 0 {
		s := strings.Join(t.Lines, "")
		if n := t.Tok.Count(s); n <= t.Budget {
			return s, n
		}
		t.DropLast()
	}
	return "", 0
}

// TokenCache remembers the token counts of rows that recur across queries
// (chunk, entity and text-unit rows); safe for concurrent use.
type TokenCache struct{ n []atomic.Int32 } // count+1; 0: not yet counted

// NewTokenCache holds counts for rows 0..n−1.
func NewTokenCache(n int) *TokenCache { return &TokenCache{n: make([]atomic.Int32, n)} }

// Count returns the tokens of row number i, counting it once.
func (c *TokenCache) Count(tok *tiktoken.Encoder, i int, row string) int {
	if v := c.n[i].Load(); v > 0 {
		return int(v - 1)
	}
	v := tok.Count(row)
	c.n[i].Store(int32(v + 1))
	return v
}
