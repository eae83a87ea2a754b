package retrieve

import (
	"context"
	"fmt"

	"github.com/gleaner-rag/gleaner/index"
)

// Result units: what one hit stands for.
const (
	GroupPassage  = "passage"  // a hit is a node (the default)
	GroupDocument = "document" // a hit is a document, shown by its best passage
)

// CheckGroupBy validates a group-by setting ("" means GroupPassage).
func CheckGroupBy(g string) error {
	switch g {
	case "", GroupPassage, GroupDocument:
		return nil
	}
	return fmt.Errorf("retrieve: group by %q: want %q or %q: %w", g, GroupPassage, GroupDocument, ErrInvalid)
}

// groupFanout is how many passages are asked for per wanted document at
// first; the request grows by this factor until k documents are found
// or the method runs out of passages.
const groupFanout = 4

// RetrieveDocuments ranks documents rather than passages: a document's
// score is the score of its best passage in m's ranking (max-pooling, as
// "first passage" / MaxP document ranking does), and its hit is that
// passage. It asks m for groupFanout·k passages, and for groupFanout times
// more each time that yields fewer than k documents while m still returned
// all it was asked for, up to every node of the index.
func RetrieveDocuments(ctx context.Context, m Method, ix *index.Index, q Query, k int) ([]Hit, error) {
	if k <= 0 {
		return nil, nil
	}
	depth := fanout(ix, k)
	for {
		hits, err := m.Retrieve(ctx, q, depth)
		if err != nil {
			return nil, err
		}
		docs := BestPerDocument(ix, hits, k)
		if len(docs) >= k || len(hits) < depth || depth >= ix.N() {
			return docs, nil
		}
		depth = min(ix.N(), depth*groupFanout) // depth ≤ N: no overflow
	}
}

// RetrieveDocumentsStream is RetrieveDocuments for a streaming method:
// every list m emits is grouped before emit sees it. The passage depth is
// fixed at groupFanout·k (a stream cannot be asked again); a list may
// then hold fewer than k documents.
func RetrieveDocumentsStream(ctx context.Context, m StreamingMethod, ix *index.Index, q Query, k int, emit func([]Hit) bool) error {
	depth := fanout(ix, k)
	return m.RetrieveStream(ctx, q, depth, func(hits []Hit) bool {
		return emit(BestPerDocument(ix, hits, k))
	})
}

// fanout is the first passage depth for k documents: groupFanout·k, at
// most every node (and no overflow for a huge k).
func fanout(ix *index.Index, k int) int {
	if k > ix.N()/groupFanout { // 4k would pass N
		return ix.N()
	}
	return groupFanout * k
}

// BestPerDocument keeps the first (best) hit of each document in a ranked
// list, up to k documents, in order.
func BestPerDocument(ix *index.Index, hits []Hit, k int) []Hit {
	if !ix.HasDocuments() {
		return hits[:min(k, len(hits))]
	}
	seen := make(map[string]bool, min(k, len(hits)))
	out := make([]Hit, 0, min(k, len(hits)))
	for _, h := range hits {
		d := ix.Document(int(h.Index))
		if seen[d] {
			continue
		}
		seen[d] = true
		if out = append(out, h); len(out) == k {
			break
		}
	}
	return out
}
