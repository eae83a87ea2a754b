package eval

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
)

// Entry is one ranked document of a run.
type Entry struct {
	Doc     string
	Score   float64
	rank    int   // as read from a file
	node    int32 // the index node retrieved, when hasNode
	hasNode bool
}

// nodeIn is the index node the entry ranks: the one retrieved, or for an
// entry read from a run file the node its id names.
func (e Entry) nodeIn(ix interface{ Lookup(string) (int32, bool) }) (int32, bool) {
	if e.hasNode {
		return e.node, true
	}
	return ix.Lookup(e.Doc)
}

// Run maps query id to its ranking, best first.
type Run map[string][]Entry

// Docs returns the ranked document ids of query q.
func (r Run) Docs(q string) []string {
	out := make([]string, len(r[q]))
	for i, e := range r[q] {
		out[i] = e.Doc
	}
	return out
}

// WriteTREC writes r in TREC format ("qid Q0 doc rank score tag"), queries
// in sorted order and documents in ranking order. Scores are written in
// full precision, and an entry that ties with (or would rise above) the one
// before it is written one float64 ulp below it: trec_eval breaks ties by
// document id, so this is what makes any TREC tool read the ranking in
// gleaner's order (gleaner breaks ties by node number).
func WriteTREC(w io.Writer, r Run, tag string) error {
	bw := bufio.NewWriter(w)
	qids := make([]string, 0, len(r))
	for q := range r {
		qids = append(qids, q)
	}
	sort.Strings(qids)
	for _, q := range qids {
		prev := math.Inf(1)
		for i, e := range r[q] {
			s := e.Score
			if s >= prev {
				s = math.Nextafter(prev, math.Inf(-1))
			}
			prev = s
			if _, err := fmt.Fprintf(bw, "%s Q0 %s %d %s %s\n", q, e.Doc, i+1, strconv.FormatFloat(s, 'g', -1, 64), tag); err != nil {
				return err
			}
		}
	}
	return bw.Flush()
}

// ReadTREC reads a TREC run file. Each query's entries are ordered as
// trec_eval orders them: by score descending, ties by document id
// descending (the rank column is ignored). With byRank, entries are ordered
// by the rank column instead, which reproduces the writer's own order
// (gleaner breaks score ties by node number, not by id).
func ReadTREC(path string, byRank bool) (Run, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return decodeTREC(f, path, byRank)
}

func decodeTREC(in io.Reader, path string, byRank bool) (Run, error) {
	r := Run{}
	sc := bufio.NewScanner(in)
	for line := 1; sc.Scan(); line++ {
		fs := strings.Fields(sc.Text())
		if len(fs) == 0 {
			continue
		}
		if len(fs) != 6 {
			return nil, fmt.Errorf("%s:%d: want 6 columns (qid Q0 doc rank score tag), got %d", path, line, len(fs))
		}
		s, err := strconv.ParseFloat(fs[4], 64)
		if err != nil || s != s {
			return nil, fmt.Errorf("%s:%d: field \"score\": %q is not a number", path, line, fs[4])
		}
		rank, err := strconv.Atoi(fs[3])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: field \"rank\": %q is not an integer", path, line, fs[3])
		}
		r[fs[0]] = append(r[fs[0]], Entry{Doc: fs[2], Score: s, rank: rank})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, es := range r {
		sort.SliceStable(es, func(i, j int) bool {
			if byRank {
				return es[i].rank < es[j].rank
			}
			if es[i].Score != es[j].Score {
				return es[i].Score > es[j].Score
			}
			return es[i].Doc > es[j].Doc
		})
	}
	return r, nil
}
