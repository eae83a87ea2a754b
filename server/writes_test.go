package server_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/kernels/cpu"
	"github.com/gleaner-rag/gleaner/retrieve"
	"github.com/gleaner-rag/gleaner/server"
	"github.com/gleaner-rag/gleaner/server/api"
	"github.com/gleaner-rag/gleaner/server/auth"
	"github.com/gleaner-rag/gleaner/server/client"
)

// writeServer serves a copy of the test index with writes enabled.
func writeServer(t *testing.T, mutate ...func(*server.Config)) (*server.Server, *client.Client, string) {
	dir := copyIndex(t)
	s := mustServer(t, func(c *server.Config) {
		c.Indexes = map[string]string{"synth": dir}
		c.Writes = true
		for _, m := range mutate {
			m(c)
		}
	})
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() { hs.Close(); s.Close(context.Background()) })
	c, err := client.New(hs.URL, hs.Client())
	if err != nil {
		t.Fatal(err)
	}
	baseURL[c] = hs.URL
	return s, c, dir
}

// baseURL remembers each test client's server (tests run one at a time
// here: no test in this file is parallel).
var baseURL = map[*client.Client]string{}

func clientBase(c *client.Client) string { return baseURL[c] }

func mustSeq(t *testing.T, s *server.Server) uint64 {
	t.Helper()
	st, ok := s.LiveStats("synth")
	if !ok {
		t.Fatal("no live writer for synth")
	}
	return st.Seq
}

func mustNodes(t *testing.T, s *server.Server) int {
	t.Helper()
	st, _ := s.LiveStats("synth")
	return st.Nodes
}

func topIDs(t *testing.T, c *client.Client, q string) []string {
	t.Helper()
	resp, err := c.Retrieve(context.Background(), server.RetrieveRequest{Index: "synth", Query: q, Method: "bm25", K: api.K(3)})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, h := range resp.Hits {
		ids = append(ids, h.ID)
	}
	return ids
}

func status(err error) int {
	var ae *client.APIError
	if errors.As(err, &ae) {
		return ae.Status
	}
	return 0
}

// TestWritesReadYourWrites puts, replaces and deletes documents: each is
// seen by the very next request; refusals change nothing; the index on
// disk has every change after the server closes.
func TestWritesReadYourWrites(t *testing.T) {
	s, c, dir := writeServer(t)
	ctx := context.Background()
	r, err := c.PutDocument(ctx, "synth", "zz-1", api.Document{Title: "Quokka", Text: "the quokka festival of zanzibar"})
	if err != nil || r.Seq != 1 || r.Changes != 1 {
		t.Fatalf("put: %+v %v", r, err)
	}
	if ids := topIDs(t, c, "quokka zanzibar"); len(ids) == 0 || ids[0] != "zz-1" {
		t.Fatalf("after put: %v", ids)
	}
	doc := api.Document{Nodes: []api.DocumentNode{{ID: "notes/a.md#1", Text: "wombat burrows"}, {ID: "notes/a.md#2", Text: "wombat diet"}},
		Edges: []api.DocumentEdge{{Src: "notes/a.md#1", Dst: "zz-1", Kind: "links"}}}
	if _, err := c.PutDocument(ctx, "synth", "notes/a.md", doc); err != nil {
		t.Fatalf("put with a slash in the id: %v", err)
	}
	if ids := topIDs(t, c, "wombat"); len(ids) != 2 {
		t.Fatalf("after multi-passage put: %v", ids)
	}
	// an edge's source may be left out of a one-passage document given as nodes too
	one := api.Document{Nodes: []api.DocumentNode{{ID: "e5#0", Text: "echidna"}}, Edges: []api.DocumentEdge{{Dst: "zz-1", Kind: "links"}}}
	if _, err := c.PutDocument(ctx, "synth", "e5", one); err != nil {
		t.Fatalf("one passage in nodes, an edge without src: %v", err)
	}
	before := mustSeq(t, s)
	_, err = c.CommitDocuments(ctx, "synth", []api.DocumentChange{
		{Op: "add", ID: "zz-2", Document: api.Document{Text: "platypus"}},
		{Op: "add", ID: "zz-1", Document: api.Document{Text: "again"}},
	})
	if status(err) != http.StatusConflict || mustSeq(t, s) != before {
		t.Fatalf("batch adding an existing document: %v (seq %d → %d)", err, before, mustSeq(t, s))
	}
	if ids := topIDs(t, c, "platypus"); len(ids) != 0 {
		t.Fatalf("a refused batch's document is served: %v", ids)
	}
	_, err = c.CommitDocuments(ctx, "synth", []api.DocumentChange{
		{Op: "add", ID: "zz-3", Document: api.Document{Text: "one"}},
		{Op: "add", ID: "zz-3", Document: api.Document{Text: "two"}},
	})
	if status(err) != http.StatusBadRequest || !strings.Contains(err.Error(), "earlier change of this batch") || mustSeq(t, s) != before {
		t.Fatalf("batch adding a document twice: %v, want a 400 naming the repetition", err)
	}
	_, err = c.CommitDocuments(ctx, "synth", []api.DocumentChange{{Op: "add", Document: api.Document{Text: "no id"}}})
	if status(err) != http.StatusBadRequest || !strings.Contains(err.Error(), "changes[0].id") {
		t.Fatalf("a change without an id: %v, want a 400 naming changes[0].id", err)
	}
	for _, id := range []string{"a%0Ab", "a%00b", "a%20b"} {
		if code := rawPut(t, c, id, `{"text": "x"}`); code != http.StatusBadRequest {
			t.Errorf("id %s: %d, want 400", id, code)
		}
	}
	if _, err := c.DeleteDocument(ctx, "synth", "notes/a.md"); err != nil {
		t.Fatal(err)
	}
	if ids := topIDs(t, c, "wombat"); len(ids) != 0 {
		t.Fatalf("deleted document still served: %v", ids)
	}
	if _, err := c.DeleteDocument(ctx, "synth", "notes/a.md"); status(err) != http.StatusNotFound {
		t.Fatalf("second delete: %v, want 404", err)
	}
	if _, err := c.DeleteDocument(ctx, "synth", strings.Repeat("x", 2000)); status(err) != http.StatusBadRequest || len(err.Error()) > 300 {
		t.Fatalf("delete of a 2000-byte id: %v, want a short 400", err)
	}
	for name, body := range map[string]string{
		"unknown field": `{"text": "x", "colour": "red"}`,
		"both forms":    `{"text": "x", "nodes": [{"id": "a", "text": "y"}]}`,
		"empty":         `{}`,
		"bad weight":    `{"text": "x", "edges": [{"dst": "zz-1", "weight": -1}]}`,
		"edge nowhere":  `{"text": "x", "edges": [{"dst": "nope"}]}`,
		"vectors":       `{"text": "x", "vectors": [[1, 2]]}`,
		"not json":      `{"text": `,
		"huge node id":  `{"nodes": [{"id": "` + strings.Repeat("n", 2000) + `", "text": "t"}]}`,
		"huge edge dst": `{"text": "x", "edges": [{"dst": "` + strings.Repeat("d", 2000) + `"}]}`,
	} {
		if code := rawPut(t, c, "bad", body); code != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", name, code)
		}
	}
	n := mustNodes(t, s)
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	ix, err := index.Open(dir, store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if _, ok := ix.Lookup("zz-1"); !ok || ix.N() != n {
		t.Fatalf("the index on disk after close: %d nodes (want %d), zz-1 present %v", ix.N(), n, ok)
	}
}

func rawPut(t *testing.T, c *client.Client, id, body string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, clientBase(c)+"/v1/indexes/synth/documents/"+id, strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestWritesRefused: a server without --writes, and keys without the
// write scope or with ACL groups, are refused.
func TestWritesRefused(t *testing.T) {
	_, _, c := newServer(t, nil)
	if _, err := c.PutDocument(context.Background(), "synth", "x", api.Document{Text: "t"}); status(err) != http.StatusForbidden {
		t.Fatalf("write to a read-only server: %v, want 403", err)
	}
	ring, toks := keyring(t,
		auth.Key{ID: "reader", Scopes: []auth.Scope{auth.Read}, Indexes: []string{"*"}},
		auth.Key{ID: "writer", Scopes: []auth.Scope{auth.Read, auth.Write}, Indexes: []string{"*"}},
		auth.Key{ID: "grouped", Scopes: []auth.Scope{auth.Write}, Indexes: []string{"*"}, Groups: []string{"team"}},
		auth.Key{ID: "other", Scopes: []auth.Scope{auth.Write}, Indexes: []string{"elsewhere"}})
	dir := copyIndex(t)
	_, hs, _ := authServer(t, ring, func(c *server.Config) {
		c.Indexes, c.Writes, c.ACLField = map[string]string{"synth": dir}, true, "groups"
	})
	base, _ := client.New(hs.URL, hs.Client())
	for id, want := range map[string]int{"reader": 403, "grouped": 403, "other": 403, "writer": 200} {
		_, err := base.WithToken(toks[id]).PutDocument(context.Background(), "synth", "k-"+id, api.Document{Text: "written by " + id})
		if got := status(err); (want == 200 && err != nil) || (want != 200 && got != want) {
			t.Errorf("key %s: %v, want %d", id, err, want)
		}
	}
}

// TestConcurrentWritesAndReads writes from several clients while others
// retrieve (run with -race): every acknowledged document is served.
func TestConcurrentWritesAndReads(t *testing.T) {
	s, c, _ := writeServer(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := c.Retrieve(ctx, server.RetrieveRequest{Index: "synth", Query: "band city", Method: "ppr"}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	var ww sync.WaitGroup
	for g := range 3 {
		ww.Add(1)
		go func() {
			defer ww.Done()
			for i := range 10 {
				id := fmt.Sprintf("w%d-%d", g, i)
				if _, err := c.PutDocument(ctx, "synth", id, api.Document{Text: "concurrent kiwi " + id}); err != nil {
					t.Error(err)
					return
				}
				if ids := topIDs(t, c, id); len(ids) == 0 || ids[0] != id {
					t.Errorf("%s not served right after its put: %v", id, ids)
				}
			}
		}()
	}
	ww.Wait()
	close(stop)
	wg.Wait()
	if got := mustSeq(t, s); got != 30 {
		t.Fatalf("log at %d, want 30", got)
	}
}

// TestWriteTooLarge answers 413 to a body over the write limit.
func TestWriteTooLarge(t *testing.T) {
	_, c, _ := writeServer(t, func(c *server.Config) { c.Limits.MaxWriteBytes = 256 })
	_, err := c.PutDocument(context.Background(), "synth", "big", api.Document{Text: strings.Repeat("word ", 100)})
	if status(err) != http.StatusRequestEntityTooLarge {
		t.Fatalf("a body over the limit: %v, want 413", err)
	}
}

// With RefreshAfter, a server builds the HNSW graph a write left stale
// again by itself once the writes pause, and counts it in /metrics.
func TestWritesRefreshInBackground(t *testing.T) {
	dir := copyIndex(t)
	cfg, err := retrieve.NewBuildConfig(retrieve.SectionHNSW)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Set("m", "4"); err != nil {
		t.Fatal(err)
	}
	if _, err := retrieve.Build(context.Background(), retrieve.BuildEnv{Backend: cpu.New()}, dir, cfg); err != nil {
		t.Fatal(err)
	}
	s, c, _ := writeServer(t, func(c *server.Config) {
		c.Indexes = map[string]string{"synth": dir}
		c.RefreshAfter, c.RefreshWithin = time.Millisecond, time.Minute
	})
	if _, err := c.PutDocument(context.Background(), "synth", "zz-r", api.Document{Title: "Quokka", Text: "quokka refresh"}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		if st, _ := s.LiveStats("synth"); st.Refreshes > 0 {
			if st.Stale != nil {
				t.Fatalf("after the refresh: stale %+v", st.Stale)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no background refresh within a minute")
		}
	}
	resp, err := http.Get(clientBase(c) + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(body), `gleaner_live_refreshes_total{index="synth"} 1`) {
		t.Fatalf("metrics lack the refresh:\n%s", body)
	}
}

// Write settings that cannot work are refused at start: a refresh bound
// without the background refresh it bounds, negative write cores, a
// merge share outside [0, 1).
func TestWriteSettingsRefused(t *testing.T) {
	for _, c := range []struct {
		name string
		mut  func(*server.Config)
		want string
	}{
		{"refresh bound alone", func(c *server.Config) { c.RefreshAfter, c.RefreshWithin = 0, time.Second }, "refresh bound"},
		{"negative write cores", func(c *server.Config) { c.WriteCores = -1 }, "write cores"},
		{"write cores past any GOMAXPROCS", func(c *server.Config) { c.WriteCores = math.MaxInt }, "write cores"},
		{"negative merge share", func(c *server.Config) { c.MergeShare = -0.1 }, "merge share"},
		{"merge share of 1", func(c *server.Config) { c.MergeShare = 1 }, "merge share"},
	} {
		cfg := server.DefaultConfig()
		cfg.Indexes = map[string]string{"synth": testIndex(t)}
		cfg.Backend, cfg.InsecureNoAuth, cfg.Writes = cpu.New(), true, true
		c.mut(&cfg)
		if s, err := server.New(cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			if s != nil {
				s.Close(context.Background())
			}
			t.Errorf("%s: got %v, want an error about %s", c.name, err, c.want)
		}
	}
}

// POST /v1/indexes/{index}/refit refits the served index: the answer
// names the passages and dims, the folder holds the refitted vectors, and
// writes go on after it. Without --writes it is refused.
func TestRefitEndpoint(t *testing.T) {
	dir := copyIndex(t)
	cfg, err := retrieve.NewBuildConfig(retrieve.SectionHNSW)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := retrieve.Build(context.Background(), retrieve.BuildEnv{Backend: cpu.New()}, dir, cfg); err != nil {
		t.Fatal(err)
	}
	s, c, _ := writeServer(t, func(c *server.Config) { c.Indexes, c.RefreshAfter = map[string]string{"synth": dir}, 0 })
	ctx := context.Background()
	for i := range 3 {
		if _, err := c.PutDocument(ctx, "synth", fmt.Sprintf("zz-refit-%d", i), api.Document{Title: "Quokka", Text: "quokka numbat refit"}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := c.Refit(ctx, "synth")
	if err != nil {
		t.Fatal(err)
	}
	st, _ := s.LiveStats("synth")
	if res.Index != "synth" || res.Nodes != st.Nodes || res.Dims <= 0 || !slices.Contains(res.Stale, retrieve.SectionHNSW) {
		t.Fatalf("refit answered %+v (writer has %d nodes)", res, st.Nodes)
	}
	saved, err := index.Open(dir, store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer saved.Close()
	v, ok := saved.Lookup("zz-refit-1")
	if !ok || saved.N() != res.Nodes {
		t.Fatalf("the folder after the refit: %d nodes, zz-refit-1 found %v", saved.N(), ok)
	}
	want, err := saved.Embedder.Embed(ctx, []string{index.IndexText(&corpus.Node{Title: "Quokka", Text: "quokka numbat refit"})})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(saved.Vector(int(v)), want) {
		t.Fatal("the saved vector of a passage is not its embedding under the saved basis")
	}
	if _, err := c.PutDocument(ctx, "synth", "zz-after-refit", api.Document{Text: "after the refit"}); err != nil {
		t.Fatal(err)
	}
	readOnly := mustServer(t, nil)
	defer readOnly.Close(ctx)
	hs := httptest.NewServer(readOnly.Handler())
	defer hs.Close()
	ro, err := client.New(hs.URL, hs.Client())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ro.Refit(ctx, "synth"); status(err) != http.StatusForbidden {
		t.Fatalf("refit without --writes: %v, want 403", err)
	}
}
