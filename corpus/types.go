package corpus

import "fmt"

// Node is one retrievable unit: a passage, an abstract or a knowledge-graph
// entity. ID is the stable external key; the index assigns dense internal
// numbers in file order.
type Node struct {
	ID      string   `json:"id"`
	Title   string   `json:"title,omitempty"`
	Text    string   `json:"text"`
	Type    string   `json:"type,omitempty"`
	Aliases []string `json:"aliases,omitempty"`
	// Doc is the document the node was cut from (importers' passages);
	// empty means the node is a document of its own. Document returns the
	// effective id.
	Doc string `json:"doc,omitempty"`
	// Section is the passage's heading path inside its document, outermost
	// heading first, joined by SectionSep.
	Section string `json:"section,omitempty"`
	// Span is the passage's byte range in its source file, when known.
	Span *Span `json:"span,omitempty"`
	// Meta holds fields about the node's document (an imported file's
	// front-matter): strings, numbers, booleans or lists of them, by name.
	Meta map[string]any `json:"meta,omitempty"`
}

// SectionSep joins the headings of a Section path.
const SectionSep = " > "

// Span is a byte range [Start, End) of a source file.
type Span struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// Document is the id of the document n belongs to: Doc, or n's own id.
func (n *Node) Document() string {
	if n.Doc != "" {
		return n.Doc
	}
	return n.ID
}

// Edge joins two nodes. Weight defaults to 1 when absent; Rel is an optional
// relation type (knowledge graphs) and Kind records which graph builder made
// the edge, so several graphs can coexist in one index.
type Edge struct {
	Src    string  `json:"src"`
	Dst    string  `json:"dst"`
	Weight float64 `json:"weight,omitempty"`
	Rel    string  `json:"rel,omitempty"`
	Kind   string  `json:"kind,omitempty"`
}

// Query is an evaluation question. Gold lists the relevant node ids; Grades,
// when present, gives graded relevance for some of them (nDCG gains). A gold
// id absent from Grades has grade 1.
type Query struct {
	ID     string         `json:"id"`
	Text   string         `json:"text"`
	Gold   []string       `json:"gold,omitempty"`
	Grades map[string]int `json:"grades,omitempty"`
	// Answers are gold answer strings (any one counts), for answer-level
	// evaluation of datasets without gold passages.
	Answers []string `json:"answers,omitempty"`
	// Topics are the question's topic entities (knowledge-graph sets).
	Topics []string `json:"topics,omitempty"`
}

// Judgements returns the query's relevance grades by node id (grade > 0 means
// relevant).
func (q Query) Judgements() map[string]int {
	j := make(map[string]int, len(q.Gold))
	for _, id := range q.Gold {
		j[id] = 1
	}
	for id, g := range q.Grades {
		j[id] = g
	}
	return j
}

// Corpus is a whole dataset in memory.
type Corpus struct {
	Nodes   []Node
	Edges   []Edge
	Queries []Query
	// Chunks, when set, is the provenance of token-chunked nodes
	// (ChunkByTokens), written to chunks.jsonl.
	Chunks []ChunkInfo
	// TrainQueries and DevQueries are the fixed train and dev splits of
	// datasets imported with them (queries-train.jsonl, queries-dev.jsonl;
	// Queries is then the test split).
	TrainQueries, DevQueries []Query
}

// NodeIndex maps node ids to their position in c.Nodes.
func (c *Corpus) NodeIndex() map[string]int {
	m := make(map[string]int, len(c.Nodes))
	for i, n := range c.Nodes {
		m[n.ID] = i
	}
	return m
}

// JudgeableIDs is every id a question's gold may name: node ids and
// document ids (of passages cut from a document).
func (c *Corpus) JudgeableIDs() map[string]int {
	m := c.NodeIndex()
	for i := range c.Nodes {
		if d := c.Nodes[i].Doc; d != "" {
			if _, ok := m[d]; !ok {
				m[d] = -1
			}
		}
	}
	return m
}

// CheckDocuments refuses a document id that is also the id of a node of
// another document: a gold id or a grouped hit naming it would be
// ambiguous. path names the nodes' file in the error.
func CheckDocuments(path string, nodes []Node) error {
	doc := make(map[string]string, len(nodes))
	for i := range nodes {
		doc[nodes[i].ID] = nodes[i].Document()
	}
	for i := range nodes {
		d := nodes[i].Doc
		if d == "" {
			continue
		}
		if owner, ok := doc[d]; ok && owner != d {
			return recErr(path, i+1, "doc", fmt.Errorf("%w: document id %q is also the id of a node of document %q", ErrDuplicate, d, owner))
		}
	}
	return nil
}
