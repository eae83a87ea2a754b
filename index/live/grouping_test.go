package live

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/index"
)

// TestGroupingDoesNotChangeTheIndex: the same numbered batches, committed
// one at a time or all together, make the same index, file for file
// (followers of one log group batches as they arrive).
func TestGroupingDoesNotChangeTheIndex(t *testing.T) {
	base := smallIndex(t)
	o, _ := testOptions(t)
	var batches [2][]*Batch
	for k := range batches {
		for i := 1; i <= groupingBatches; i++ {
			var b Batch
			id := fmt.Sprintf("g-%d", i)
			title := "T " + id
			if i%3 == 0 {
				title = "T g-" + fmt.Sprint(i-1) // a title an earlier passage has
			}
			b.Add(passage(id, fmt.Sprintf("zanzibar quokka %d festival T g-%d of the basalt fjord word%d novel%d", i, i+1, i%7, i)))
			_ = title
			if i%5 == 0 {
				b.Delete(fmt.Sprintf("g-%d", i-2))
			}
			b.SetSource(uint64(i))
			batches[k] = append(batches[k], &b)
		}
	}
	var sums [2]map[string]uint32
	for k := range batches {
		dir := filepath.Join(t.TempDir(), "ix")
		copyDir(t, base, dir)
		w := mustOpen(t, dir, o)
		if k == 0 {
			for i, b := range batches[k] {
				commit(t, w, b)
				if i%150 == 149 { // a checkpoint here only
					if err := w.Checkpoint(context.Background()); err != nil {
						t.Fatal(err)
					}
				}
			}
		} else {
			for _, r := range w.CommitAll(context.Background(), batches[k]) {
				if r.Err != nil {
					t.Fatal(r.Err)
				}
			}
		}
		ix, src := w.Position()
		out := filepath.Join(t.TempDir(), "out")
		if _, err := ix.WriteTo(context.Background(), out, &index.LiveState{Source: src}, ""); err != nil {
			t.Fatal(err)
		}
		w.Close()
		r, err := store.Open(out, store.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sums[k] = map[string]uint32{}
		for name, f := range r.Manifest.Files {
			sums[k][name] = f.CRC32C
		}
		r.Close()
	}
	var names []string
	for name := range sums[0] {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if sums[0][name] != sums[1][name] {
			t.Errorf("file %s differs: one at a time %08x, together %08x", name, sums[0][name], sums[1][name])
		}
	}
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
}

// groupingBatches is enough commits for the postings' layers to merge.
const groupingBatches = 400
