package live

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/index"
)

// Documents groups nodes into documents (by Node.Document, in order of
// first appearance) with the edges that start at their passages. An edge
// whose source is none of the nodes is an error naming it.
func Documents(nodes []corpus.Node, edges []corpus.Edge) ([]Document, error) {
	at := map[string]int{}  // document id → position
	doc := map[string]int{} // node id → document position
	var docs []Document
	for _, n := range nodes {
		id := n.Document()
		i, ok := at[id]
		if !ok {
			i = len(docs)
			at[id] = i
			docs = append(docs, Document{ID: id})
		}
		docs[i].Nodes = append(docs[i].Nodes, n)
		doc[n.ID] = i
	}
	for k, e := range edges {
		i, ok := doc[e.Src]
		if !ok {
			return nil, fmt.Errorf("edge %d (%q → %q): its source is not among the nodes given (edges travel with the document they start from)", k+1, e.Src, e.Dst)
		}
		docs[i].Edges = append(docs[i].Edges, e)
	}
	return docs, nil
}

// Same reports whether ix holds document d exactly as given: the same
// passages in order (every stored field) and the same edges leaving them.
// Vectors are not compared.
func Same(ix *index.Index, d Document) bool {
	var have []int
	for _, n := range d.Nodes {
		v, ok := ix.Lookup(n.ID)
		if !ok || ix.Document(int(v)) != d.ID || !sameNode(ix, int(v), &n) {
			return false
		}
		have = append(have, int(v))
	}
	if !slices.IsSorted(have) || !wholeDocument(ix, d.ID, len(have)) {
		return false
	}
	return slices.Equal(storedEdges(ix, have), givenEdges(d.Edges))
}

func sameNode(ix *index.Index, v int, n *corpus.Node) bool {
	meta, _ := index.MetaString(n.Meta)
	start, end, ok := ix.Span(v)
	spanSame := (n.Span == nil && !ok) || (n.Span != nil && ok && n.Span.Start == start && n.Span.End == end)
	return ix.Title(v) == n.Title && ix.Text(v) == n.Text && ix.Type(v) == n.Type && slices.Equal(ix.Aliases(v), n.Aliases) &&
		ix.HeadingPath(v) == n.Section && ix.MetaJSON(v) == meta && spanSame
}

// wholeDocument reports whether the index's document id has n passages.
func wholeDocument(ix *index.Index, id string, n int) bool {
	return ix.DocumentSize(id) == n
}

func storedEdges(ix *index.Index, nodes []int) []string {
	var out []string
	for _, u := range nodes {
		ix.EachOut(u, func(dst int32, w float32, r int32) {
			kind, rel := ix.RelationName(r)
			if !ix.DerivedKind(kind) { // derived edges are built by gleaner, never given
				out = append(out, edgeKey(ix.NodeID(u), ix.NodeID(int(dst)), kind, rel, float64(w)))
			}
		})
	}
	slices.Sort(out)
	return out
}

func givenEdges(edges []corpus.Edge) []string {
	out := make([]string, 0, len(edges))
	for _, e := range edges {
		w := e.Weight
		if w == 0 {
			w = 1
		}
		out = append(out, edgeKey(e.Src, e.Dst, e.Kind, e.Rel, float64(float32(w))))
	}
	slices.Sort(out)
	return out
}

func edgeKey(src, dst, kind, rel string, w float64) string {
	return strings.Join([]string{src, dst, kind, rel, fmt.Sprint(w)}, "\x00")
}
