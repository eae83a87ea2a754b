package corpus

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

type beirDoc struct {
	ID    string `json:"_id"`
	Title string `json:"title"`
	Text  string `json:"text"`
}

// ReadBEIR reads a BEIR folder (corpus.jsonl, queries.jsonl,
// qrels/<split>.tsv). Only queries judged in the split are kept, with their
// judgements as gold ids (score > 0) and grades.
func ReadBEIR(dir, split string, opt ReadOptions) (*Corpus, error) {
	c := &Corpus{}
	seen := map[string]int{}
	cpath := filepath.Join(dir, "corpus.jsonl")
	err := eachJSONL(cpath, func(line int, d *beirDoc) error {
		n := Node{ID: d.ID, Title: d.Title, Text: d.Text}
		if err := checkNode(cpath, line, &n, seen); err != nil {
			if errors.Is(err, ErrDuplicate) {
				return err
			}
			return opt.reject(err)
		}
		seen[n.ID] = line
		c.Nodes = append(c.Nodes, n)
		return nil
	})
	if err != nil {
		return nil, err
	}
	qrels, err := readQrelsTSV(filepath.Join(dir, "qrels", split+".tsv"), seen, opt)
	if err != nil {
		return nil, err
	}
	qpath := filepath.Join(dir, "queries.jsonl")
	err = eachJSONL(qpath, func(line int, d *beirDoc) error {
		grades, ok := qrels[d.ID]
		if !ok {
			return nil
		}
		if strings.TrimSpace(d.Text) == "" {
			return opt.reject(recErr(qpath, line, "text", fmt.Errorf("%w: query %q is empty", ErrMissing, d.ID)))
		}
		c.Queries = append(c.Queries, queryFromGrades(d.ID, d.Text, grades))
		delete(qrels, d.ID)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for qid := range qrels {
		if err := opt.reject(recErr(filepath.Join(dir, "qrels", split+".tsv"), 0, "query-id", fmt.Errorf("%w: query %q judged but absent from queries.jsonl", ErrUnknownID, qid))); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func queryFromGrades(id, text string, grades map[string]int) Query {
	q := Query{ID: id, Text: text}
	allOne := true
	for doc, g := range grades {
		if g > 0 {
			q.Gold = append(q.Gold, doc)
		}
		if g != 1 {
			allOne = false
		}
	}
	sortStrings(q.Gold)
	if !allOne {
		q.Grades = grades
	}
	return q
}

// readQrelsTSV reads "query-id corpus-id score" rows (a header row is
// recognised and skipped).
func readQrelsTSV(path string, docs map[string]int, opt ReadOptions) (map[string]map[string]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return decodeQrels(f, path, docs, opt)
}

func decodeQrels(r io.Reader, path string, docs map[string]int, opt ReadOptions) (map[string]map[string]int, error) {
	out := map[string]map[string]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4<<10), MaxRecordBytes)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if line == 1 {
			text = strings.TrimPrefix(text, string(utf8BOM))
		}
		fields := strings.Fields(text)
		if len(fields) == 0 || (line == 1 && fields[0] == "query-id") {
			continue
		}
		if len(fields) != 3 {
			return nil, recErr(path, line, "", fmt.Errorf("%w: want 3 columns, got %d", ErrMalformed, len(fields)))
		}
		score, err := strconv.Atoi(fields[2])
		if err != nil {
			return nil, recErr(path, line, "score", fmt.Errorf("%w: %v", ErrMalformed, err))
		}
		if _, ok := docs[fields[1]]; !ok {
			if err := opt.reject(recErr(path, line, "corpus-id", fmt.Errorf("%w %q", ErrUnknownID, fields[1]))); err != nil {
				return nil, err
			}
			continue
		}
		if out[fields[0]] == nil {
			out[fields[0]] = map[string]int{}
		}
		out[fields[0]][fields[1]] = score
	}
	if err := sc.Err(); err != nil {
		return nil, recErr(path, 0, "", fmt.Errorf("%w: %v", ErrMalformed, err))
	}
	return out, nil
}
