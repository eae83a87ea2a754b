package kgextract

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const goodContent = `{"entities": [{"name": "Ann Lee", "type": "PERSON", "description": "A painter."},
 {"name": "Paris", "type": "GEO", "description": "A city."}],
 "relationships": [{"source": "Ann Lee", "target": "paris", "description": "Ann Lee lived in Paris.", "weight": 7}]}`

// fakeServer speaks the chat-completions protocol; reply decides each
// answer by the attempt number (1-based).
type fakeServer struct {
	calls    atomic.Int64
	inflight atomic.Int64
	maxIn    atomic.Int64
	reply    func(n int64, w http.ResponseWriter, r *http.Request)
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := f.calls.Add(1)
	in := f.inflight.Add(1)
	defer f.inflight.Add(-1)
	for {
		m := f.maxIn.Load()
		if in <= m || f.maxIn.CompareAndSwap(m, in) {
			break
		}
	}
	var req chatRequest
	if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil || req.Model != "m" || len(req.Messages) != 2 {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	f.reply(n, w, r)
}

func chat(w http.ResponseWriter, content string) {
	json.NewEncoder(w).Encode(map[string]any{
		"choices": []any{map[string]any{"message": map[string]string{"role": "assistant", "content": content}}},
		"usage":   map[string]int{"prompt_tokens": 100, "completion_tokens": 40},
	})
}

func testLLM(t *testing.T, f *fakeServer, edit func(*LLMOptions)) (*LLM, *httptest.Server) {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	o := DefaultLLMOptions()
	o.BaseURL, o.Model = srv.URL+"/v1", "m"
	o.Backoff, o.MaxBackoff, o.MaxRetries = time.Millisecond, 4*time.Millisecond, 3
	o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	if edit != nil {
		edit(&o)
	}
	l, err := NewLLM(o)
	if err != nil {
		t.Fatal(err)
	}
	return l, srv
}

func TestLLMExtractsValidatesAndCaches(t *testing.T) {
	f := &fakeServer{reply: func(_ int64, w http.ResponseWriter, _ *http.Request) { chat(w, "```json\n"+goodContent+"\n```") }}
	cache := t.TempDir()
	l, _ := testLLM(t, f, func(o *LLMOptions) { o.CacheDir = cache })
	g, u, err := l.Extract(context.Background(), "Ann Lee lived in Paris.")
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Entities) != 2 || g.Relationships[0].Weight != 7 || g.Relationships[0].Target != "paris" {
		t.Fatalf("graph %+v", g)
	}
	if u != (Usage{Calls: 1, InputTokens: 100, OutputTokens: 40}) {
		t.Fatalf("usage %+v", u)
	}
	// A second extractor over the same cache pays nothing.
	l2, _ := testLLM(t, f, func(o *LLMOptions) { o.CacheDir = cache })
	g2, u2, err := l2.Extract(context.Background(), "Ann Lee lived in Paris.")
	if err != nil || f.calls.Load() != 1 || u2 != (Usage{CacheHits: 1, CachedInput: 100, CachedOutput: 40}) || len(g2.Entities) != 2 {
		t.Fatalf("cached: calls %d usage %+v err %v", f.calls.Load(), u2, err)
	}
	// Another model or another text is another key.
	if _, u3, _ := l2.Extract(context.Background(), "Other text."); u3.Calls != 1 {
		t.Fatalf("a new text was served from the cache: %+v", u3)
	}
}

func TestLLMRetries429AndServerErrors(t *testing.T) {
	f := &fakeServer{reply: func(n int64, w http.ResponseWriter, _ *http.Request) {
		switch n {
		case 1:
			w.Header().Set("Retry-After", "0")
			http.Error(w, "slow down", http.StatusTooManyRequests)
		case 2:
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
		default:
			chat(w, goodContent)
		}
	}}
	l, _ := testLLM(t, f, nil)
	_, u, err := l.Extract(context.Background(), "x")
	if err != nil || u.Retries != 2 || u.Calls != 1 {
		t.Fatalf("usage %+v err %v", u, err)
	}
}

func TestLLMRetriesMalformedRepliesThenGivesUp(t *testing.T) {
	bad := []string{
		`not json`,
		`{"entities": [{"name": 7, "type": "T", "description": "d"}], "relationships": []}`, // a number for a name
		`{"entities": []}`, // no relationships array
		`[{"name": "A"}]`,
		`{"entities": [], "relationships": []} trailing`,
	}
	for _, b := range bad {
		if _, _, err := parseReply(b); err == nil {
			t.Errorf("parseReply accepted %q", b)
		}
	}
	f := &fakeServer{reply: func(n int64, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			chat(w, bad[0])
			return
		}
		chat(w, goodContent)
	}}
	l, _ := testLLM(t, f, nil)
	if _, u, err := l.Extract(context.Background(), "x"); err != nil || u.Retries != 1 || u.Calls != 2 {
		t.Fatalf("one malformed reply then a good one: usage %+v err %v", u, err)
	}
	always := &fakeServer{reply: func(_ int64, w http.ResponseWriter, _ *http.Request) { chat(w, bad[1]) }}
	l, _ = testLLM(t, always, nil)
	_, u, err := l.Extract(context.Background(), "x")
	if err == nil || !strings.Contains(err.Error(), "invalid reply") || !strings.Contains(err.Error(), "JSON object") || u.Calls != 4 {
		t.Fatalf("always malformed: usage %+v err %v", u, err)
	}
}

// TestReplyRecordsAreRepaired: records a model gets slightly wrong are
// repaired as GraphRAG repairs them, not a failed unit.
func TestReplyRecordsAreRepaired(t *testing.T) {
	g, repairs, err := parseReply(`{"entities": [{"name": "A", "type": "T"}, {"type": "T"}, {"name": "B", "description": "b", "id": 3}],
		"relationships": [{"source": "A", "target": "C", "description": "d", "weight": -1}, {"source": "A", "description": "no target"},
		{"source": "a", "target": "B", "description": "e", "weight": 4}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Entities) != 3 || g.Entities[2].Name != "C" || g.Entities[0].Description != "" {
		t.Fatalf("entities %+v", g.Entities)
	}
	if len(g.Relationships) != 2 || g.Relationships[0].Weight != 1 || g.Relationships[1].Weight != 4 {
		t.Fatalf("relationships %+v", g.Relationships)
	}
	// A's missing description, the nameless entity, B's missing type, the added end C, the bad weight,
	// the relationship without a target
	if repairs != 6 {
		t.Fatalf("%d repairs, want 6", repairs)
	}
}

func TestLLMTimeoutIsRetried(t *testing.T) {
	f := &fakeServer{reply: func(n int64, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			<-r.Context().Done() // hang until the client gives up
			return
		}
		chat(w, goodContent)
	}}
	l, _ := testLLM(t, f, func(o *LLMOptions) { o.Timeout = 50 * time.Millisecond })
	if _, u, err := l.Extract(context.Background(), "x"); err != nil || u.Retries != 1 {
		t.Fatalf("usage %+v err %v", u, err)
	}
}

func TestLLMFatalStatusIsNotRetried(t *testing.T) {
	f := &fakeServer{reply: func(_ int64, w http.ResponseWriter, _ *http.Request) {
		http.Error(w, `{"error": "invalid api key"}`, http.StatusUnauthorized)
	}}
	l, _ := testLLM(t, f, nil)
	_, _, err := l.Extract(context.Background(), "x")
	if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "invalid api key") || f.calls.Load() != 1 {
		t.Fatalf("calls %d err %v", f.calls.Load(), err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := l.Extract(ctx, "y"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

func TestLLMConcurrencyBound(t *testing.T) {
	release := make(chan struct{})
	f := &fakeServer{reply: func(_ int64, w http.ResponseWriter, _ *http.Request) {
		<-release
		chat(w, goodContent)
	}}
	l, _ := testLLM(t, f, func(o *LLMOptions) { o.Concurrency = 2 })
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, err := l.Extract(context.Background(), fmt.Sprint(i)); err != nil {
				t.Error(err)
			}
		}()
	}
	for f.calls.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	if f.maxIn.Load() > 2 || f.calls.Load() != 8 {
		t.Fatalf("max in flight %d, calls %d", f.maxIn.Load(), f.calls.Load())
	}
}

func TestLLMOptionsValidate(t *testing.T) {
	good := DefaultLLMOptions()
	good.BaseURL, good.Model = "http://localhost:8000/v1", "m"
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(*LLMOptions){
		"url":         func(o *LLMOptions) { o.BaseURL = "localhost:8000" },
		"model":       func(o *LLMOptions) { o.Model = " " },
		"timeout":     func(o *LLMOptions) { o.Timeout = 0 },
		"retries":     func(o *LLMOptions) { o.MaxRetries = -1 },
		"backoff":     func(o *LLMOptions) { o.MaxBackoff = o.Backoff / 2 },
		"concurrency": func(o *LLMOptions) { o.Concurrency = 0 },
		"tokens":      func(o *LLMOptions) { o.MaxOutputTokens = 0 },
	} {
		o := good
		edit(&o)
		if _, err := NewLLM(o); err == nil {
			t.Errorf("%s: accepted %+v", name, o)
		}
	}
}
