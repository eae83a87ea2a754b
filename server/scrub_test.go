package server_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/retrieve"
	"github.com/gleaner-rag/gleaner/server"
	"github.com/gleaner-rag/gleaner/server/auth"
	"github.com/gleaner-rag/gleaner/server/client"
)

// copyIndex copies the shared test index to a folder of the test's own.
func copyIndex(t *testing.T) string {
	t.Helper()
	src, dst := testIndex(t), filepath.Join(t.TempDir(), "ix")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dst
}

// largestFile is the biggest file of an index folder (vectors, postings).
func largestFile(t *testing.T, dir string) string {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	best, size := "", int64(-1)
	for _, e := range entries {
		if info, _ := e.Info(); info.Size() > size && e.Name() != store.ManifestFile {
			best, size = e.Name(), info.Size()
		}
	}
	return filepath.Join(dir, best)
}

// flip rewrites one byte of a file in place.
func flip(t *testing.T, path string, at int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	f.ReadAt(b, at)
	b[0] ^= 0xff
	f.WriteAt(b, at)
}

// By default indexes are copied into memory: files truncated under the
// server change nothing it serves, and it does not crash.
func TestCopiedIndexSurvivesTruncation(t *testing.T) {
	dir := copyIndex(t)
	s, _, c := newServer(t, func(cfg *server.Config) { cfg.Indexes = map[string]string{"synth": dir} })
	req := server.RetrieveRequest{Index: "synth", Query: "band city", Method: "hybrid"}
	before, err := c.Retrieve(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != store.ManifestFile {
			os.Truncate(filepath.Join(dir, e.Name()), 0)
		}
	}
	after, err := c.Retrieve(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Hits) != len(before.Hits) || after.Hits[0] != before.Hits[0] {
		t.Errorf("results changed after the files were truncated: %v vs %v", after.Hits, before.Hits)
	}
	if err := s.Scrub(context.Background()); err != nil {
		t.Errorf("scrub of a copied index: %v", err)
	}
}

// A mapped index rewritten in place is found by the scrub: 503 on its
// requests and on /readyz, the metric set, until a reload of the repaired
// folder serves it again.
func TestScrubStopsServingAChangedIndex(t *testing.T) {
	dir := copyIndex(t)
	s, hs, c := newServer(t, func(cfg *server.Config) {
		cfg.Indexes, cfg.IndexMemory = map[string]string{"synth": dir}, server.MemoryMap
	})
	ctx := context.Background()
	req := server.RetrieveRequest{Index: "synth", Query: "band city"}
	if _, err := c.Retrieve(ctx, req); err != nil {
		t.Fatal(err)
	}
	if err := s.Scrub(ctx); err != nil {
		t.Fatalf("scrub of an untouched index: %v", err)
	}
	victim := largestFile(t, dir)
	flip(t, victim, 100)
	err := s.Scrub(ctx)
	if err == nil || !strings.Contains(err.Error(), filepath.Base(victim)) || !strings.Contains(err.Error(), "changed in place") {
		t.Fatalf("scrub after an in-place write to %s: %v", victim, err)
	}
	var ae *client.APIError
	if _, err := c.Retrieve(ctx, req); !errors.As(err, &ae) || ae.Status != 503 || !strings.Contains(ae.Body.Error, "changed on disk") {
		t.Fatalf("a request to the changed index: %v", err)
	}
	resp, _ := hs.Client().Get(hs.URL + "/readyz")
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || !strings.Contains(string(body), "changed on disk") || strings.Contains(string(body), "synth") {
		t.Errorf("/readyz: %d %s", resp.StatusCode, body)
	}
	if got := counter(t, s, "gleaner_index_damaged", "synth"); got != 1 {
		t.Errorf("gleaner_index_damaged = %v", got)
	}
	flip(t, victim, 100) // repaired (a rebuild would swap in a new folder)
	if err := s.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Retrieve(ctx, req); err != nil {
		t.Errorf("after the reload: %v", err)
	}
	if err := s.Scrub(ctx); err != nil {
		t.Errorf("scrub after the reload: %v", err)
	}
}

// panicking panics while it retrieves, as a method reading a damaged
// mapped file would.
type panicking struct{}

func (panicking) Name() string { return "test-panic-retrieve" }
func (panicking) Retrieve(context.Context, retrieve.Query, int) ([]retrieve.Hit, error) {
	var s []int
	return nil, fmt.Errorf("unreachable %d", s[3])
}

func init() {
	retrieve.Must(retrieve.Register(retrieve.Def[retrieve.NoOptions]{Name: "test-panic-retrieve", Summary: "panics while retrieving",
		Defaults: func() retrieve.NoOptions { return retrieve.NoOptions{} }, Params: (*retrieve.NoOptions).Params,
		New: func(*index.Index, retrieve.Env, retrieve.NoOptions) (retrieve.Method, error) { return panicking{}, nil }}))
}

// A request that panics is answered 500 (not a dropped connection),
// logged as an error and counted; on mapped indexes it starts a scrub.
func TestRequestPanicIsAnsweredAndCounted(t *testing.T) {
	var logs bytes.Buffer
	s, _, c := newServer(t, func(cfg *server.Config) {
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelError}))
	})
	_, err := c.Retrieve(context.Background(), server.RetrieveRequest{Index: "synth", Query: "band", Method: "test-panic-retrieve"})
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.Status != 500 {
		t.Fatalf("a panicking request: %v", err)
	}
	if got := gauge(t, s, "gleaner_panics_total"); got != 1 {
		t.Errorf("gleaner_panics_total = %v", got)
	}
	if !strings.Contains(logs.String(), "request panicked") || !strings.Contains(logs.String(), "index out of range") {
		t.Errorf("the panic was not logged as an error:\n%s", logs.String())
	}
}

// Another method on an admin path is an admin request: the key is checked
// and the attempt audited before the 405; a failed keys reload is audited
// and keeps the keys.
func TestAdminPathsAndKeyReloadsAreAlwaysAudited(t *testing.T) {
	ring, tok := keyring(t, auth.Key{ID: "ops", Scopes: []auth.Scope{auth.Admin}, Indexes: []string{"*"}})
	s, hs, audit := authServer(t, ring, nil)
	for _, c := range []struct {
		method, path, token string
		want                int
	}{{"GET", "/v1/admin/reload", "", 401}, {"DELETE", "/v1/admin/reload", tok["ops"], 405}, {"POST", "/metrics", tok["ops"], 405}} {
		if code, body, _ := call(t, hs, c.method, c.path, c.token, ""); code != c.want {
			t.Errorf("%s %s: %d %s, want %d", c.method, c.path, code, body, c.want)
		}
	}
	if n := strings.Count(audit.String(), `"msg":"audit"`); n != 3 {
		t.Errorf("%d audit lines for 3 admin-path requests:\n%s", n, audit)
	}
	if err := s.ReloadKeys(func() (*auth.Keyring, error) { return nil, errors.New("keys file: not a regular file") }); err == nil {
		t.Fatal("a failed reload reported success")
	}
	if !strings.Contains(audit.String(), "keys reload failed") {
		t.Errorf("no audit line for the failed reload:\n%s", audit)
	}
	if code, _, _ := call(t, hs, "POST", "/v1/admin/reload", tok["ops"], ""); code != 200 {
		t.Errorf("the old keys stopped working after a failed reload: %d", code)
	}
}
