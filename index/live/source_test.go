package live

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// numbered is a batch numbered seq in an outside log.
func numbered(seq uint64, fill func(*Batch)) *Batch {
	b := &Batch{}
	fill(b)
	b.SetSource(seq)
	return b
}

// TestNumberedBatchesInOrder: a follower of a log applies its batches in
// order, each once; a refused batch takes its number; the number
// survives replay and checkpoints.
func TestNumberedBatchesInOrder(t *testing.T) {
	dir := smallIndex(t)
	o, _ := testOptions(t)
	w := mustOpen(t, dir, o)
	ctx := context.Background()
	add := func(id string) func(*Batch) {
		return func(b *Batch) { b.Add(passage(id, "a numbered passage "+id)) }
	}
	res := w.CommitAll(ctx, []*Batch{
		numbered(1, add("n1")),
		numbered(2, add("n1")), // refused: exists; its number is taken
		numbered(3, add("n3")),
		numbered(5, add("n5")), // out of order: 4 is missing
	})
	if res[0].Err != nil || res[2].Err != nil {
		t.Fatalf("outcomes %+v: want 1 and 3 applied", res)
	}
	if !errors.Is(res[1].Err, ErrExists) || !IsInvalid(res[1].Err) {
		t.Errorf("batch 2: %v, want a refusal (exists)", res[1].Err)
	}
	if !errors.Is(res[3].Err, ErrOutOfOrder) || IsInvalid(res[3].Err) {
		t.Errorf("batch 5: %v, want out of order, not a refusal", res[3].Err)
	}
	if got := w.Source(); got != 3 {
		t.Fatalf("Source %d after 1..3 and a stray 5, want 3", got)
	}
	// A batch again, or behind: out of order, nothing applied.
	if _, err := w.Commit(ctx, numbered(3, add("n3b"))); !errors.Is(err, ErrOutOfOrder) {
		t.Errorf("batch 3 again: %v, want out of order", err)
	}
	if _, ok := w.Index().Lookup("n5"); ok {
		t.Error("the stray batch 5 was applied")
	}
	// An empty numbered batch still takes its number.
	commit(t, w, numbered(4, func(*Batch) {}))
	if got := w.Source(); got != 4 {
		t.Fatalf("Source %d after an empty batch 4, want 4", got)
	}
	commit(t, w, numbered(5, add("n5")))
	w.crash()
	w = mustOpen(t, dir, o)
	if got := w.Source(); got != 5 {
		t.Fatalf("Source %d after replay, want 5", got)
	}
	if err := w.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w = mustOpen(t, dir, o)
	defer w.Close()
	if got := w.Source(); got != 5 {
		t.Fatalf("Source %d after a checkpoint and reopen, want 5", got)
	}
	if ix, src := w.Position(); src != 5 || ix != w.Index() {
		t.Errorf("Position: source %d, want 5 and the current index", src)
	}
	for _, id := range []string{"n1", "n3", "n5"} {
		if _, ok := w.Index().Lookup(id); !ok {
			t.Errorf("%s missing after reopen", id)
		}
	}
}

// TestBatchEncoding: a batch survives MarshalBinary and DecodeBatch, and
// garbage is refused with the field named.
func TestBatchEncoding(t *testing.T) {
	var b Batch
	b.Add(passage("x", "some text"))
	b.Delete("y")
	raw, err := b.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeBatch(raw)
	if err != nil {
		t.Fatal(err)
	}
	if back.Len() != 2 || back.ops[0].Kind != opAdd || back.ops[1].ID != "y" {
		t.Errorf("decoded %+v", back.ops)
	}
	for _, bad := range []string{``, `{`, `[]`, `{"ops":[{"op":"drop","id":"x"}]}`} {
		if _, err := DecodeBatch([]byte(bad)); err == nil {
			t.Errorf("DecodeBatch(%q) accepted", bad)
		} else if bad == `{"ops":[{"op":"drop","id":"x"}]}` && !containsAll(err.Error(), "change 1", "field op") {
			t.Errorf("DecodeBatch(%q): %v, want the change and field named", bad, err)
		}
	}
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// TestFollowerRefusesLocalCommits: a writer that follows a log takes
// numbered batches only; CommitAll answers every batch it did not apply
// with an error.
func TestFollowerRefusesLocalCommits(t *testing.T) {
	dir := smallIndex(t)
	o, _ := testOptions(t)
	w := mustOpen(t, dir, o)
	defer w.Close()
	w.SetOrigin("GLEANER_x_1")
	var b Batch
	b.Add(passage("local", "a local change"))
	if _, err := w.Commit(context.Background(), &b); !IsInvalid(err) || !strings.Contains(err.Error(), "follows the log") {
		t.Errorf("an unnumbered commit on a follower: %v, want a refusal naming the log", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for i, r := range w.CommitAll(ctx, []*Batch{numbered(1, func(b *Batch) { b.Add(passage("c1", "x")) })}) {
		if r.Err == nil {
			t.Errorf("batch %d of a cancelled CommitAll: no error, yet Source is %d", i, w.Source())
		}
	}
	if w.Source() != 0 {
		t.Errorf("Source %d after a cancelled CommitAll", w.Source())
	}
}

// TestDetach: a detached follower forgets its log, takes local commits
// and refits again, and stays detached after a reopen.
func TestDetach(t *testing.T) {
	dir := smallIndex(t)
	o, _ := testOptions(t)
	w := mustOpen(t, dir, o)
	w.SetOrigin("GLEANER_x_1")
	commit(t, w, numbered(1, func(b *Batch) { b.Add(passage("n1", "numbered")) }))
	if err := w.Refit(context.Background()); err == nil || !strings.Contains(err.Error(), "detach") {
		t.Errorf("a refit on a follower: %v, want a refusal saying to detach", err)
	}
	if err := w.Checkpoint(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := w.Detach(context.Background()); err != nil {
		t.Fatal(err)
	}
	var b Batch
	b.Add(passage("local", "a local change"))
	commit(t, w, &b)
	w.Close()
	w = mustOpen(t, dir, o)
	defer w.Close()
	if w.Origin() != "" || w.Source() != 0 {
		t.Errorf("after detach and reopen: origin %q source %d", w.Origin(), w.Source())
	}
	for _, id := range []string{"n1", "local"} {
		if _, ok := w.Index().Lookup(id); !ok {
			t.Errorf("%s lost", id)
		}
	}
}
