package corpus

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/gleaner-rag/gleaner/internal/excerpt"
)

// Answer-only datasets: questions with gold answers but no gold passages,
// scored by answer recall (eval.AnswerRecall).

// ReadKETRAG reads KET-RAG's evaluation layout: input/document.txt or
// document.txt (one passage or sentence per line) and qa-pairs.json (a JSON
// list of {id, question, answer}). Line i becomes node "l<i>" (1-based, as
// editors count); empty lines are skipped.
func ReadKETRAG(dir string, opt ReadOptions) (*Corpus, error) {
	doc, err := firstExisting(dir, "document.txt", filepath.Join("input", "document.txt"))
	if err != nil {
		return nil, err
	}
	qa, err := firstExisting(dir, "qa-pairs.json", filepath.Join("qa-pairs", "qa-pairs.json"), filepath.Join("input", "qa-pairs.json"))
	if err != nil {
		return nil, err
	}
	c := &Corpus{}
	if c.Nodes, err = readLines(doc); err != nil {
		return nil, err
	}
	if c.Queries, err = readAnswerQuestions(qa, opt); err != nil {
		return nil, err
	}
	return c, nil
}

// readAnswerQuestions reads a JSON list of {id, question, answer} where the
// answer is a string or a list of aliases.
func readAnswerQuestions(path string, opt ReadOptions) ([]Query, error) {
	var raw []rawQA
	if err := readJSONArray(path, &raw); err != nil {
		return nil, err
	}
	return collectQueries(path, raw, opt, func(i int, r rawQA) (Query, *RecordError) {
		return answerQuery(path, i+1, r.ID, r.Question, r.Answer)
	})
}

type rawQA = struct {
	ID       string `json:"id"`
	Question string `json:"question"`
	Answer   any    `json:"answer"`
}

// collectQueries turns raw question records into queries, rejecting the
// invalid ones as opt says.
func collectQueries[T any](path string, raw []T, opt ReadOptions, query func(i int, r T) (Query, *RecordError)) ([]Query, error) {
	var qs []Query
	seen := map[string]int{}
	for i, r := range raw {
		q, rerr := query(i, r)
		if rerr != nil {
			if err := opt.reject(rerr); err != nil {
				return nil, err
			}
			continue
		}
		if first, dup := seen[q.ID]; dup {
			return nil, recErr(path, i+1, "id", fmt.Errorf("%w %q (first in record %d)", ErrDuplicate, q.ID, first))
		}
		seen[q.ID] = i + 1
		qs = append(qs, q)
	}
	return qs, nil
}

func readLines(path string) ([]Node, error) {
	var nodes []Node
	err := eachLine(path, func(line int, t string) error {
		if t = strings.TrimSpace(t); t != "" {
			nodes = append(nodes, Node{ID: fmt.Sprintf("l%d", line), Text: t})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(nodes) == 0 {
		return nil, recErr(path, 0, "", fmt.Errorf("%w: no text lines", ErrMissing))
	}
	return nodes, nil
}

// eachLine calls fn with every line of a UTF-8 text file (1-based line
// numbers, a leading BOM dropped), refusing invalid UTF-8 and NUL bytes
// with the file and line named.
func eachLine(path string, fn func(line int, text string) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4<<10), MaxRecordBytes)
	for line := 1; sc.Scan(); line++ {
		b := sc.Bytes()
		if line == 1 {
			b = bytes.TrimPrefix(b, utf8BOM)
		}
		if !utf8.Valid(b) {
			return recErr(path, line, "", fmt.Errorf("%w: invalid UTF-8 at byte %d", ErrMalformed, excerpt.InvalidUTF8At(b)+1))
		}
		if i := bytes.IndexByte(b, 0); i >= 0 {
			return recErr(path, line, "", fmt.Errorf("%w: NUL character at byte %d", ErrMalformed, i+1))
		}
		if err := fn(line, string(b)); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return recErr(path, 0, "", fmt.Errorf("%w: %v (a line is longer than %d bytes?)", ErrMalformed, err, MaxRecordBytes))
	}
	return nil
}

// answerQuery validates one answer-only question. answer may be a string or
// a list of strings (aliases).
func answerQuery(path string, rec int, id, text string, answer any) (Query, *RecordError) {
	switch {
	case strings.TrimSpace(id) == "":
		return Query{}, recErr(path, rec, "id", ErrMissing)
	case badID(id) != "":
		return Query{}, recErr(path, rec, "id", fmt.Errorf("%w: %s", ErrMalformed, badID(id)))
	case strings.TrimSpace(text) == "":
		return Query{}, recErr(path, rec, "question", ErrMissing)
	}
	var answers []string
	switch a := answer.(type) {
	case string:
		answers = append(answers, a)
	case []any:
		for _, x := range a {
			s, ok := x.(string)
			if !ok {
				return Query{}, recErr(path, rec, "answer", fmt.Errorf("%w: answer list holds %T, want strings", ErrMalformed, x))
			}
			answers = append(answers, s)
		}
	case nil:
	default:
		return Query{}, recErr(path, rec, "answer", fmt.Errorf("%w: answer is %T, want a string or a list of strings", ErrMalformed, a))
	}
	q := Query{ID: id, Text: text, Answers: nonEmptyUnique(answers)}
	if len(q.Answers) == 0 {
		return Query{}, recErr(path, rec, "answer", fmt.Errorf("%w: question %q has no answer", ErrMissing, id))
	}
	return q, nil
}

func firstExisting(dir string, names ...string) (string, error) {
	for _, n := range names {
		p := filepath.Join(dir, n)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: none of %s found", dir, strings.Join(names, ", "))
}

// ChunkOptions cut long documents into passages: windows of Size words
// (runs of non-space characters) that start every Size − Overlap words; the
// last window ends at the document's end. Words are re-joined with single
// spaces.
type ChunkOptions struct {
	Size    int // words per chunk, ≥ 1
	Overlap int // words shared by consecutive chunks, 0 ≤ Overlap < Size
}

// DefaultChunkOptions are 100-word chunks overlapping by 20 words: about the
// length of a 2WikiMultihopQA or MuSiQue paragraph.
func DefaultChunkOptions() ChunkOptions { return ChunkOptions{Size: 100, Overlap: 20} }

func (o ChunkOptions) validate() error {
	if o.Size < 1 || o.Overlap < 0 || o.Overlap >= o.Size {
		return fmt.Errorf("corpus: chunks need size ≥ 1 and 0 ≤ overlap < size, got size %d overlap %d", o.Size, o.Overlap)
	}
	return nil
}

// Chunk cuts text into word windows (see ChunkOptions).
func Chunk(text string, o ChunkOptions) ([]string, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	words := strings.Fields(text)
	var out []string
	for start := 0; start < len(words); start += o.Size - o.Overlap {
		end := min(start+o.Size, len(words))
		out = append(out, strings.Join(words[start:end], " "))
		if end == len(words) {
			break
		}
	}
	return out, nil
}

// ReadGraphRAGBench reads a GraphRAG-Bench split: <name>_corpus.json (a JSON
// list of {corpus_name, context}: long documents, cut into chunks "d<i>c<j>"
// by o) and <name>_questions.json (a JSON list of {id, question, answer}).
func ReadGraphRAGBench(dir string, o ChunkOptions, opt ReadOptions) (*Corpus, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	cpath, err := globOne(dir, "*_corpus.json")
	if err != nil {
		return nil, err
	}
	qpath, err := globOne(dir, "*_questions.json")
	if err != nil {
		return nil, err
	}
	var docs []struct {
		Name    string `json:"corpus_name"`
		Context string `json:"context"`
	}
	if err := readJSONArray(cpath, &docs); err != nil {
		return nil, err
	}
	c := &Corpus{}
	for i, d := range docs {
		chunks, _ := Chunk(d.Context, o)
		if len(chunks) == 0 {
			if err := opt.reject(recErr(cpath, i+1, "context", fmt.Errorf("%w: document has no text", ErrMissing))); err != nil {
				return nil, err
			}
		}
		for j, t := range chunks {
			c.Nodes = append(c.Nodes, Node{ID: fmt.Sprintf("d%dc%d", i, j), Title: fmt.Sprintf("%s %d/%d", d.Name, j+1, len(chunks)), Text: t})
		}
	}
	if len(c.Nodes) == 0 {
		return nil, recErr(cpath, 0, "", fmt.Errorf("%w: no documents", ErrMissing))
	}
	if c.Queries, err = readAnswerQuestions(qpath, opt); err != nil {
		return nil, err
	}
	return c, nil
}

func globOne(dir, pattern string) (string, error) {
	m, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil {
		return "", err
	}
	if len(m) != 1 {
		return "", fmt.Errorf("%s: want exactly one %s, found %d", dir, pattern, len(m))
	}
	return m[0], nil
}
