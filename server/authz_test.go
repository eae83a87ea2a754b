package server_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/corpus/synth"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/kernels/cpu"
	"github.com/gleaner-rag/gleaner/models/lexical"
	"github.com/gleaner-rag/gleaner/server"
	"github.com/gleaner-rag/gleaner/server/api"
	"github.com/gleaner-rag/gleaner/server/auth"
	"github.com/gleaner-rag/gleaner/server/client"
)

// keyring makes keys and returns the ring and each key's token by id.
func keyring(t *testing.T, keys ...auth.Key) (*auth.Keyring, map[string]string) {
	t.Helper()
	toks := map[string]string{}
	for i := range keys {
		tok, hash, err := auth.NewToken(keys[i].ID)
		if err != nil {
			t.Fatal(err)
		}
		keys[i].Hash, toks[keys[i].ID] = hash, tok
	}
	r, err := auth.New(auth.File{Version: auth.FileVersion, Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	return r, toks
}

// authServer serves the test index with keys; audit lines go to the
// returned buffer.
func authServer(t *testing.T, ring *auth.Keyring, mutate func(*server.Config)) (*server.Server, *httptest.Server, *bytes.Buffer) {
	t.Helper()
	audit := &bytes.Buffer{}
	s := mustServer(t, func(c *server.Config) {
		c.InsecureNoAuth, c.Keys = false, ring
		c.AuditLogger = slog.New(slog.NewJSONHandler(audit, nil))
		if mutate != nil {
			mutate(c)
		}
	})
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() { hs.Close(); s.Close(context.Background()) })
	return s, hs, audit
}

// call sends one request with token (none when empty) and returns the
// status, body and headers.
func call(t *testing.T, hs *httptest.Server, method, path, token, body string) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(method, hs.URL+path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b)), resp.Header
}

// Every route but the health checks needs a key with its scope and
// index; refusals say nothing but their status.
func TestKeysScopesAndIndexes(t *testing.T) {
	ring, tok := keyring(t,
		auth.Key{ID: "reader", Scopes: []auth.Scope{auth.Read}, Indexes: []string{"synth"}},
		auth.Key{ID: "elsewhere", Scopes: []auth.Scope{auth.Read}, Indexes: []string{"other"}},
		auth.Key{ID: "ops", Scopes: []auth.Scope{auth.Admin}, Indexes: []string{"*"}})
	s, hs, audit := authServer(t, ring, nil)
	const q = `{"index":"synth","query":"band","k":2}`
	cases := []struct {
		method, path, token, body string
		want                      int
	}{
		{"GET", "/healthz", "", "", 200},
		{"GET", "/readyz", "", "", 200},
		{"POST", "/v1/retrieve", "", q, 401},
		{"POST", "/v1/retrieve", tok["reader"] + "x", q, 401},
		{"POST", "/v1/retrieve", "glk_reader_" + strings.Repeat("0", 64), q, 401},
		{"POST", "/v1/retrieve", tok["reader"], q, 200},
		{"POST", "/v1/retrieve", tok["elsewhere"], q, 403},
		{"POST", "/v1/retrieve", tok["reader"], `{"index":"no-such","query":"band"}`, 403},
		{"POST", "/v1/retrieve", tok["ops"], q, 403}, // admin is not read
		{"GET", "/v1/methods", tok["reader"], "", 200},
		{"GET", "/v1/methods", "", "", 401},
		{"POST", "/v1/admin/reload", "", "", 401},
		{"POST", "/v1/admin/reload", tok["reader"], "", 403},
		{"POST", "/v1/admin/reload", tok["ops"], "", 200},
		{"GET", "/metrics", tok["reader"], "", 403},
		{"GET", "/metrics", tok["ops"], "", 200},
	}
	bodies := map[int]map[string]bool{}
	for _, c := range cases {
		code, body, h := call(t, hs, c.method, c.path, c.token, c.body)
		if code != c.want {
			t.Errorf("%s %s with %.12q: %d %s, want %d", c.method, c.path, c.token, code, body, c.want)
		}
		if code == 401 && h.Get("WWW-Authenticate") == "" {
			t.Errorf("%s %s: 401 without WWW-Authenticate", c.method, c.path)
		}
		if code == 401 || code == 403 {
			if bodies[code] == nil {
				bodies[code] = map[string]bool{}
			}
			bodies[code][body] = true
		}
	}
	// One body per refusal status, except that a key kept from an index
	// learns it may not use it (the same words for a missing index).
	if len(bodies[401]) != 1 || len(bodies[403]) != 2 {
		t.Errorf("refusal bodies differ: %v", bodies)
	}
	for b := range bodies[403] {
		if strings.Contains(b, "no-such") || strings.Contains(b, "other") || strings.Contains(b, "synth") {
			t.Errorf("a 403 names an index: %s", b)
		}
	}
	// Requests are counted by index once it is known to exist and be
	// allowed; before that under "?", so a caller cannot grow the labels.
	if n := series(t, s, "gleaner_requests_total", map[string]string{"index": "synth", "code": "200"}); n != 1 {
		t.Errorf("requests_total{index=synth,code=200} = %v, want 1", n)
	}
	if n := series(t, s, "gleaner_requests_total", map[string]string{"index": "?", "code": "403"}); n != 2 {
		t.Errorf("requests_total{index=?,code=403} = %v, want 2 (the scope refusal never reaches the handler)", n)
	}
	// The index list shows a key only its own indexes.
	c, _ := client.New(hs.URL, hs.Client())
	if ixs, err := c.WithToken(tok["elsewhere"]).Indexes(context.Background()); err != nil || len(ixs) != 0 {
		t.Errorf("elsewhere sees %v (%v)", ixs, err)
	}
	if ixs, err := c.WithToken(tok["reader"]).Indexes(context.Background()); err != nil || len(ixs) != 1 {
		t.Errorf("reader sees %v (%v)", ixs, err)
	}
	// One audit line per admin request, refused or served, naming the key.
	lines := strings.Split(strings.TrimSpace(audit.String()), "\n")
	if len(lines) != 5 {
		t.Fatalf("%d audit lines, want 5:\n%s", len(lines), audit)
	}
	for _, want := range []string{`"refused":"missing"`, `"key":"reader","remote"`, `"key":"ops"`, `"action":"POST /v1/admin/reload"`, `"action":"GET /metrics"`} {
		if !strings.Contains(audit.String(), want) {
			t.Errorf("no %s in the audit log:\n%s", want, audit)
		}
	}
	if strings.Contains(audit.String(), tok["ops"]) {
		t.Error("the audit log holds a token")
	}
}

// A key's rate limit answers 429 with Retry-After once its burst is spent;
// other keys are not held back.
func TestRateLimitPerKey(t *testing.T) {
	ring, tok := keyring(t,
		auth.Key{ID: "slow", Scopes: []auth.Scope{auth.Read}, Indexes: []string{"*"}, Rate: 0.001, Burst: 2},
		auth.Key{ID: "free", Scopes: []auth.Scope{auth.Read}, Indexes: []string{"*"}})
	s, hs, _ := authServer(t, ring, nil)
	for i, want := range []int{200, 200, 429, 429} {
		code, body, h := call(t, hs, "GET", "/v1/methods", tok["slow"], "")
		if code != want {
			t.Fatalf("request %d: %d %s, want %d", i, code, body, want)
		}
		if code == 429 && h.Get("Retry-After") != "1000" {
			t.Errorf("Retry-After %q, want 1000", h.Get("Retry-After"))
		}
	}
	for range 5 {
		if code, _, _ := call(t, hs, "GET", "/v1/methods", tok["free"], ""); code != 200 {
			t.Fatalf("the key without a limit got %d", code)
		}
	}
	if got := counter(t, s, "gleaner_auth_refused_total", "rate"); got != 2 {
		t.Errorf("gleaner_auth_refused_total{reason=rate} = %v, want 2", got)
	}
	// A reload of the keys starts the buckets afresh.
	if err := s.SetKeys(ring); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := call(t, hs, "GET", "/v1/methods", tok["slow"], ""); code != 200 {
		t.Errorf("after a keys reload: %d", code)
	}
}

// SetKeys swaps the keys: a revoked token is refused at once, a new one
// accepted.
func TestKeysReload(t *testing.T) {
	old, oldTok := keyring(t, auth.Key{ID: "a", Scopes: []auth.Scope{auth.Read}, Indexes: []string{"*"}})
	s, hs, audit := authServer(t, old, nil)
	c, _ := client.New(hs.URL, hs.Client())
	ctx := context.Background()
	if _, err := c.WithToken(oldTok["a"]).Methods(ctx); err != nil {
		t.Fatal(err)
	}
	fresh, newTok := keyring(t, auth.Key{ID: "b", Scopes: []auth.Scope{auth.Read}, Indexes: []string{"*"}})
	if err := s.SetKeys(fresh); err != nil {
		t.Fatal(err)
	}
	var ae *client.APIError
	if _, err := c.WithToken(oldTok["a"]).Methods(ctx); !errors.As(err, &ae) || ae.Status != 401 {
		t.Errorf("a revoked key: %v", err)
	}
	if _, err := c.WithToken(newTok["b"]).Methods(ctx); err != nil {
		t.Errorf("a new key: %v", err)
	}
	if err := s.SetKeys(nil); err == nil {
		t.Error("SetKeys(nil) turned authentication off")
	}
	if !strings.Contains(audit.String(), "keys reloaded") {
		t.Errorf("no audit line for the keys reload:\n%s", audit)
	}
}

// With SeparateAdmin the admin routes leave the main handler for the
// admin one, which still needs an admin key.
func TestSeparateAdminListener(t *testing.T) {
	ring, tok := keyring(t,
		auth.Key{ID: "ops", Scopes: []auth.Scope{auth.Admin, auth.Read}, Indexes: []string{"*"}})
	s, hs, _ := authServer(t, ring, func(c *server.Config) { c.SeparateAdmin = true })
	if code, _, _ := call(t, hs, "POST", "/v1/admin/reload", tok["ops"], ""); code != 404 {
		t.Errorf("reload on the main listener: %d, want 404", code)
	}
	if code, _, _ := call(t, hs, "GET", "/metrics", tok["ops"], ""); code != 404 {
		t.Errorf("metrics on the main listener: %d, want 404", code)
	}
	admin := httptest.NewServer(s.AdminHandler())
	defer admin.Close()
	for _, c := range []struct {
		path, token string
		want        int
	}{{"/v1/admin/reload", "", 401}, {"/v1/admin/reload", tok["ops"], 200}, {"/healthz", "", 200}} {
		method := "POST"
		if c.path == "/healthz" {
			method = "GET"
		}
		if code, body, _ := call(t, admin, method, c.path, c.token, ""); code != c.want {
			t.Errorf("admin %s: %d %s, want %d", c.path, code, body, c.want)
		}
	}
	if code, _, _ := call(t, admin, "POST", "/v1/retrieve", tok["ops"], `{"index":"synth","query":"x"}`); code != 404 {
		t.Errorf("retrieve on the admin listener: %d, want 404", code)
	}
}

// A server needs keys or an explicit InsecureNoAuth, not both.
func TestStartNeedsKeysOrInsecure(t *testing.T) {
	ring, _ := keyring(t, auth.Key{ID: "a", Scopes: []auth.Scope{auth.Read}, Indexes: []string{"*"}})
	for name, c := range map[string]struct {
		keys     *auth.Keyring
		insecure bool
		want     string
	}{"neither": {nil, false, "no keys"}, "both": {ring, true, "choose one"}} {
		cfg := server.DefaultConfig()
		cfg.Indexes, cfg.Backend = map[string]string{"synth": testIndex(t)}, cpu.New()
		cfg.Keys, cfg.InsecureNoAuth = c.keys, c.insecure
		if _, err := server.New(cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// series is the value of the series of metric name whose labels include
// want (0 when there is none).
func series(t *testing.T, s *server.Server, name string, want map[string]string) float64 {
	t.Helper()
	mfs, err := s.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if have[k] != v {
					continue next
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// aclIndex builds an index whose nodes carry ACL groups: every third node
// is eng's, every third but one legal's, the rest public. It returns the
// folder and each node's groups by id.
func aclIndex(t *testing.T) (string, map[string][]any) {
	t.Helper()
	c := synth.Generate(synth.Options{People: 40, Cities: 6, Countries: 3, Bands: 8, Queries: 4, Seed: 5})
	acl := map[string][]any{}
	for i := range c.Nodes {
		switch i % 3 {
		case 0:
			acl[c.Nodes[i].ID] = []any{"eng"}
		case 1:
			acl[c.Nodes[i].ID] = []any{"legal"}
		}
		if g, ok := acl[c.Nodes[i].ID]; ok {
			c.Nodes[i].Meta = map[string]any{"acl": g}
		}
	}
	dir := filepath.Join(t.TempDir(), "acl")
	lsa := lexical.DefaultLSA()
	lsa.Dims = 8
	if err := index.Build(context.Background(), c, dir, index.WithLSA(lsa), index.WithoutHead()); err != nil {
		t.Fatal(err)
	}
	return dir, acl
}

// A key's ACL groups are ANDed into every request: no hit outside them,
// for every method that takes filters; methods that cannot are refused;
// a request's own filter narrows further.
func TestACLGroupsRestrictEveryRequest(t *testing.T) {
	dir, acl := aclIndex(t)
	ring, tok := keyring(t,
		auth.Key{ID: "eng", Scopes: []auth.Scope{auth.Read}, Indexes: []string{"*"}, Groups: []string{"eng"}},
		auth.Key{ID: "both", Scopes: []auth.Scope{auth.Read}, Indexes: []string{"*"}, Groups: []string{"eng", "legal"}},
		auth.Key{ID: "public", Scopes: []auth.Scope{auth.Read}, Indexes: []string{"*"}})
	_, hs, _ := authServer(t, ring, func(c *server.Config) {
		c.Indexes = map[string]string{"acl": dir}
		c.ACLField = "acl"
	})
	c, _ := client.New(hs.URL, hs.Client())
	ctx := context.Background()
	sees := func(key string, groups ...string) func(id string) bool {
		return func(id string) bool {
			g, restricted := acl[id]
			if !restricted {
				return true
			}
			for _, want := range groups {
				if slices.Contains(g, any(want)) {
					return true
				}
			}
			return false
		}
	}
	for _, k := range []struct {
		id     string
		groups []string
	}{{"eng", []string{"eng"}}, {"both", []string{"eng", "legal"}}, {"public", nil}} {
		allowed := sees(k.id, k.groups...)
		for _, method := range []string{"bm25", "ppr", "vector", "hybrid", "ppr-bm25", ""} {
			for _, query := range []string{"band city born", "country capital", "city band"} {
				resp, err := c.WithToken(tok[k.id]).Retrieve(ctx, server.RetrieveRequest{Index: "acl", Query: query, Method: method, K: api.K(50)})
				if err != nil {
					t.Fatalf("%s %s: %v", k.id, method, err)
				}
				if len(resp.Hits) == 0 {
					t.Errorf("%s %s %q: no hits", k.id, method, query)
				}
				for _, h := range resp.Hits {
					if !allowed(h.ID) {
						t.Fatalf("key %s, method %s: %s (groups %v) returned", k.id, method, h.ID, acl[h.ID])
					}
				}
			}
		}
	}
	// The index's size, as each key sees it: no count reveals hidden nodes.
	public := len(aclNodes(dir)) - len(acl)
	for key, want := range map[string]int{"public": public, "eng": public + countGroup(acl, "eng")} {
		ixs, err := c.WithToken(tok[key]).Indexes(ctx)
		if err != nil || len(ixs) != 1 || ixs[0].Nodes != want {
			t.Errorf("key %s sees the index as %+v (%v), want %d nodes", key, ixs, err, want)
		}
	}
	// Every built-in method takes filters; one registered by this test
	// (test-block) does not, and is refused before it runs.
	_, err := c.WithToken(tok["eng"]).Retrieve(ctx, server.RetrieveRequest{Index: "acl", Query: "band", Method: "test-block"})
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.Status != 400 || ae.Body.Field != "method" || !strings.Contains(ae.Body.Error, "access control") {
		t.Errorf("a method without filter support under ACLs: %v", err)
	}
	// The request's own filter: only public nodes for the eng key.
	resp, err := c.WithToken(tok["eng"]).Retrieve(ctx, server.RetrieveRequest{Index: "acl", Query: "band city", Method: "bm25", K: api.K(50),
		Filter: []byte(`{"field":"acl","exists":false}`)})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range resp.Hits {
		if _, restricted := acl[h.ID]; restricted {
			t.Errorf("the filter let %s through", h.ID)
		}
	}
	for body, want := range map[string]string{
		`{"field":"acl"}`:             "exactly one of eq",
		`{"and":[]}`:                  "and of nothing",
		`{"field":"x","eq":[1]}`:      "want text, a number or a boolean",
		`{"field":"x","eq":1,"eq":2}`: "given twice",
		`{"field":"x","gt":true}`:     "no order",
		`{"nope":1}`:                  "unknown field",
		strings.Repeat(`{"not":`, 40) + `{"field":"x","eq":1}` + strings.Repeat("}", 40): "nested deeper",
	} {
		_, err := c.WithToken(tok["eng"]).Retrieve(ctx, server.RetrieveRequest{Index: "acl", Query: "band", Method: "bm25", Filter: []byte(body)})
		if !errors.As(err, &ae) || ae.Status != 400 || ae.Body.Field != "filter" || !strings.Contains(ae.Body.Error, want) {
			t.Errorf("filter %.40s: %v, want 400 on filter saying %q", body, err, want)
		}
	}
}

// Keys with ACL groups need an ACL field: without one they would see
// every node, so the server refuses them at start and on a keys reload.
func TestGroupsNeedAnACLField(t *testing.T) {
	ring, _ := keyring(t, auth.Key{ID: "g", Scopes: []auth.Scope{auth.Read}, Indexes: []string{"*"}, Groups: []string{"eng"}})
	cfg := server.DefaultConfig()
	cfg.Indexes, cfg.Backend, cfg.Keys = map[string]string{"synth": testIndex(t)}, cpu.New(), ring
	if _, err := server.New(cfg); err == nil || !strings.Contains(err.Error(), "ACL") {
		t.Errorf("start: %v", err)
	}
	plain, _ := keyring(t, auth.Key{ID: "p", Scopes: []auth.Scope{auth.Read}, Indexes: []string{"*"}})
	s, _, _ := authServer(t, plain, nil)
	if err := s.SetKeys(ring); err == nil || !strings.Contains(err.Error(), "ACL") {
		t.Errorf("reload: %v", err)
	}
}

// A body with invalid UTF-8 is a 400 that says where, never a query with
// the bad bytes silently replaced.
func TestInvalidUTF8IsRefused(t *testing.T) {
	_, hs, _ := newServer(t, nil)
	for _, body := range []string{"{\"index\":\"synth\",\"query\":\"band \xff city\"}", "{\"index\":\"synth\",\"query\":\"\xc3\"}"} {
		code, resp, _ := call(t, hs, "POST", "/v1/retrieve", "", body)
		if code != 400 || !strings.Contains(resp, "not valid UTF-8 (at byte") {
			t.Errorf("%q: %d %s", body, code, resp)
		}
	}
}

// aclNodes are the node ids of the index at dir.
func aclNodes(dir string) []string {
	ix, err := index.Open(dir, store.OpenOptions{})
	if err != nil {
		return nil
	}
	defer ix.Close()
	ids := make([]string, ix.N())
	for i := range ids {
		ids[i] = ix.NodeID(i)
	}
	return ids
}

// countGroup counts the nodes whose ACL lists g.
func countGroup(acl map[string][]any, g string) int {
	n := 0
	for _, gs := range acl {
		if slices.Contains(gs, any(g)) {
			n++
		}
	}
	return n
}
