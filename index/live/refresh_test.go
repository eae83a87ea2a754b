package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/index/indextest"
)

// testSection is a section that records the index's node count: Load
// refuses it on an index of another size, so a stale one cannot pass for
// a fresh one. Its Refresh calls refreshHook first (when set).
const testSection = "live-test"

var refreshHook func(ctx context.Context) error

// errLoadMismatch, from refreshHook, makes the refresh build a section
// its Load refuses.
var errLoadMismatch = errors.New("build one that does not load")

func init() {
	index.MustRegisterSection(index.SectionType{Name: testSection, Version: 1, Update: index.Rebuild, Summary: "a test section",
		Hint: "none", Load: loadTestSection, Refresh: refreshTestSection})
}

func loadTestSection(ix *index.Index, r *index.SectionReader) (any, error) {
	n, err := r.I64("n.i64")
	if err != nil {
		return nil, err
	}
	var m, info struct{ Seed int }
	if err := r.Meta(&m); err != nil || m.Seed != 7 {
		return nil, fmt.Errorf("settings %+v (%v), want seed 7", m, err)
	}
	if err := r.JSON("info.json", &info); err != nil || info != m {
		return nil, fmt.Errorf("info.json %+v (%v), want its settings", info, err)
	}
	if len(n) != 1 || n[0] != int64(ix.N()) {
		return nil, fmt.Errorf("made for %v nodes, the index has %d", n, ix.N())
	}
	return n[0], nil
}

func testSectionBuilt(n int) *index.BuiltSection {
	return &index.BuiltSection{Name: testSection, Meta: struct{ Seed int }{7},
		Write: func(w *index.SectionWriter) error {
			return errors.Join(w.I64("n.i64", []int64{int64(n)}), w.JSON("info.json", struct{ Seed int }{7}))
		}}
}

func refreshTestSection(ctx context.Context, ix *index.Index, settings json.RawMessage, env index.RefreshEnv) (*index.BuiltSection, error) {
	var m struct{ Seed int }
	if err := json.Unmarshal(settings, &m); err != nil || m.Seed != 7 {
		return nil, fmt.Errorf("settings %q not recorded", settings)
	}
	if refreshHook != nil {
		err := refreshHook(ctx)
		if errors.Is(err, errLoadMismatch) {
			return testSectionBuilt(ix.N() + 1), nil // Load refuses it
		}
		if err != nil {
			return nil, err
		}
	}
	return testSectionBuilt(ix.N()), nil
}

// indexWithSection is a small index with the test section.
func indexWithSection(t *testing.T) string {
	dir := smallIndex(t)
	ix, err := index.Open(dir, store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b := testSectionBuilt(ix.N())
	ix.Close()
	if err := index.SetSection(context.Background(), dir, testSection, b.Meta, b.Write); err != nil {
		t.Fatal(err)
	}
	return dir
}

// staleWriter opens a writer on an index with the test section (options
// changed by mut) and commits one passage, leaving the section stale.
func staleWriter(t *testing.T, mut func(*Options)) (w *Writer, dir string) {
	t.Helper()
	dir = indexWithSection(t)
	o, _ := testOptions(t)
	if mut != nil {
		mut(&o)
	}
	w = mustOpen(t, dir, o)
	var b Batch
	b.Add(passage("stale-1", "a passage that leaves the section stale"))
	commit(t, w, &b)
	return w, dir
}

func sectionValue(ix *index.Index) (int64, error) {
	v, err := ix.Section(testSection)
	if err != nil {
		return 0, err
	}
	return v.(int64), nil
}

// A refresh after a checkpoint is saved by the next one (no commit
// between), and the reopened index has the section fresh.
func TestRefreshSavedWithoutCommits(t *testing.T) {
	w, dir := staleWriter(t, nil)
	if _, err := sectionValue(w.Index()); !errors.Is(err, index.ErrNotBuilt) {
		t.Fatalf("after a commit the section gave %v, want stale", err)
	}
	if err := w.Checkpoint(context.Background()); err != nil {
		t.Fatal(err)
	}
	r, err := w.Refresh(context.Background())
	if err != nil || !slices.Equal(r.Built, []string{testSection}) || r.Stale != nil {
		t.Fatalf("refresh %+v, %v", r, err)
	}
	if v, err := sectionValue(w.Index()); err != nil || v != int64(w.Index().N()) {
		t.Fatalf("refreshed section %v, %v", v, err)
	}
	if r, err := w.Refresh(context.Background()); err != nil || len(r.Built) != 0 {
		t.Fatalf("a second refresh: %+v, %v, want nothing to do", r, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	ix, err := index.Open(dir, store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if v, err := sectionValue(ix); err != nil || v != int64(ix.N()) || ix.Meta.Stale != nil {
		t.Fatalf("reopened: section %v, %v; stale %+v", v, err, ix.Meta.Stale)
	}
}

// A commit that lands while the sections are built wins: nothing is
// published and they stay stale.
func TestRefreshOvertaken(t *testing.T) {
	w, _ := staleWriter(t, nil)
	defer w.Close()
	started, release := make(chan struct{}), make(chan struct{})
	refreshHook = func(context.Context) error { close(started); <-release; return nil }
	defer func() { refreshHook = nil }()
	done := make(chan error)
	go func() { _, err := w.Refresh(context.Background()); done <- err }()
	<-started
	var b2 Batch
	b2.Add(passage("o-2", "overtaking"))
	commit(t, w, &b2)
	close(release)
	if err := <-done; !errors.Is(err, ErrOvertaken) {
		t.Fatalf("refresh gave %v, want ErrOvertaken", err)
	}
	if _, err := sectionValue(w.Index()); !errors.Is(err, index.ErrNotBuilt) {
		t.Fatalf("section %v, want still stale", err)
	}
	if st := w.Stats(); st.RefreshFailed != 1 || st.Refreshes != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// Close cancels a refresh in flight and waits for it.
func TestCloseCancelsRefresh(t *testing.T) {
	w, _ := staleWriter(t, nil)
	started := make(chan struct{})
	refreshHook = func(ctx context.Context) error { close(started); <-ctx.Done(); return ctx.Err() }
	defer func() { refreshHook = nil }()
	done := make(chan error)
	go func() { _, err := w.Refresh(context.Background()); done <- err }()
	<-started
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("refresh gave %v, want cancelled", err)
	}
	if _, err := w.Refresh(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("refresh after close: %v", err)
	}
}

// With RefreshAfter, the writer refreshes by itself once the writes pause.
func TestBackgroundRefresh(t *testing.T) {
	w, _ := staleWriter(t, func(o *Options) { o.RefreshAfter = time.Millisecond })
	defer w.Close()
	for deadline := time.Now().Add(time.Minute); w.Stats().Refreshes == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no background refresh within a minute")
		}
	}
	if v, err := sectionValue(w.Index()); err != nil || v != int64(w.Index().N()) {
		t.Fatalf("section %v, %v", v, err)
	}
}

// A refresh that builds nothing counts as a failure, not a refresh, and
// publishes nothing; one whose section does not load leaves it stale.
func TestRefreshFailures(t *testing.T) {
	w, _ := staleWriter(t, nil)
	defer w.Close()
	before := w.Index()
	refreshHook = func(context.Context) error { return errors.New("build broke") }
	defer func() { refreshHook = nil }()
	if _, err := w.Refresh(context.Background()); err == nil || !strings.Contains(err.Error(), "build broke") {
		t.Fatalf("refresh gave %v, want the build's error", err)
	}
	refreshHook = func(context.Context) error { return errLoadMismatch }
	if _, err := w.Refresh(context.Background()); err == nil || !strings.Contains(err.Error(), "does not load") {
		t.Fatalf("refresh gave %v, want a load failure", err)
	}
	if st := w.Stats(); st.Refreshes != 0 || st.RefreshFailed != 2 || w.Index() != before {
		t.Fatalf("stats %+v; index replaced %v", st, w.Index() != before)
	}
	if _, err := sectionValue(w.Index()); !errors.Is(err, index.ErrNotBuilt) {
		t.Fatalf("section %v, want still stale", err)
	}
	refreshHook = func(context.Context) error { return fmt.Errorf("no embedder here: %w", index.ErrNotRefreshable) }
	if r, err := w.Refresh(context.Background()); err != nil || len(r.Built) != 0 || !slices.Equal(r.Stale, []string{testSection}) {
		t.Fatalf("a section its type cannot refresh now: %+v, %v; want it passed by quietly", r, err)
	}
}

// A manual refresh without a backend says what it needs.
func TestRefreshNeedsBackend(t *testing.T) {
	w, _ := staleWriter(t, func(o *Options) { o.Refresh.Backend = nil })
	defer w.Close()
	if _, err := w.Refresh(context.Background()); err == nil || !strings.Contains(err.Error(), "Backend") {
		t.Fatalf("refresh without a backend: %v", err)
	}
}

// After changes, Refit makes the vectors a build of the index's passages
// makes, bit for bit, saves them, and leaves what came from the old
// vectors stale.
func TestRefitEqualsBuild(t *testing.T) {
	w, dir := staleWriter(t, nil)
	var b Batch
	b.Add(passage("refit-2", "zanzibar quokka festival of the eastern isles"))
	b.Delete(w.Index().NodeID(2))
	commit(t, w, &b)
	if _, err := w.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	before := slices.Clone(w.Index().Vectors)
	if err := w.Refit(context.Background()); err != nil {
		t.Fatal(err)
	}
	ix := w.Index()
	c := &corpus.Corpus{}
	for i := range ix.N() {
		c.Nodes = append(c.Nodes, corpus.Node{ID: ix.NodeID(i), Title: ix.Title(i), Text: ix.Text(i), Type: ix.Type(i), Aliases: ix.Aliases(i)})
	}
	fresh := indextest.Open(t, indextest.Build(t, c))
	if ix.Meta.Dims != fresh.Meta.Dims || !slices.Equal(ix.Vectors, fresh.Vectors) || !slices.Equal(ix.LSA.V, fresh.LSA.V) {
		t.Fatalf("refitted vectors differ from a build's (%d vs %d dims)", ix.Meta.Dims, fresh.Meta.Dims)
	}
	if slices.Equal(ix.Vectors[:len(before)-ix.Meta.Dims], before[:len(before)-ix.Meta.Dims]) {
		t.Fatal("the refit changed no vector: the test proves nothing")
	}
	if v, err := sectionValue(ix); err != nil || v != int64(ix.N()) {
		t.Fatalf("the test section, not derived from the vectors, after the refit: %v, %v; want it kept fresh", v, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	saved := indextest.Open(t, dir)
	if !slices.Equal(saved.Vectors, fresh.Vectors) {
		t.Fatal("the index on disk lacks the refitted vectors")
	}
}

// Under writes that never pause, RefreshWithin still refreshes, holding
// the commits while it builds: none lands during the build, all succeed.
func TestRefreshWithinHoldsCommits(t *testing.T) {
	w, _ := staleWriter(t, func(o *Options) { o.RefreshAfter, o.RefreshWithin = time.Hour, 20*time.Millisecond })
	defer w.Close()
	var during [2]int64
	refreshHook = func(context.Context) error {
		during[0] = w.Stats().Commits
		time.Sleep(50 * time.Millisecond) // the writer below commits every millisecond meanwhile, unless held
		during[1] = w.Stats().Commits
		return nil
	}
	defer func() { refreshHook = nil }()
	errc := make(chan error, 1)
	go func() {
		for i := 0; w.Stats().Refreshes == 0; i++ {
			var b Batch
			b.Add(passage(fmt.Sprintf("steady-%d", i), "a steady stream of writes"))
			if _, err := w.Commit(context.Background(), &b); err != nil {
				errc <- err
				return
			}
			time.Sleep(time.Millisecond)
		}
		errc <- nil
	}()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("no refresh within a minute of steady writes")
	}
	if during[0] != during[1] {
		t.Fatalf("commits went on during a held refresh: %d then %d", during[0], during[1])
	}
	o, _ := testOptions(t)
	o.RefreshWithin = time.Second
	if err := o.validate(); err == nil {
		t.Fatal("RefreshWithin without RefreshAfter accepted")
	}
}

// A commit whose context ends while a held refresh keeps it waiting
// returns the context's error then, not after the refresh, and is never
// applied.
func TestCommitGivesUpWhileHeld(t *testing.T) {
	w, _ := staleWriter(t, nil)
	defer w.Close()
	started, release := make(chan struct{}), make(chan struct{})
	refreshHook = func(context.Context) error { close(started); <-release; return nil }
	defer func() { refreshHook = nil }()
	refreshed := make(chan error, 1)
	go func() {
		_, err := w.refresh(context.Background(), true)
		refreshed <- err
	}()
	<-started
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	time.AfterFunc(5*time.Second, free) // if the commit waited for the refresh, the check below fails rather than hangs
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	var b Batch
	b.Add(passage("impatient", "a write that gives up"))
	_, err := w.Commit(ctx, &b)
	select {
	case <-refreshed:
		t.Fatal("the refresh ended before the commit was answered: it was not held")
	default:
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("commit during a held refresh: %v, want the deadline", err)
	}
	free()
	if err := <-refreshed; err != nil {
		t.Fatal(err)
	}
	var after Batch
	after.Add(passage("patient", "a write after the refresh"))
	commit(t, w, &after)
	if _, ok := w.Index().Lookup("impatient"); ok {
		t.Fatal("the abandoned write was applied")
	}
	if _, ok := w.Index().Lookup("patient"); !ok {
		t.Fatal("the write after the refresh is missing")
	}
}

// A held refresh that fails is not retried by holding the writes again
// (each try would stop them for a build that fails): the next waits for a
// pause.
func TestFailedHeldRefreshHoldsOnce(t *testing.T) {
	w, _ := staleWriter(t, func(o *Options) { o.RefreshAfter, o.RefreshWithin = time.Hour, 10*time.Millisecond })
	defer w.Close()
	refreshHook = func(context.Context) error { return errors.New("build broke") }
	defer func() { refreshHook = nil }()
	for i := 0; i < 30; i++ {
		var b Batch
		b.Add(passage(fmt.Sprintf("steady-%d", i), "a steady stream of writes"))
		commit(t, w, &b)
		time.Sleep(10 * time.Millisecond)
	}
	if n := w.Stats().RefreshFailed; n != 1 {
		t.Fatalf("%d failed refreshes under steady writes, want 1 (held once, then waiting for a pause)", n)
	}
}

// With RefreshAfter and nothing stale, the writer compacts the passages
// deleted in place by itself once the writes pause.
func TestBackgroundCompaction(t *testing.T) {
	dir := smallIndex(t)
	o, _ := testOptions(t)
	o.RefreshAfter = time.Millisecond
	var mu sync.Mutex
	var published []*index.Index
	o.OnPublish = func(ix *index.Index) { mu.Lock(); published = append(published, ix); mu.Unlock() }
	w := mustOpen(t, dir, o)
	defer w.Close()
	var b Batch
	b.Delete(w.Index().NodeID(2))
	b.Replace(passage(w.Index().NodeID(4), "a replaced passage about lemurs"))
	commit(t, w, &b)
	mu.Lock()
	byCommit := published[0]
	mu.Unlock()
	if byCommit.Deleted() != 2 {
		t.Fatalf("the commit left %d passages deleted in place, want 2", byCommit.Deleted())
	}
	for deadline := time.Now().Add(time.Minute); w.Stats().Compactions == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no background compaction within a minute")
		}
	}
	if ix := w.Index(); ix.Deleted() != 0 || ix.N() != ix.Live() {
		t.Fatalf("after the compaction: %d of %d deleted", ix.Deleted(), ix.N())
	}
}
