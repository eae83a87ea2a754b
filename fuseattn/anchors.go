package fuseattn

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"

	"github.com/gleaner-rag/gleaner/models/lexical"
)

// TokenCounter counts a text's tokens in the decoder's vocabulary
// (tiktoken.Encoder and the decoder's tokenizer both are one).
type TokenCounter interface {
	Count(text string) int
}

// AnchorOptions configure FuseRAG's explicit anchors (docs/methods.md §7,
// stage 2b).
type AnchorOptions struct {
	// Budget is τ, the anchors' size in decoder tokens (≥ 1; the paper
	// studies 32, 64 and 128).
	Budget int
	// LinkWeight is λ_link, the weight of a clause's links to the other
	// retrieved passages (≥ 0).
	LinkWeight float64
	// MinClauseWords: a sentence is also split at a comma when both sides
	// keep at least this many words (≥ 1; a very large value splits at
	// sentence ends and semicolons only).
	MinClauseWords int
	// Titles prefixes each anchor with its passage's title ("Title: …"),
	// counted in the budget.
	Titles bool
}

// MaxAnchorBudget bounds τ (the knapsack runs at τ + 1).
const MaxAnchorBudget = MaxKnapsackCapacity - 1

// DefaultAnchorOptions: τ = 64 (the paper's recommended balance); the
// rest chosen on the declared 2Wiki dev questions (benchmarks/fuserag):
// titles on, commas split clauses of at least 4 words, and λ_link = 0 —
// every λ_link > 0 tried (0.25–2) lowered the share of answers in the
// anchors, as 2Wiki's titles share generic words ("film") with many
// clauses.
func DefaultAnchorOptions() AnchorOptions {
	return AnchorOptions{Budget: 64, LinkWeight: 0, MinClauseWords: 4, Titles: true}
}

// Validate checks the options.
func (o AnchorOptions) Validate() error {
	switch {
	case o.Budget < 1 || o.Budget > MaxAnchorBudget:
		return fmt.Errorf("fuseattn: anchor budget τ must be in [1, %d] tokens, got %d", MaxAnchorBudget, o.Budget)
	case !(o.LinkWeight >= 0) || math.IsInf(o.LinkWeight, 1):
		return fmt.Errorf("fuseattn: anchor link weight λ_link must be finite and ≥ 0, got %v", o.LinkWeight)
	case o.MinClauseWords < 1:
		return fmt.Errorf("fuseattn: anchor clauses need at least 1 word, got %d", o.MinClauseWords)
	}
	return nil
}

// Passage is one retrieved evidence unit.
type Passage struct {
	Title, Text string
}

// Clause is one candidate anchor.
type Clause struct {
	Text    string  // as it appears in the anchors (with "Title: " when Titles)
	Passage int     // index into the passages
	Score   float64 // r(c, q)
	Tokens  int     // its size in decoder tokens
}

// AnchorSet is S_q: the chosen clauses, in passage then text order, and
// their joined text.
type AnchorSet struct {
	Text       string
	Tokens     int
	Score      float64
	Chosen     []Clause
	Candidates int // distinct clauses scored
}

// Anchors splits the passages into clauses, scores each with r(c, q) =
// |W(c) ∩ W(q)| + λ_link·Links(c) — W the content words (gleaner's
// analyzer minus question words), Links(c) the number of other passages
// whose title shares a content word with c — drops repeated clauses (same
// content words), and chooses complete clauses by 0-1 knapsack over their
// token counts (each with its joining newline) within τ. The chosen
// clauses are joined by newlines; should the joined text still tokenize
// longer than τ (tokens merging across a join), the clause with the lowest
// score per token is dropped until it fits.
func Anchors(query string, passages []Passage, o AnchorOptions, tok TokenCounter) (*AnchorSet, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if tok == nil {
		return nil, fmt.Errorf("fuseattn: anchors need the decoder's token counter")
	}
	cands := scoreClauses(query, passages, o)
	weights, values := make([]int, len(cands)), make([]float64, len(cands))
	for i := range cands {
		cands[i].Tokens = tok.Count(cands[i].Text)
		// a clause weighs its tokens with the newline that joins it, so the
		// knapsack's budget is the joined text's (τ + 1: the last clause's
		// newline is not written)
		weights[i], values[i] = tok.Count(cands[i].Text+"\n"), cands[i].Score
	}
	picked, _, err := Knapsack(weights, values, o.Budget+1)
	if err != nil {
		return nil, err
	}
	set := &AnchorSet{Candidates: len(cands)}
	for _, i := range picked {
		set.Chosen = append(set.Chosen, cands[i])
	}
	for {
		set.join(tok)
		if set.Tokens <= o.Budget || len(set.Chosen) == 0 {
			return set, nil
		}
		set.dropWorst()
	}
}

func (s *AnchorSet) join(tok TokenCounter) {
	parts := make([]string, len(s.Chosen))
	s.Score = 0
	for i, c := range s.Chosen {
		parts[i] = c.Text
		s.Score += c.Score
	}
	s.Text = strings.Join(parts, "\n")
	s.Tokens = tok.Count(s.Text)
}

func (s *AnchorSet) dropWorst() {
	worst := 0
	density := func(c Clause) float64 { return c.Score / float64(max(c.Tokens, 1)) }
	for i, c := range s.Chosen {
		if density(c) < density(s.Chosen[worst]) {
			worst = i
		}
	}
	s.Chosen = append(s.Chosen[:worst], s.Chosen[worst+1:]...)
}

// scoreClauses returns the distinct clauses with a positive score, in
// passage then text order.
func scoreClauses(query string, passages []Passage, o AnchorOptions) []Clause {
	q := contentWords(query)
	titles := make([]map[string]bool, len(passages))
	for j, p := range passages {
		titles[j] = contentWords(p.Title)
	}
	seen := map[string]bool{}
	var out []Clause
	for i, p := range passages {
		for _, text := range SplitClauses(p.Text, o.MinClauseWords) {
			w := contentWords(text)
			key := wordKey(w)
			if len(w) == 0 || seen[key] {
				continue
			}
			seen[key] = true
			r := float64(overlap(w, q)) + o.LinkWeight*float64(links(w, titles, i))
			if r <= 0 {
				continue
			}
			if o.Titles && p.Title != "" {
				text = p.Title + ": " + text
			}
			out = append(out, Clause{Text: text, Passage: i, Score: r})
		}
	}
	return out
}

// links counts the other passages whose title shares a content word with w.
func links(w map[string]bool, titles []map[string]bool, self int) int {
	n := 0
	for j, t := range titles {
		if j != self && overlap(w, t) > 0 {
			n++
		}
	}
	return n
}

func overlap(a, b map[string]bool) int {
	n := 0
	for x := range a {
		if b[x] {
			n++
		}
	}
	return n
}

// questionWords are dropped from W(·) besides the analyzer's stopwords:
// they carry the question's form, not its content.
var questionWords = map[string]bool{"who": true, "whom": true, "whose": true, "what": true, "which": true,
	"when": true, "where": true, "why": true, "how": true, "did": true, "doe": true, "do": true}

// contentWords is W(·): the analyzer's normalised terms (lower case,
// stopwords removed, Porter-stemmed) minus question words.
func contentWords(s string) map[string]bool {
	out := map[string]bool{}
	for _, t := range lexical.Analyze(s) {
		if !questionWords[t] {
			out[t] = true
		}
	}
	return out
}

// wordKey identifies a clause by its content-word set, for deduplication.
func wordKey(w map[string]bool) string {
	keys := make([]string, 0, len(w))
	for k := range w {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return strings.Join(keys, "\x00")
}

// SplitClauses splits text into sentences (after '.', '!' or '?' followed
// by white space), then at semicolons, then at commas where both sides keep
// at least minWords words. Clauses are trimmed; empty ones are dropped.
func SplitClauses(text string, minWords int) []string {
	var out []string
	for _, sent := range splitAfter(text, func(r, next rune) bool { return (r == '.' || r == '!' || r == '?') && unicode.IsSpace(next) }) {
		for _, part := range splitAfter(sent, func(r, _ rune) bool { return r == ';' }) {
			out = append(out, splitCommas(part, minWords)...)
		}
	}
	return out
}

// splitAfter cuts s after every rune where cut(r, next) holds.
func splitAfter(s string, cut func(r, next rune) bool) []string {
	var out []string
	rs := []rune(s)
	start := 0
	for i, r := range rs {
		next := ' '
		if i+1 < len(rs) {
			next = rs[i+1]
		}
		if cut(r, next) {
			if c := strings.TrimSpace(string(rs[start : i+1])); c != "" {
				out = append(out, c)
			}
			start = i + 1
		}
	}
	if c := strings.TrimSpace(string(rs[start:])); c != "" {
		out = append(out, c)
	}
	return out
}

// splitCommas splits at ", " greedily from the left whenever the piece so
// far and the rest both have at least minWords words.
func splitCommas(s string, minWords int) []string {
	var out []string
	for {
		cut := -1
		for i := strings.Index(s, ", "); i >= 0; {
			if len(strings.Fields(s[:i])) >= minWords && len(strings.Fields(s[i+2:])) >= minWords {
				cut = i
				break
			}
			j := strings.Index(s[i+2:], ", ")
			if j < 0 {
				break
			}
			i += 2 + j
		}
		if cut < 0 {
			return append(out, s)
		}
		out = append(out, strings.TrimSpace(s[:cut+1]))
		s = strings.TrimSpace(s[cut+2:])
	}
}
