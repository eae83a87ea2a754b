package retrieve

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/synth"
	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/index/indextest"
	"github.com/gleaner-rag/gleaner/index/live"
)

// TestMentionsFollowLiveChanges changes an index with a mentions graph
// through a live writer and compares its mentions edges with those a
// build over the final index makes: equal, and not stale.
func TestMentionsFollowLiveChanges(t *testing.T) {
	ctx := context.Background()
	c := synth.Generate(synth.Options{People: 60, Cities: 12, Countries: 4, Bands: 12, Queries: 4})
	dir := indextest.Build(t, c)
	o := graphops.MentionOptions{MinTitleLen: 4}
	ix := indextest.Open(t, dir)
	titles, texts := mentionTargets(ix)
	edges, err := graphops.MentionEdges(ctx, titles, texts, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := index.SetGraphWith(ctx, dir, "mentions", edges, o); err != nil {
		t.Fatal(err)
	}
	w, err := live.Open(ctx, dir, live.DefaultOptions(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	for step := range 30 {
		cur := w.Index()
		var b live.Batch
		for k := rng.IntN(4); k > 0; k-- {
			b.Replace(mentioningDocument(rng, cur, fmt.Sprintf("n%d-%d", step, k)))
		}
		if step%3 == 0 {
			v := rng.IntN(cur.N())
			for cur.IsDeleted(v) {
				v = rng.IntN(cur.N())
			}
			if strings.HasPrefix(cur.NodeID(v), "n") {
				b.Delete(cur.Document(v))
			} else {
				b.Replace(live.NodeDocument(corpus.Node{ID: cur.NodeID(v), Title: cur.Title(v), Text: cur.Text(v) + " Replaced."}))
			}
		}
		if _, err := w.Commit(ctx, &b); err != nil {
			t.Fatal(err)
		}
		checkMentionsBuild(t, w.Index(), o, step) // commits carry unchanged passages' edges over
	}
	final, err := w.Index().Compact(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if final.Meta.StaleKind("mentions") {
		t.Fatal("mentions went stale")
	}
	titles, texts = mentionTargets(final)
	want, err := graphops.MentionEdges(ctx, titles, texts, o)
	if err != nil {
		t.Fatal(err)
	}
	if got := final.KindEdges("mentions"); !slices.Equal(got, want) || len(want) <= len(edges) {
		t.Fatalf("mentions after live changes: %d edges, a build makes %d (first build %d)", len(got), len(want), len(edges))
	}
	if err := RequireGraph(final, []string{"mentions"}, "test"); err != nil {
		t.Fatal(err)
	}
}

func checkMentionsBuild(t *testing.T, ix *index.Index, o graphops.MentionOptions, step int) {
	t.Helper()
	ix, err := ix.Compact(context.Background()) // a build numbers the live passages alone
	if err != nil {
		t.Fatal(err)
	}
	titles, texts := mentionTargets(ix)
	want, err := graphops.MentionEdges(context.Background(), titles, texts, o)
	if err != nil {
		t.Fatal(err)
	}
	if got := ix.KindEdges("mentions"); !slices.Equal(got, want) {
		t.Fatalf("step %d: %d mention edges, a build makes %d", step, len(got), len(want))
	}
}

// mentioningDocument is a passage titled with a new name (sometimes one
// other passages mention) whose text mentions titles of the index.
func mentioningDocument(rng *rand.Rand, ix *index.Index, id string) live.Document {
	title := "Novel " + id
	if rng.IntN(3) == 0 {
		title = ix.Title(rng.IntN(ix.N())) // a title the index already has
	}
	var text strings.Builder
	for k := 1 + rng.IntN(3); k > 0; k-- {
		fmt.Fprintf(&text, "It met %s there. ", ix.Title(rng.IntN(ix.N())))
	}
	if rng.IntN(2) == 0 {
		fmt.Fprintf(&text, "Also Novel n%d-1. ", rng.IntN(30)) // a title added earlier or later
	}
	return live.NodeDocument(corpus.Node{ID: id, Title: title, Text: text.String()})
}
