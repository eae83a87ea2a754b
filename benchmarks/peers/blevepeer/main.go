// Command blevepeer is the bleve side of the BM25 peer comparison in
// benchmarks/peers/run.sh. It indexes a gleaner JSONL corpus (title + text,
// bleve's English analyzer, BM25 scoring with Anserini's k1 = 0.9, b = 0.4)
// in an on-disk bleve index, runs every query of queries.jsonl for the top
// 100, writes a TREC run and prints the median per-query time as JSON.
//
// It is a module of its own so that bleve never enters gleaner's
// dependencies.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/search"
	index "github.com/blevesearch/bleve_index_api"
)

type doc struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Text  string `json:"text"`
}

func readJSONL[T any](path string) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, sc.Err()
}

func main() {
	corpusDir := flag.String("corpus", "", "gleaner JSONL corpus folder")
	work := flag.String("work", "", "scratch folder for the bleve index")
	runOut := flag.String("run", "", "TREC run to write")
	reps := flag.Int("reps", 3, "passes over the queries")
	flag.Parse()
	if err := run(*corpusDir, *work, *runOut, *reps); err != nil {
		fmt.Fprintln(os.Stderr, "blevepeer:", err)
		os.Exit(1)
	}
}

func build(corpusDir, work string) (bleve.Index, time.Duration, error) {
	docs, err := readJSONL[doc](filepath.Join(corpusDir, "nodes.jsonl"))
	if err != nil {
		return nil, 0, err
	}
	m := bleve.NewIndexMapping()
	m.ScoringModel = index.BM25Scoring
	m.DefaultAnalyzer = en.AnalyzerName
	os.RemoveAll(work)
	start := time.Now()
	ix, err := bleve.New(work, m)
	if err != nil {
		return nil, 0, err
	}
	b := ix.NewBatch()
	for i, d := range docs {
		if err := b.Index(d.ID, map[string]string{"content": d.Title + "\n" + d.Text}); err != nil {
			return nil, 0, err
		}
		if (i+1)%1000 == 0 {
			if err := ix.Batch(b); err != nil {
				return nil, 0, err
			}
			b = ix.NewBatch()
		}
	}
	return ix, time.Since(start), ix.Batch(b)
}

func run(corpusDir, work, runOut string, reps int) error {
	search.BM25_k1, search.BM25_b = 0.9, 0.4
	ix, buildTime, err := build(corpusDir, work)
	if err != nil {
		return err
	}
	defer ix.Close()
	qs, err := readJSONL[doc](filepath.Join(corpusDir, "queries.jsonl"))
	if err != nil {
		return err
	}
	out, err := os.Create(runOut)
	if err != nil {
		return err
	}
	defer out.Close()
	var times []float64
	for r := 0; r < reps; r++ {
		for _, q := range qs {
			mq := bleve.NewMatchQuery(q.Text)
			mq.SetField("content")
			req := bleve.NewSearchRequestOptions(mq, 100, 0, false)
			start := time.Now()
			res, err := ix.Search(req)
			if err != nil {
				return err
			}
			times = append(times, time.Since(start).Seconds())
			if r == 0 {
				for i, h := range res.Hits {
					fmt.Fprintf(out, "%s Q0 %s %d %.6f bleve\n", q.ID, h.ID, i+1, h.Score)
				}
			}
		}
	}
	sort.Float64s(times)
	return json.NewEncoder(os.Stdout).Encode(map[string]any{"queries": len(qs), "median_s": times[len(times)/2], "build_s": buildTime.Seconds()})
}
