package kgextract

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// A relationship weight beyond float32 (it would be stored as +Inf) is
// repaired to the default, as NaN and negative ones are.
func TestReplyWeightBeyondFloat32IsRepaired(t *testing.T) {
	g, repairs, err := parseReply(`{"entities": [{"name": "A", "type": "T", "description": "a"}, {"name": "B", "type": "T", "description": "b"}],
		"relationships": [{"source": "A", "target": "B", "description": "d", "weight": 1e300}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Relationships) != 1 || g.Relationships[0].Weight != 1 || repairs != 1 {
		t.Fatalf("relationships %+v, %d repairs", g.Relationships, repairs)
	}
}

// Usage a server claims that is negative or absurd is refused (the reply
// is retried, then the extraction fails naming it), never added to the
// cost report.
func TestLLMRefusesImpossibleUsage(t *testing.T) {
	for _, usage := range []map[string]int{{"prompt_tokens": -5, "completion_tokens": 40}, {"prompt_tokens": 1, "completion_tokens": 1 << 40}} {
		f := &fakeServer{reply: func(n int64, w http.ResponseWriter, r *http.Request) {
			json.NewEncoder(w).Encode(map[string]any{
				"choices": []any{map[string]any{"message": map[string]string{"role": "assistant", "content": goodContent}}},
				"usage":   usage,
			})
		}}
		l, _ := testLLM(t, f, nil)
		_, u, err := l.Extract(context.Background(), "Ann Lee lived in Paris.")
		if err == nil || !strings.Contains(err.Error(), "usage") || u.InputTokens != 0 || u.OutputTokens != 0 {
			t.Errorf("usage %v: err %v, usage %+v", usage, err, u)
		}
	}
}

// A redirect to another host is refused at once (it would carry the
// user's text there); one within the host is followed.
func TestLLMRefusesCrossHostRedirects(t *testing.T) {
	var elsewhere atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere.Add(1); chat(w, goodContent) }))
	defer other.Close()
	f := &fakeServer{reply: func(n int64, w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/v1/chat/completions", http.StatusTemporaryRedirect)
	}}
	l, _ := testLLM(t, f, nil)
	_, _, err := l.Extract(context.Background(), "Ann Lee lived in Paris.")
	if err == nil || !strings.Contains(err.Error(), "redirected to") || elsewhere.Load() != 0 || f.calls.Load() != 1 {
		t.Fatalf("cross-host redirect: err %v, %d requests elsewhere, %d calls", err, elsewhere.Load(), f.calls.Load())
	}
	var here atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/v2/chat/completions", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/v2/chat/completions", func(w http.ResponseWriter, r *http.Request) { here.Add(1); chat(w, goodContent) })
	same := httptest.NewServer(mux)
	defer same.Close()
	o := DefaultLLMOptions()
	o.BaseURL, o.Model = same.URL+"/v1", "m"
	l2, err := NewLLM(o)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := l2.Extract(context.Background(), "Ann Lee lived in Paris."); err != nil || here.Load() != 1 {
		t.Fatalf("same-host redirect: %v (%d)", err, here.Load())
	}
}
