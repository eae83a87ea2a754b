package corpus

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/gleaner-rag/gleaner/internal/excerpt"
	"github.com/gleaner-rag/gleaner/internal/safefile"
)

// ReadTwoWiki reads the HippoRAG 2WikiMultihopQA layout: corpus.json (a JSON
// list of {title, text}) and test_gfmrag.json (questions whose
// supporting_facts are gold passage titles). Passages get ids "p<i>" in
// corpus order, since titles contain spaces that TREC run files cannot hold.
// A title shared by several passages maps to all of them.
func ReadTwoWiki(dir string, opt ReadOptions) (*Corpus, error) {
	c := &Corpus{}
	cpath := filepath.Join(dir, "corpus.json")
	var docs []struct {
		Title string `json:"title"`
		Text  string `json:"text"`
	}
	if err := readJSONArray(cpath, &docs); err != nil {
		return nil, err
	}
	byTitle := map[string][]string{}
	for i, d := range docs {
		n := Node{ID: fmt.Sprintf("p%d", i), Title: d.Title, Text: d.Text}
		if strings.TrimSpace(n.Text) == "" {
			if err := opt.reject(recErr(cpath, i+1, "text", fmt.Errorf("%w: passage %q has no text", ErrMissing, d.Title))); err != nil {
				return nil, err
			}
			continue
		}
		byTitle[d.Title] = append(byTitle[d.Title], n.ID)
		c.Nodes = append(c.Nodes, n)
	}
	qs, err := readTwoWikiQuestions(filepath.Join(dir, "test_gfmrag.json"), byTitle, opt)
	if err != nil {
		return nil, err
	}
	c.Queries = qs
	return c, nil
}

func readTwoWikiQuestions(path string, byTitle map[string][]string, opt ReadOptions) ([]Query, error) {
	var raw []twoWikiRecord
	if err := readJSONArray(path, &raw); err != nil {
		return nil, err
	}
	return collectQueries(path, raw, opt, func(i int, r twoWikiRecord) (Query, *RecordError) {
		q, rerr := twoWikiQuery(path, i+1, r.ID, r.Question, r.Facts, byTitle)
		q.Answers = nonEmptyUnique(append([]string{r.Answer}, r.Aliases...))
		return q, rerr
	})
}

type twoWikiRecord = struct {
	ID       string   `json:"id"`
	Question string   `json:"question"`
	Facts    []string `json:"supporting_facts"`
	Answer   string   `json:"answer"`
	Aliases  []string `json:"answer_aliases"`
}

func twoWikiQuery(path string, rec int, id, text string, facts []string, byTitle map[string][]string) (Query, *RecordError) {
	switch {
	case id == "":
		return Query{}, recErr(path, rec, "id", ErrMissing)
	case strings.TrimSpace(text) == "":
		return Query{}, recErr(path, rec, "question", ErrMissing)
	}
	q := Query{ID: id, Text: text}
	seen := map[string]bool{}
	for _, t := range facts {
		ids, ok := byTitle[t]
		if !ok {
			return Query{}, recErr(path, rec, "supporting_facts", fmt.Errorf("%w: title %q is not in the corpus", ErrUnknownID, t))
		}
		for _, pid := range ids {
			if !seen[pid] {
				seen[pid] = true
				q.Gold = append(q.Gold, pid)
			}
		}
	}
	return q, nil
}

// readJSONArray decodes a whole JSON file, reporting the byte offset's line
// on syntax errors.
func readJSONArray(path string, v any) error {
	b, err := safefile.Read(path, safefile.MaxWeights) // a dataset file: large, but a regular file of known size
	if err != nil {
		return err
	}
	return decodeJSONArray(b, path, v)
}

// decodeJSONArray decodes a whole JSON document, naming the line of a
// syntax error and the field of invalid UTF-8.
func decodeJSONArray(b []byte, path string, v any) error {
	b = bytes.TrimPrefix(b, utf8BOM)
	if !utf8.Valid(b) {
		off := excerpt.InvalidUTF8At(b)
		return recErr(path, 1+bytes.Count(b[:off], []byte("\n")), fieldAt(b, off), fmt.Errorf("%w: invalid UTF-8 at byte %d", ErrMalformed, off+1))
	}
	if off := escapedNUL(b); off >= 0 {
		return recErr(path, 1+bytes.Count(b[:off], []byte("\n")), fieldAt(b, off), fmt.Errorf("%w: NUL character (\\u0000) at byte %d", ErrMalformed, off+1))
	}
	if err := json.Unmarshal(b, v); err != nil {
		if te, ok := err.(*json.UnmarshalTypeError); ok && te.Field == "" {
			return recErr(path, 0, "", fmt.Errorf("%w: want a JSON list of records, the file holds a JSON %s", ErrMalformed, te.Value))
		}
		line := 0
		if se, ok := err.(*json.SyntaxError); ok {
			line = 1 + strings.Count(string(b[:se.Offset]), "\n")
		}
		return recErr(path, line, jsonField(err), fmt.Errorf("%w: %v", ErrMalformed, err))
	}
	return nil
}

func sortStrings(s []string) { sort.Strings(s) }

// nonEmptyUnique drops blank and repeated strings, keeping the first order.
func nonEmptyUnique(ss []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range ss {
		if s = strings.TrimSpace(s); s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
