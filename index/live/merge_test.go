package live

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/index/indextest"
	_ "github.com/gleaner-rag/gleaner/retrieve" // the mentions graph's updater
)

// mergeBatches are batches of adds, replaces and deletes, the i-th from
// i = from on: every twelfth deletes a passage of the index as built (the
// first half of ids, each once), every fourth replaces one (the second
// half), and others delete the passage the one before added.
func mergeBatches(ix *index.Index, from, count int) []*Batch {
	ids := spreadIDs(ix)
	half := len(ids) / 2
	var out []*Batch
	for i := from; i < from+count; i++ {
		var b Batch
		id := fmt.Sprintf("m-%d", i)
		// it mentions a passage added later and one of the index's
		b.Add(passage(id, fmt.Sprintf("zanzibar quokka %d festival T m-%d of the basalt fjord word%d with %s", i, i+1, i%7, ix.Title((i*5)%ix.N()))))
		switch {
		case i%12 == 1:
			b.Delete(ids[(i/12)%half])
		case i%4 == 2:
			b.Replace(passage(ids[half+i%(len(ids)-half)], fmt.Sprintf("replaced %d: lemurs of the basalt fjord", i)))
		case i%4 == 3 && i > from:
			b.Delete(fmt.Sprintf("m-%d", i-1))
		}
		out = append(out, &b)
	}
	return out
}

// spreadIDs are the ids of the index's passages.
func spreadIDs(ix *index.Index) []string {
	var ids []string
	for v := range ix.N() {
		ids = append(ids, ix.NodeID(v))
	}
	return ids
}

// fileSums writes ix compacted to a new folder and returns its files'
// checksums.
func fileSums(t *testing.T, ix *index.Index) map[string]uint32 {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	if _, err := ix.WriteTo(context.Background(), out, &index.LiveState{}, ""); err != nil {
		t.Fatal(err)
	}
	r, err := store.Open(out, store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	sums := map[string]uint32{}
	for name, f := range r.Manifest.Files {
		sums[name] = f.CRC32C
	}
	return sums
}

func sameFiles(t *testing.T, got, want map[string]uint32) {
	t.Helper()
	var names []string
	for name := range want {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if got[name] != want[name] {
			t.Errorf("file %s differs: merged %08x, committed in place %08x", name, got[name], want[name])
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d files, want %d", len(got), len(want))
	}
}

// TestMergeCatchesUp: commits that land while a merge compacts are
// replayed onto the compacted index, which the merge publishes; the
// result equals the same commits applied in place, file for file, the
// mentions graph (kept by the commits' updater) included.
func TestMergeCatchesUp(t *testing.T) {
	for _, tc := range []struct {
		tail       int
		concurrent bool // committed beside the merge's catch-up, not before it
		mentions   bool
	}{{mergeHeld / 2, false, false}, {3 * mergeHeld, false, false}, {4 * mergeHeld, true, false},
		{mergeHeld / 2, false, true}, {3 * mergeHeld, false, true}, {4 * mergeHeld, true, true}} {
		tail := tc.tail
		t.Run(fmt.Sprint(tail, tc.concurrent, tc.mentions), func(t *testing.T) {
			base := smallIndex(t)
			if tc.mentions {
				withMentions(t, base)
			}
			o, logs := testOptions(t)
			o.MergeShare, o.DeletedShare = 0, 0.9 // merges by hand; deletes stay in place
			o.IdleThreads = tc.concurrent         // the work on idle threads changes nothing
			var ws [2]*Writer
			for k := range ws {
				dir := filepath.Join(t.TempDir(), "ix")
				copyDir(t, base, dir)
				ws[k] = mustOpen(t, dir, o)
			}
			crashed := false
			defer func() {
				ws[1].Close()
				if !crashed {
					ws[0].Close()
				}
			}()
			if got := len(ws[0].kinds); got != map[bool]int{false: 0, true: 1}[tc.mentions] {
				t.Fatalf("%d kind updaters", got)
			}
			ix0 := ws[0].Index()
			before := mergeBatches(ix0, 0, 40)
			after := mergeBatches(ix0, 40, tail)
			for _, w := range ws {
				for _, b := range before {
					commit(t, w, b)
				}
			}
			merged, ref := ws[0], ws[1]
			deleted := merged.Index().Deleted()
			if deleted == 0 {
				t.Fatal("no passage deleted in place before the merge")
			}
			committed := make(chan error, 1)
			merged.afterCompact = func() {
				commitAll := func(after []*Batch) error {
					for _, b := range after {
						if _, err := merged.Commit(context.Background(), b); err != nil {
							return err
						}
					}
					return nil
				}
				if !tc.concurrent {
					committed <- commitAll(after)
					return
				}
				// some before the catch-up starts, the rest beside it
				if err := commitAll(after[:2*mergeHeld]); err != nil {
					committed <- err
					return
				}
				go func() { committed <- commitAll(after[2*mergeHeld:]) }()
			}
			n, err := merged.Merge(context.Background())
			if cerr := <-committed; cerr != nil {
				t.Fatal(cerr)
			}
			if err != nil || n != deleted {
				t.Fatalf("merge: %d compacted, %v; want %d", n, err, deleted)
			}
			for _, b := range after {
				commit(t, ref, b)
			}
			ix := merged.Index()
			if st := merged.Stats(); st.Merges != 1 || st.Compactions != 1 || ix.Deleted() > ref.Index().Deleted()-deleted { // the catch-up drops in place what it adds and deletes
				t.Fatalf("after the merge: %+v, %d deleted in place; in place %d, %+v", st, ix.Deleted(), ref.Index().Deleted(), ref.Stats())
			}
			if ix.Live() != ref.Index().Live() {
				t.Fatalf("merged %d live passages, in place %d", ix.Live(), ref.Index().Live())
			}
			sameFiles(t, fileSums(t, ix), fileSums(t, ref.Index()))
			if line := mergeLine(logs.String()); line == "" {
				t.Fatal("the merge logged nothing")
			} else {
				t.Log(line)
			}
			// The writer goes on from the merged index, and reopens to it.
			if ix.Meta.StaleKind("mentions") {
				t.Fatal("the merge left the mentions edges stale")
			}
			if n := len(ix.KindEdges("mentions")); tc.mentions && n == 0 {
				t.Fatal("no mentions edges")
			}
			more := mergeBatches(ix0, 40+tail, 10)
			for _, b := range more {
				commit(t, merged, b)
				commit(t, ref, b)
			}
			sameFiles(t, fileSums(t, merged.Index()), fileSums(t, ref.Index()))
			want := snapshotOf(merged.Index())
			dir := merged.Dir()
			merged.crash()
			crashed = true
			back := mustOpen(t, dir, o)
			defer back.Close()
			if !reflect.DeepEqual(snapshotOf(back.Index()), want) {
				t.Fatal("the log replayed after the merge made another index")
			}
		})
	}
}

// TestMergeAbandonedByRefit: a refit during a merge replaces the index
// its compaction came from: the merge publishes nothing.
func TestMergeAbandonedByRefit(t *testing.T) {
	dir := smallIndex(t)
	o, _ := testOptions(t)
	o.MergeShare = 0
	w := mustOpen(t, dir, o)
	defer w.Close()
	for _, b := range mergeBatches(w.Index(), 0, 8) {
		commit(t, w, b)
	}
	w.afterCompact = func() {
		if err := w.Refit(context.Background()); err != nil {
			t.Error(err)
		}
	}
	refit := w.Index()
	_, err := w.Merge(context.Background())
	if !errors.Is(err, ErrMergeAbandoned) {
		t.Fatalf("merge across a refit: %v, want ErrMergeAbandoned", err)
	}
	if w.Index() == refit || w.Stats().MergeFailed != 1 || w.Stats().Merges != 0 {
		t.Fatalf("after the abandoned merge: %+v", w.Stats())
	}
}

// TestBackgroundMerge: once the deleted passages pass MergeShare, the
// writer merges by itself, and commits never renumber.
func TestBackgroundMerge(t *testing.T) {
	dir := smallIndex(t)
	o, _ := testOptions(t)
	o.MergeShare, o.DeletedShare = 0.02, 0.9
	w := mustOpen(t, dir, o)
	defer w.Close()
	for _, b := range mergeBatches(w.Index(), 0, 12) {
		commit(t, w, b)
	}
	for deadline := time.Now().Add(time.Minute); w.Stats().Merges == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no background merge within a minute: %+v", w.Stats())
		}
	}
	if st := w.Stats(); st.Compactions != st.Merges || st.MergeFailed != 0 {
		t.Fatalf("compactions %d, merges %d, failed %d: a commit renumbered, or a merge failed", st.Compactions, st.Merges, st.MergeFailed)
	}
}

// TestMergeShareValidated: MergeShare lies in [0, 1); one at or above
// DeletedShare (as when only DeletedShare was lowered) opens, and the
// commits renumber.
func TestMergeShareValidated(t *testing.T) {
	dir := smallIndex(t)
	o, _ := testOptions(t)
	for _, bad := range []float64{-0.1, 1, 2} {
		o.MergeShare = bad
		if _, err := Open(context.Background(), dir, o); err == nil || !strings.Contains(err.Error(), "MergeShare") {
			t.Fatalf("MergeShare %v: %v", bad, err)
		}
	}
	o.DeletedShare, o.MergeShare = 0, DefaultOptions(nil).MergeShare
	w := mustOpen(t, dir, o)
	defer w.Close()
	var b Batch
	b.Delete(w.Index().NodeID(3))
	commit(t, w, &b)
	if st := w.Stats(); st.Deleted != 0 || st.Compactions != 1 || st.Merges != 0 {
		t.Fatalf("DeletedShare 0 under the default MergeShare: %+v", st)
	}
}

// withMentions gives the index at dir a mentions graph, as gleaner graph
// build --kind mentions would (its passages are their own documents).
func withMentions(t *testing.T, dir string) {
	t.Helper()
	ix := indextest.Open(t, dir)
	titles, texts := make([]string, ix.N()), make([]string, ix.N())
	for i := range titles {
		titles[i], texts[i] = ix.Title(i), ix.Text(i)
	}
	o := graphops.MentionOptions{MinTitleLen: 4}
	edges, err := graphops.MentionEdges(context.Background(), titles, texts, o)
	if err != nil {
		t.Fatal(err)
	}
	ix.Close()
	if err := index.SetGraphWith(context.Background(), dir, "mentions", edges, o); err != nil {
		t.Fatal(err)
	}
}

// mergeLine is the merge's line in the writer's log.
func mergeLine(logs string) string {
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, "merged:") {
			return l
		}
	}
	return ""
}

// TestMergeAfterReopen: an index reopened with more deleted passages than
// MergeShare (the log's replay left them in place) merges without
// waiting for a commit.
func TestMergeAfterReopen(t *testing.T) {
	dir := smallIndex(t)
	o, _ := testOptions(t)
	o.MergeShare, o.DeletedShare = 0, 0.9
	w := mustOpen(t, dir, o)
	for _, b := range mergeBatches(w.Index(), 0, 12) {
		commit(t, w, b)
	}
	if w.Index().Deleted() == 0 {
		t.Fatal("nothing deleted in place")
	}
	w.crash() // the log keeps the deletes; the folder lacks them
	o.MergeShare = 0.02
	back := mustOpen(t, dir, o)
	defer back.Close()
	for deadline := time.Now().Add(time.Minute); back.Stats().Merges == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no merge within a minute of the reopen: %+v", back.Stats())
		}
	}
}
