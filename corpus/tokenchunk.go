package corpus

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// TokenChunker is what token chunking needs from a tokenizer
// (models/tiktoken's cl100k_base Encoder): ids, their text, and each
// token's byte length so chunks can be traced back to the nodes they cut.
type TokenChunker interface {
	Encode(text string) []int
	Decode(ids []int) string
	ByteLen(id int) int
}

// Document groupings for token chunking: chunks never cross a document.
const (
	DocumentPerNode  = "node"   // every node is its own document
	DocumentPerTitle = "title"  // consecutive nodes with the same title form one document
	DocumentCorpus   = "corpus" // the whole corpus is one document (KET-RAG's document.txt)
)

// TokenChunkOptions configures ChunkByTokens: GraphRAG's token chunker
// (Size tokens, consecutive chunks sharing Overlap tokens), then KET-RAG's
// split of every chunk into consecutive Split-token pieces.
type TokenChunkOptions struct {
	Size      int    // ℓ, tokens per chunk, ≥ 1
	Overlap   int    // tokens shared by consecutive chunks, 0 ≤ Overlap < Size
	Split     int    // split_size: tokens per piece, ≥ 1; ≥ Size keeps chunks whole
	Documents string // DocumentPerNode, DocumentPerTitle or DocumentCorpus
}

// DefaultTokenChunkOptions are KET-RAG's: ℓ = 1200 with overlap 100, split
// into 150-token pieces, one document per node.
func DefaultTokenChunkOptions() TokenChunkOptions {
	return TokenChunkOptions{Size: 1200, Overlap: 100, Split: 150, Documents: DocumentPerNode}
}

// Validate checks the options.
func (o TokenChunkOptions) Validate() error {
	switch {
	case o.Size < 1 || o.Overlap < 0 || o.Overlap >= o.Size:
		return fmt.Errorf("corpus: token chunks need size ≥ 1 and 0 ≤ overlap < size, got size %d overlap %d", o.Size, o.Overlap)
	case o.Split < 1:
		return fmt.Errorf("corpus: split size must be ≥ 1 token (≥ size keeps chunks whole), got %d", o.Split)
	case !slices.Contains([]string{DocumentPerNode, DocumentPerTitle, DocumentCorpus}, o.Documents):
		return fmt.Errorf("corpus: documents %q: want %s, %s or %s", o.Documents, DocumentPerNode, DocumentPerTitle, DocumentCorpus)
	}
	return nil
}

// ChunkInfo is the provenance of one output node of ChunkByTokens.
type ChunkInfo struct {
	ID         string   `json:"id"`          // the output node's id
	Document   string   `json:"document"`    // the first source node's id of its document
	Chunk      int      `json:"chunk"`       // which ℓ-token chunk, numbered over the whole output
	Piece      int      `json:"piece"`       // which split piece of that chunk
	TokenStart int      `json:"token_start"` // token offsets in the document, [start, end)
	TokenEnd   int      `json:"token_end"`
	Nodes      []string `json:"nodes"` // the source nodes whose text it holds, in order
}

// ChunkByTokens cuts c's node texts into token chunks (docs/methods.md
// §4.1): documents are grouped as o says, each document's text (nodes as
// "title\ntext", joined by "\n") is tokenized whole, cut into Size-token
// chunks every Size−Overlap tokens — GraphRAG's loop, which also emits a
// last chunk that lies wholly inside the previous one's overlap — and each
// chunk into Split-token pieces. Pieces become nodes "0".."n−1" in order;
// a piece of white space only is dropped. A query's gold nodes map to
// every piece holding part of them (highest grade kept). Edges between
// source nodes do not carry over.
func ChunkByTokens(c *Corpus, tok TokenChunker, o TokenChunkOptions) (*Corpus, []ChunkInfo, error) {
	if err := o.Validate(); err != nil {
		return nil, nil, err
	}
	out := &Corpus{}
	var infos []ChunkInfo
	chunk := 0
	for _, doc := range groupDocuments(c.Nodes, o.Documents) {
		text, spans := documentText(c.Nodes, doc)
		ids := tok.Encode(text)
		offs := tokenOffsets(tok, ids)
		for _, ch := range chunkRanges(len(ids), o.Size, o.Overlap) {
			for p, pc := range pieceRanges(ch, o.Split) {
				t := tok.Decode(ids[pc[0]:pc[1]])
				if strings.TrimSpace(t) == "" {
					continue
				}
				id := strconv.Itoa(len(out.Nodes))
				out.Nodes = append(out.Nodes, Node{ID: id, Text: t, Type: "chunk"})
				infos = append(infos, ChunkInfo{ID: id, Document: c.Nodes[doc[0]].ID, Chunk: chunk, Piece: p,
					TokenStart: pc[0], TokenEnd: pc[1], Nodes: overlapping(c.Nodes, spans, offs[pc[0]], offs[pc[1]])})
			}
			chunk++
		}
	}
	if len(out.Nodes) == 0 {
		return nil, nil, fmt.Errorf("corpus: token chunking left no text")
	}
	out.Queries = mapGold(c.Queries, infos)
	return out, infos, nil
}

// groupDocuments lists the node numbers of each document, in corpus order.
func groupDocuments(nodes []Node, how string) [][]int {
	var docs [][]int
	for i, n := range nodes {
		switch {
		case i == 0, how == DocumentPerNode, how == DocumentPerTitle && n.Title != nodes[i-1].Title:
			docs = append(docs, []int{i})
		default:
			docs[len(docs)-1] = append(docs[len(docs)-1], i)
		}
	}
	return docs
}

// span is a node's byte range in its document's text.
type span struct{ node, start, end int }

// documentText joins a document's nodes and records where each one lies.
func documentText(nodes []Node, doc []int) (string, []span) {
	var b strings.Builder
	spans := make([]span, 0, len(doc))
	for k, i := range doc {
		if k > 0 {
			b.WriteByte('\n')
		}
		start := b.Len()
		if nodes[i].Title != "" {
			b.WriteString(nodes[i].Title)
			b.WriteByte('\n')
		}
		b.WriteString(nodes[i].Text)
		spans = append(spans, span{i, start, b.Len()})
	}
	return b.String(), spans
}

// tokenOffsets returns the byte offset of every token and, last, the
// text's length.
func tokenOffsets(tok TokenChunker, ids []int) []int {
	offs := make([]int, len(ids)+1)
	for i, id := range ids {
		offs[i+1] = offs[i] + tok.ByteLen(id)
	}
	return offs
}

// chunkRanges is GraphRAG's split_multiple_texts_on_tokens loop over n
// tokens: [start, min(start+size, n)) for start = 0, size−overlap, … < n.
func chunkRanges(n, size, overlap int) [][2]int {
	var out [][2]int
	for start := 0; start < n; start += size - overlap {
		out = append(out, [2]int{start, start + min(size, n-start)}) // no start+size: it overflows for a huge size
	}
	return out
}

// pieceRanges cuts a chunk into consecutive split-token pieces.
func pieceRanges(ch [2]int, split int) [][2]int {
	var out [][2]int
	for s := ch[0]; s < ch[1]; s += min(split, ch[1]-s) {
		out = append(out, [2]int{s, s + min(split, ch[1]-s)})
	}
	return out
}

// overlapping lists the nodes whose bytes intersect [from, to).
func overlapping(nodes []Node, spans []span, from, to int) []string {
	var ids []string
	for _, s := range spans {
		if s.start < to && s.end > from && s.end > s.start {
			ids = append(ids, nodes[s.node].ID)
		}
	}
	return ids
}

// mapGold rewrites queries' gold node ids to the pieces that hold them.
func mapGold(qs []Query, infos []ChunkInfo) []Query {
	holders := map[string][]string{}
	for _, in := range infos {
		for _, n := range in.Nodes {
			holders[n] = append(holders[n], in.ID)
		}
	}
	out := make([]Query, len(qs))
	for i, q := range qs {
		out[i] = Query{ID: q.ID, Text: q.Text, Answers: q.Answers}
		if len(q.Gold) == 0 {
			continue
		}
		grades := map[string]int{}
		for id, g := range q.Judgements() {
			for _, h := range holders[id] {
				grades[h] = max(grades[h], g)
			}
		}
		for _, in := range infos { // output order, so files are stable
			if g, ok := grades[in.ID]; ok && g > 0 {
				out[i].Gold = append(out[i].Gold, in.ID)
				if g != 1 {
					if out[i].Grades == nil {
						out[i].Grades = map[string]int{}
					}
					out[i].Grades[in.ID] = g
				}
			}
		}
	}
	return out
}
