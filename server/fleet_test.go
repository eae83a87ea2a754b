package server_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gleaner-rag/gleaner/index/fleet"
	"github.com/gleaner-rag/gleaner/index/fleet/fleettest"
	"github.com/gleaner-rag/gleaner/kernels/cpu"
	"github.com/gleaner-rag/gleaner/server"
	"github.com/gleaner-rag/gleaner/server/api"
	"github.com/gleaner-rag/gleaner/server/client"
)

// fleetServer serves dir as index synth, a replica of the fleet at urls.
func fleetServer(t *testing.T, urls, dir string, writes bool) (*server.Server, *client.Client, string) {
	t.Helper()
	conf := fleet.DefaultConfig(urls, slog.New(slog.NewTextHandler(io.Discard, nil)))
	conf.Replicas = 1
	conn, err := fleet.Connect(context.Background(), conf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	s := mustServer(t, func(c *server.Config) {
		c.Indexes = map[string]string{"synth": dir}
		c.Writes = writes
		c.Fleet = server.DefaultFleet(conn)
		c.Fleet.SnapshotEvery = 0
		c.Fleet.Wait = 2 * time.Second
	})
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() { hs.Close(); s.Close(context.Background()) })
	c, err := client.New(hs.URL, hs.Client())
	if err != nil {
		t.Fatal(err)
	}
	baseURL[c] = hs.URL
	return s, c, hs.URL
}

func get(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func putWithKey(t *testing.T, url, key, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, url, strings.NewReader(body))
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func getBody(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestFleetWritesReachEveryReplica: a write on one replica is read on
// another with min_seq; a refusal is the same on both; a replica whose
// folder is missing restores the newest snapshot and catches up; a
// read-only replica refuses writes but follows.
func TestFleetWritesReachEveryReplica(t *testing.T) {
	cl := fleettest.Start(t, 1)
	ctx := context.Background()
	sa, a, _ := fleetServer(t, cl.URLs(), copyIndex(t), true)
	_, b, bURL := fleetServer(t, cl.URLs(), copyIndex(t), false)
	r, err := a.PutDocument(ctx, "synth", "zz-1", api.Document{Title: "Quokka", Text: "the quokka festival of zanzibar"})
	if err != nil || r.Seq != 1 {
		t.Fatalf("put on a: %+v %v", r, err)
	}
	resp, err := b.Retrieve(ctx, api.RetrieveRequest{Index: "synth", Query: "quokka zanzibar", Method: "bm25", K: api.K(3), MinSeq: r.Seq})
	if err != nil || len(resp.Hits) == 0 || resp.Hits[0].ID != "zz-1" {
		t.Fatalf("read on b with min_seq %d: %+v %v", r.Seq, resp, err)
	}
	if code := get(t, bURL+"/readyz?index=synth&min_seq=1"); code != http.StatusOK {
		t.Errorf("/readyz at seq 1 on b: %d", code)
	}
	if body := getBody(t, bURL+"/readyz?index=synth"); body != "ready\napplied 1\n" {
		t.Errorf("/readyz?index=synth on b: %q, want it to say batch 1 is applied", body)
	}
	if code := get(t, bURL+"/readyz?index=synth&min_seq=99"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz at seq 99 on b: %d, want 503", code)
	}
	if _, err := b.PutDocument(ctx, "synth", "zz-2", api.Document{Text: "x"}); status(err) != http.StatusForbidden {
		t.Errorf("a write on a replica without --writes: %v, want 403", err)
	}
	_, err = a.CommitDocuments(ctx, "synth", []api.DocumentChange{{Op: "add", ID: "zz-1", Document: api.Document{Text: "again"}}})
	if status(err) != http.StatusConflict {
		t.Fatalf("adding an existing document through the fleet: %v, want 409", err)
	}
	if _, err := a.PutDocument(ctx, "synth", "a b", api.Document{Text: "x"}); status(err) != http.StatusBadRequest {
		t.Fatalf("a new id with a space through the fleet: %v, want 400 before it reaches the log", err)
	}
	if _, err := b.Retrieve(ctx, api.RetrieveRequest{Index: "synth", Query: "x", MinSeq: 50}); status(err) != http.StatusServiceUnavailable {
		t.Errorf("min_seq past the log: %v, want 503", err)
	}
	// A retry with the same Idempotency-Key is stored once; a refused
	// first is answered with its refusal again.
	code1, first := putWithKey(t, baseURL[a]+"/v1/indexes/synth/documents/zz-2", "retry-1", `{"text":"a retried write"}`)
	code2, again := putWithKey(t, baseURL[a]+"/v1/indexes/synth/documents/zz-2", "retry-1", `{"text":"a retried write"}`)
	seqOf := func(body string) string { return regexp.MustCompile(`"seq":\d+`).FindString(body) }
	if code1 != http.StatusOK || code2 != http.StatusOK || seqOf(first) != seqOf(again) || strings.Contains(first, "duplicate") || !strings.Contains(again, `"duplicate":true`) {
		t.Errorf("a write retried with its Idempotency-Key: %d %s then %d %s; want one seq, the second a duplicate", code1, first, code2, again)
	}
	for i := 0; i < 2; i++ {
		req, _ := http.NewRequest(http.MethodPost, baseURL[a]+"/v1/indexes/synth/documents", strings.NewReader(`{"changes":[{"op":"add","id":"zz-1","text":"again"}]}`))
		req.Header.Set("Idempotency-Key", "refused-1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusConflict {
			t.Errorf("refused batch, try %d: %d, want 409", i+1, resp.StatusCode)
		}
	}
	if _, err := a.Refit(ctx, "synth"); status(err) != http.StatusConflict {
		t.Errorf("refit on a replica: %v, want 409", err)
	}
	// A snapshot, then a write after it; a replica with no folder restores
	// the snapshot and replays the write.
	if err := sa.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	r3, err := a.PutDocument(ctx, "synth", "zz-3", api.Document{Text: "wombat burrows of the outback"})
	if err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(t.TempDir(), "fresh")
	_, c, _ := fleetServer(t, cl.URLs(), fresh, false)
	resp, err = c.Retrieve(ctx, api.RetrieveRequest{Index: "synth", Query: "wombat outback quokka", Method: "bm25", K: api.K(5), MinSeq: r3.Seq})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, h := range resp.Hits {
		ids = append(ids, h.ID)
	}
	if got := strings.Join(ids, ","); !strings.Contains(got, "zz-3") || !strings.Contains(got, "zz-1") {
		t.Errorf("the restored replica serves %v, want zz-1 and zz-3", ids)
	}
	if _, err := os.Stat(filepath.Join(fresh, "manifest.json")); err != nil {
		t.Errorf("the restored folder: %v", err)
	}
	mresp, err := http.Get(baseURL[a] + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	for _, m := range []string{fmt.Sprintf(`gleaner_fleet_applied_seq{index="synth"} %d`, r3.Seq), "gleaner_fleet_published_total 7", "gleaner_fleet_snapshots_total 1"} {
		if !strings.Contains(string(body), m) {
			t.Errorf("/metrics lacks %q", m)
		}
	}
}

// TestFleetRestoreBehind: a replica further behind than the log keeps
// refuses to start, naming the way out; with RestoreBehind it moves its
// folder aside and serves the newest snapshot and the log after it.
func TestFleetRestoreBehind(t *testing.T) {
	cl := fleettest.Start(t, 1)
	ctx := context.Background()
	base := copyIndex(t)
	behind := filepath.Join(t.TempDir(), "behind")
	if err := os.CopyFS(behind, os.DirFS(base)); err != nil {
		t.Fatal(err)
	}
	sa, a, _ := fleetServer(t, cl.URLs(), base, true)
	for i := 1; i <= 3; i++ {
		if _, err := a.PutDocument(ctx, "synth", fmt.Sprintf("zz-%d", i), api.Document{Text: fmt.Sprintf("wombat number %d of the outback", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := sa.Snapshot(ctx); err != nil { // keeps 2, trims behind the oldest: batch 0's
		t.Fatal(err)
	}
	if err := sa.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	r4, err := a.PutDocument(ctx, "synth", "zz-4", api.Document{Text: "wombat number 4"})
	if err != nil {
		t.Fatal(err)
	}
	if err := sa.Snapshot(ctx); err != nil { // now the log starts after batch 3
		t.Fatal(err)
	}
	conf := fleet.DefaultConfig(cl.URLs(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	conf.Replicas = 1
	conn, err := fleet.Connect(ctx, conf)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cfg := server.DefaultConfig()
	cfg.Indexes = map[string]string{"synth": behind}
	cfg.Backend, cfg.InsecureNoAuth = cpu.New(), true
	cfg.Fleet = server.DefaultFleet(conn)
	cfg.Fleet.SnapshotEvery = 0
	if _, err := server.New(cfg); err == nil || !strings.Contains(err.Error(), "--fleet-restore-behind") {
		t.Fatalf("a replica behind the log started: %v", err)
	}
	if _, err := os.Stat(behind + ".wal"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused start left %s.wal: %v", behind, err)
	}
	cfg.Fleet.RestoreBehind = true
	s, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	defer func() { hs.Close(); s.Close(ctx) }()
	c, _ := client.New(hs.URL, hs.Client())
	resp, err := c.Retrieve(ctx, api.RetrieveRequest{Index: "synth", Query: "wombat outback", Method: "bm25", K: api.K(5), MinSeq: r4.Seq})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Hits) < 4 {
		t.Errorf("the restored replica serves %d wombat hits, want 4", len(resp.Hits))
	}
	aside, _ := filepath.Glob(behind + ".behind-*")
	kept := 0
	for _, p := range aside {
		if _, err := os.Stat(filepath.Join(p, "manifest.json")); err == nil {
			kept++
		}
	}
	if kept != 1 {
		t.Errorf("the old folder was not kept aside: %v", aside)
	}
}
