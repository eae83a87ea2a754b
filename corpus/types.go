package corpus

// Node is one retrievable unit: a passage, an abstract or a knowledge-graph
// entity. ID is the stable external key; the index assigns dense internal
// numbers in file order.
type Node struct {
	ID      string   `json:"id"`
	Title   string   `json:"title,omitempty"`
	Text    string   `json:"text"`
	Type    string   `json:"type,omitempty"`
	Aliases []string `json:"aliases,omitempty"`
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
