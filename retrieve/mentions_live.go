package retrieve

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/index"
)

// The mentions graph follows live changes (index/live) through
// graphops.Mentions: an added passage's text is scanned for every title,
// and a new title is looked for in the passages holding its first word.

func init() {
	if err := index.RegisterKindUpdater("mentions", newMentionsUpdater); err != nil {
		panic(err)
	}
}

type mentionsUpdater struct{ s *graphops.Mentions }

func (*mentionsUpdater) Kind() string { return "mentions" }

// newMentionsUpdater builds the state from ix and checks that it gives
// ix's mentions edges.
func newMentionsUpdater(ctx context.Context, ix *index.Index) (index.KindUpdater, error) {
	// The state holds passages by id: built from ix compacted, it is the
	// state of ix's live passages (a document's title goes with its first
	// live passage).
	c, err := ix.Compact(ctx)
	if err != nil {
		return nil, err
	}
	if c != ix {
		defer c.Close()
		ix = c
	}
	o := graphops.MentionOptions{MinTitleLen: 4} // the builder's defaults, for indexes that did not record theirs
	if raw, ok := ix.Meta.KindSettings["mentions"]; ok {
		if err := json.Unmarshal(raw, &o); err != nil {
			return nil, fmt.Errorf("mentions settings: %w", err)
		}
	}
	s, err := graphops.NewMentions(o)
	if err != nil {
		return nil, err
	}
	titles, texts := mentionTargets(ix)
	ps := make([]graphops.Passage, ix.N())
	for i := range ps {
		ps[i] = graphops.Passage{Key: ix.NodeID(i), Title: titles[i], Text: texts[i]}
	}
	s.Add(ctx, ps, nil)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	got := s.Edges(ix.N(), numberer(ix))
	if !slices.Equal(got, ix.KindEdges("mentions")) {
		return nil, fmt.Errorf("the index's mentions edges are not those of settings %+v (built otherwise?); rebuild them with gleaner graph build --kind mentions", o)
	}
	return &mentionsUpdater{s: s}, nil
}

// numberer numbers passage keys in ix; −1 for a key ix lacks, which the
// graph build then refuses (an edge outside the index) rather than
// linking node 0.
func numberer(ix *index.Index) func(string) int32 {
	return func(k string) int32 {
		if v, ok := ix.Lookup(k); ok {
			return v
		}
		return -1
	}
}

func (u *mentionsUpdater) Update(ctx context.Context, before, after *index.Index, ch *index.Change) ([]graphops.Edge, error) {
	u.follow(ctx, before, after, ch)
	return u.s.Edges(after.Live(), numberer(after)), ctx.Err()
}

// UpdateRows is Update, saying which passages' edges changed: a commit
// then costs what it changes rather than every mention edge.
func (u *mentionsUpdater) UpdateRows(ctx context.Context, before, after *index.Index, ch *index.Change) ([]int32, []graphops.Edge, error) {
	u.follow(ctx, before, after, ch)
	// The hit limit counts the live passages, as a build of them would:
	// passages deleted in place must not move it.
	rows, edges := u.s.Rows(after.Live(), numberer(after))
	return rows, edges, ctx.Err()
}

// follow tells the state what ch removes and adds.
func (u *mentionsUpdater) follow(ctx context.Context, before, after *index.Index, ch *index.Change) {
	for _, v := range ch.Remove {
		u.s.Remove(before.NodeID(int(v)))
	}
	u.s.Add(ctx, addedPassages(after, ch.Add), func(k string) string {
		v, _ := after.Lookup(k)
		return after.Text(int(v))
	})
}

// addedPassages are the added nodes as mentions see them: a document's
// first passage in after carries the document's title (mentionTargets).
func addedPassages(after *index.Index, added []corpus.Node) []graphops.Passage {
	ps := make([]graphops.Passage, len(added))
	seen := map[string]int{}
	for i := range added {
		n := &added[i]
		ps[i] = graphops.Passage{Key: n.ID, Text: n.Text}
		d := n.Document()
		seen[d]++
		kept := after.DocumentSize(d) - countDoc(added, d)
		if seen[d] == 1 && kept == 0 {
			ps[i].Title = strings.TrimSuffix(n.Title, sectionSuffix(n.Section))
		}
	}
	return ps
}

func sectionSuffix(section string) string {
	if section == "" {
		return "\x00" // never a suffix: the title stays whole
	}
	return corpus.SectionSep + section
}

func countDoc(nodes []corpus.Node, doc string) int {
	n := 0
	for i := range nodes {
		if nodes[i].Document() == doc {
			n++
		}
	}
	return n
}
