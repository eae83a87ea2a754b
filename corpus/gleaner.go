package corpus

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/gleaner-rag/gleaner/corpus/store"
)

// File names of the gleaner JSONL layout.
const (
	NodesFile   = "nodes.jsonl"
	EdgesFile   = "edges.jsonl"
	QueriesFile = "queries.jsonl"
	ChunksFile  = "chunks.jsonl" // provenance of token chunks (ChunkByTokens)
)

// Load reads a gleaner JSONL corpus folder: nodes.jsonl (required),
// edges.jsonl, queries.jsonl and the split files queries-train.jsonl and
// queries-dev.jsonl (optional).
func Load(dir string, opt ReadOptions) (*Corpus, error) {
	c := &Corpus{}
	var err error
	if c.Nodes, err = ReadNodes(filepath.Join(dir, NodesFile), opt); err != nil {
		return nil, err
	}
	if err := CheckDocuments(filepath.Join(dir, NodesFile), c.Nodes); err != nil {
		return nil, err
	}
	ids := c.NodeIndex()
	if c.Edges, err = ReadEdges(filepath.Join(dir, EdgesFile), ids, opt); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	ids = c.JudgeableIDs()
	if c.Queries, err = ReadQueries(filepath.Join(dir, QueriesFile), ids, opt); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if c.TrainQueries, err = ReadQueries(filepath.Join(dir, TrainQueriesFile), ids, opt); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if c.DevQueries, err = ReadQueries(filepath.Join(dir, DevQueriesFile), ids, opt); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return c, nil
}

// ReadNodes reads nodes.jsonl. Missing ids, duplicate ids and empty texts are
// errors (empty texts may be skipped with opt.SkipInvalid).
func ReadNodes(path string, opt ReadOptions) ([]Node, error) {
	return withFile(path, func(f io.Reader) ([]Node, error) { return readNodes(f, path, opt) })
}

func readNodes(r io.Reader, path string, opt ReadOptions) ([]Node, error) {
	var nodes []Node
	seen := map[string]int{}
	err := decodeJSONL(r, path, func(line int, n *Node) error {
		if err := checkNode(path, line, n, seen); err != nil {
			if errors.Is(err, ErrDuplicate) || errors.Is(err, ErrMalformed) {
				return err
			}
			return opt.reject(err)
		}
		seen[n.ID] = line
		nodes = append(nodes, *n)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(nodes) == 0 {
		return nil, recErr(path, 0, "", fmt.Errorf("%w: no nodes", ErrMissing))
	}
	return nodes, nil
}

func checkNode(path string, line int, n *Node, seen map[string]int) *RecordError {
	switch {
	case strings.TrimSpace(n.ID) == "":
		return recErr(path, line, "id", ErrMissing)
	case badID(n.ID) != "":
		return recErr(path, line, "id", fmt.Errorf("%w: %s", ErrMalformed, badID(n.ID)))
	case len(n.Text)+len(n.Title)+metaBytes(n.Meta) > MaxRecordBytes:
		return recErr(path, line, "text", CheckRecordSize(n))
	case seen[n.ID] > 0:
		return recErr(path, line, "id", fmt.Errorf("%w %q (first on line %d)", ErrDuplicate, n.ID, seen[n.ID]))
	case strings.TrimSpace(n.Text) == "" && strings.TrimSpace(n.Title) == "":
		return recErr(path, line, "text", fmt.Errorf("%w: node %q has no text", ErrMissing, n.ID))
	}
	if field, err := checkProvenance(n); err != nil {
		return recErr(path, line, field, err)
	}
	if err := checkMeta(n.Meta); err != nil {
		return recErr(path, line, "meta", err)
	}
	return nil
}

// checkNodes refuses, before anything is written, nodes that reading
// path back would refuse (an importer's chunk over MaxRecordBytes, a
// repeated id), naming the line each would have had.
func checkNodes(path string, nodes []Node) error {
	seen := make(map[string]int, len(nodes))
	for i := range nodes {
		if err := checkNode(path, i+1, &nodes[i], seen); err != nil {
			return err
		}
		seen[nodes[i].ID] = i + 1
	}
	return CheckDocuments(path, nodes)
}

// ReadEdges reads edges.jsonl, resolving endpoints against ids.
func ReadEdges(path string, ids map[string]int, opt ReadOptions) ([]Edge, error) {
	return withFile(path, func(f io.Reader) ([]Edge, error) { return readEdges(f, path, ids, opt) })
}

// ReadEdgesAnyEnd reads edges.jsonl without checking that the endpoints
// are nodes of one corpus (edges added to an index may name its nodes).
func ReadEdgesAnyEnd(path string, opt ReadOptions) ([]Edge, error) {
	return withFile(path, func(f io.Reader) ([]Edge, error) { return readEdges(f, path, nil, opt) })
}

func readEdges(in io.Reader, path string, ids map[string]int, opt ReadOptions) ([]Edge, error) {
	var edges []Edge
	err := decodeJSONL(in, path, func(line int, r *edgeRecord) error {
		e := &r.Edge
		e.Weight = 1 // an absent weight means 1
		if r.Weight != nil {
			if err := checkWeight(*r.Weight); err != nil {
				return opt.reject(recErr(path, line, "weight", err))
			}
			e.Weight = *r.Weight
		}
		if err := checkEdge(path, line, e, ids); err != nil {
			return opt.reject(err)
		}
		edges = append(edges, *e)
		return nil
	})
	return edges, err
}

// edgeRecord reads an edge and tells an absent weight from an explicit one.
type edgeRecord struct {
	Edge
	Weight *float64 `json:"weight"`
}

func checkEdge(path string, line int, e *Edge, ids map[string]int) *RecordError {
	for _, f := range []struct{ name, id string }{{"src", e.Src}, {"dst", e.Dst}} {
		if f.id == "" {
			return recErr(path, line, f.name, ErrMissing)
		}
		if _, ok := ids[f.id]; !ok && ids != nil {
			return recErr(path, line, f.name, fmt.Errorf("%w %q (dangling edge endpoint)", ErrUnknownID, f.id))
		}
	}
	if math.IsNaN(e.Weight) || math.IsInf(e.Weight, 0) || e.Weight < 0 {
		return recErr(path, line, "weight", fmt.Errorf("%w or negative: %v", ErrNotFinite, e.Weight))
	}
	return nil
}

// ReadQueries reads queries.jsonl; gold ids must exist in ids (a corpus's
// JudgeableIDs: its node and document ids).
func ReadQueries(path string, ids map[string]int, opt ReadOptions) ([]Query, error) {
	return withFile(path, func(f io.Reader) ([]Query, error) { return readQueries(f, path, ids, opt) })
}

func readQueries(r io.Reader, path string, ids map[string]int, opt ReadOptions) ([]Query, error) {
	var qs []Query
	seen := map[string]int{}
	err := decodeJSONL(r, path, func(line int, q *Query) error {
		if q.ID == "" {
			return opt.reject(recErr(path, line, "id", ErrMissing))
		}
		if why := badID(q.ID); why != "" {
			return opt.reject(recErr(path, line, "id", fmt.Errorf("%w: %s", ErrMalformed, why)))
		}
		if seen[q.ID] > 0 {
			return recErr(path, line, "id", fmt.Errorf("%w %q (first on line %d)", ErrDuplicate, q.ID, seen[q.ID]))
		}
		if strings.TrimSpace(q.Text) == "" {
			return opt.reject(recErr(path, line, "text", fmt.Errorf("%w: query %q is empty", ErrMissing, q.ID)))
		}
		if err := checkGold(path, line, q, ids); err != nil {
			return opt.reject(err)
		}
		seen[q.ID] = line
		qs = append(qs, *q)
		return nil
	})
	return qs, err
}

func checkGold(path string, line int, q *Query, ids map[string]int) *RecordError {
	if ids == nil {
		return nil
	}
	for _, g := range q.Gold {
		if _, ok := ids[g]; !ok {
			return recErr(path, line, "gold", fmt.Errorf("%w %q in query %q", ErrUnknownID, g, q.ID))
		}
	}
	for g := range q.Grades {
		if _, ok := ids[g]; !ok {
			return recErr(path, line, "grades", fmt.Errorf("%w %q in query %q", ErrUnknownID, g, q.ID))
		}
	}
	for _, tp := range q.Topics {
		if _, ok := ids[tp]; !ok {
			return recErr(path, line, "topics", fmt.Errorf("%w %q in query %q", ErrUnknownID, tp, q.ID))
		}
	}
	return nil
}

// ErrNotCorpus is returned when Write's target exists and holds something
// other than a gleaner corpus.
var ErrNotCorpus = errors.New("exists and is not a gleaner corpus folder (no nodes.jsonl); refusing to write into it")

// Write stores c as a gleaner JSONL folder. The corpus is replaced as a
// whole: nodes.jsonl, and edges.jsonl and queries.jsonl when c has any, are
// written to a hidden sibling folder that then takes dir's place, so no
// file of an earlier corpus at dir survives beside the new one (a stale
// edges.jsonl would silently join the next index). Other files in dir are
// the user's and are kept. A dir that exists, is not empty and holds no
// nodes.jsonl is refused before anything is written.
func Write(dir string, c *Corpus) error {
	if err := CheckTarget(dir); err != nil {
		return err
	}
	if err := checkNodes(filepath.Join(dir, NodesFile), c.Nodes); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(filepath.Clean(dir)), 0o755); err != nil {
		return err
	}
	dir = store.Target(dir)                  // a symbolic link to a corpus folder keeps pointing at it
	store.CleanDebrisOf(dir, ownsCorpusFile) // what a killed write of this folder left
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) // gone once renamed into place
	defer store.Hold(tmp)()
	if err := writeJSONL(filepath.Join(tmp, NodesFile), c.Nodes); err != nil {
		return err
	}
	if len(c.Edges) > 0 {
		if err := writeJSONL(filepath.Join(tmp, EdgesFile), c.Edges); err != nil {
			return err
		}
	}
	if len(c.Queries) > 0 {
		if err := writeJSONL(filepath.Join(tmp, QueriesFile), c.Queries); err != nil {
			return err
		}
	}
	if len(c.Chunks) > 0 {
		if err := writeJSONL(filepath.Join(tmp, ChunksFile), c.Chunks); err != nil {
			return err
		}
	}
	for name, qs := range map[string][]Query{TrainQueriesFile: c.TrainQueries, DevQueriesFile: c.DevQueries} {
		if len(qs) > 0 {
			if err := writeJSONL(filepath.Join(tmp, name), qs); err != nil {
				return err
			}
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	return store.ReplaceDir(tmp, dir, ownsCorpusFile)
}

// ownsCorpusFile reports whether name is one of the files a corpus write
// makes; every other entry of a corpus folder is the user's.
func ownsCorpusFile(name string) bool {
	return name == NodesFile || name == EdgesFile || name == QueriesFile || name == ChunksFile || name == TrainQueriesFile || name == DevQueriesFile
}

// CheckTarget reports whether a corpus may be written at dir: absent, an
// empty folder, or a gleaner corpus folder (it holds nodes.jsonl).
func CheckTarget(dir string) error {
	return store.CheckFolder(dir, func(dir string) bool {
		_, err := os.Stat(filepath.Join(dir, NodesFile))
		return err == nil
	}, ErrNotCorpus)
}

// withFile opens path and hands it to read.
func withFile[T any](path string, read func(io.Reader) (T, error)) (T, error) {
	f, err := os.Open(path)
	if err != nil {
		var zero T
		return zero, err
	}
	defer f.Close()
	return read(f)
}
