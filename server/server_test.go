package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gleaner-rag/gleaner/corpus/synth"
	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/kernels/cpu"
	_ "github.com/gleaner-rag/gleaner/methods"
	"github.com/gleaner-rag/gleaner/models/lexical"
	"github.com/gleaner-rag/gleaner/retrieve"
	"github.com/gleaner-rag/gleaner/server"
	"github.com/gleaner-rag/gleaner/server/api"
	"github.com/gleaner-rag/gleaner/server/client"
)

// gate is a test method that blocks until released (or its context ends),
// so tests can hold requests in flight.
var gate struct {
	sync.Mutex
	release  chan struct{}
	started  chan struct{}
	canceled atomic.Int32
}

type blocking struct{}

func (blocking) Name() string { return "test-block" }
func (blocking) Retrieve(ctx context.Context, q retrieve.Query, k int) ([]retrieve.Hit, error) {
	gate.Lock()
	rel, st := gate.release, gate.started
	gate.Unlock()
	st <- struct{}{}
	select {
	case <-rel:
		return []retrieve.Hit{{Index: 0, Score: 1}}, nil
	case <-ctx.Done():
		gate.canceled.Add(1)
		return nil, ctx.Err()
	}
}

func init() {
	retrieve.Must(retrieve.Register(retrieve.Def[retrieve.NoOptions]{Name: "test-block", Summary: "blocks until released",
		Defaults: func() retrieve.NoOptions { return retrieve.NoOptions{} }, Params: (*retrieve.NoOptions).Params,
		New: func(*index.Index, retrieve.Env, retrieve.NoOptions) (retrieve.Method, error) { return blocking{}, nil }}))
}

func init() {
	retrieve.Must(retrieve.Register(retrieve.Def[retrieve.NoOptions]{Name: "test-panic", Summary: "panics when made",
		Defaults: func() retrieve.NoOptions { return retrieve.NoOptions{} }, Params: (*retrieve.NoOptions).Params,
		New: func(*index.Index, retrieve.Env, retrieve.NoOptions) (retrieve.Method, error) { panic("a bug") }}))
}

func armGate() (release func()) {
	gate.Lock()
	defer gate.Unlock()
	gate.release, gate.started = make(chan struct{}), make(chan struct{}, 64)
	ch := gate.release
	var once sync.Once
	return func() { once.Do(func() { close(ch) }) }
}

var ixDir struct {
	sync.Once
	dir string
}

// testIndex builds one small synthetic index (graph and head) for the package.
func testIndex(t *testing.T) string {
	t.Helper()
	ixDir.Do(func() {
		dir, err := os.MkdirTemp("", "gleaner-server-test")
		if err != nil {
			t.Fatal(err)
		}
		c := synth.Generate(synth.Options{People: 80, Cities: 10, Countries: 4, Bands: 10, Queries: 10, Seed: 3})
		lsa := lexical.DefaultLSA()
		lsa.Dims = 16
		head := index.DefaultHeadOptions()
		head.Pseudo, head.Epochs = 200, 3
		if err := index.Build(context.Background(), c, filepath.Join(dir, "ix"), index.WithLSA(lsa), index.WithHead(head)); err != nil {
			t.Fatal(err)
		}
		ixDir.dir = filepath.Join(dir, "ix")
	})
	if ixDir.dir == "" {
		t.Fatal("the test index failed to build")
	}
	return ixDir.dir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if ixDir.dir != "" {
		os.RemoveAll(filepath.Dir(ixDir.dir))
	}
	os.Exit(code)
}

func newServer(t *testing.T, mutate func(*server.Config)) (*server.Server, *httptest.Server, *client.Client) {
	t.Helper()
	s := mustServer(t, mutate)
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() { hs.Close(); s.Close(context.Background()) })
	c, err := client.New(hs.URL, hs.Client())
	if err != nil {
		t.Fatal(err)
	}
	return s, hs, c
}

func TestRetrieveAndStream(t *testing.T) {
	_, _, c := newServer(t, nil)
	ctx := context.Background()
	resp, err := c.Retrieve(ctx, server.RetrieveRequest{Index: "synth", Query: "band city", K: api.K(3), Text: true})
	if err != nil || len(resp.Hits) != 3 || resp.Hits[0].ID == "" || resp.Hits[0].Text == "" || !resp.Done {
		t.Fatalf("retrieve: %+v %v", resp, err)
	}
	var rounds []int
	err = c.Stream(ctx, server.RetrieveRequest{Index: "synth", Query: "band city", Method: "fastinsight", K: api.K(5),
		Options: map[string]any{"bmax": 30}}, func(r *server.RetrieveResponse) bool {
		if !r.Done {
			rounds = append(rounds, len(r.Hits))
		}
		return true
	})
	if err != nil || len(rounds) != 3 {
		t.Fatalf("stream: rounds %v, %v (want 3 rounds at b_max 30, batch 10)", rounds, err)
	}
	n := 0
	if err := c.Stream(ctx, server.RetrieveRequest{Index: "synth", Query: "band", Method: "fastinsight", Options: map[string]any{"bmax": 30}},
		func(*server.RetrieveResponse) bool { n++; return false }); err != nil || n != 1 {
		t.Errorf("stopping a stream early: %d lines, %v", n, err)
	}
}

// Bad requests get 400 and a JSON error naming the field.
func TestBadRequests(t *testing.T) {
	_, hs, _ := newServer(t, func(c *server.Config) { c.Limits.MaxBodyBytes = 4096; c.Limits.MaxQueryBytes = 100 })
	for _, c := range []struct{ body, field string }{
		{`{"index":"synth","query":"x","method":"nope"}`, "method"},
		{`{"index":"synth","query":"x","k":0}`, "k"},
		{`{"index":"synth","query":"x","k":100000}`, "k"},
		{`{"index":"synth","query":"  "}`, "query"},
		{`{"index":"synth","query":"` + strings.Repeat("x", 200) + `"}`, "query"},
		{`{"index":"../../etc","query":"x"}`, "index"},
		{`{"index":"synth","query":"x","methd":"bm25"}`, "methd"},
		{`{"index":"synth","query":"x","group_by":"page"}`, "group_by"},
		{`{"index":"synth","query":"x","k":"ten"}`, "k"},
		{`{"index":"synth","query":"x","method":"fastinsight","options":{"alpha":2}}`, "options.alpha"},
		{`{"index":"synth","query":"x","method":"fastinsight","first_stage":"garbage"}`, "first_stage"},
		{`{"index":"synth","query":"x","method":"bm25","first_stage":"bm25"}`, "first_stage"}, // bm25 has no first stage
		{`{"index":"synth","query":"x","method":"ppr","options":{"bmax":5}}`, "options.bmax"}, // ppr has no bmax
		{`{"index":"synth","query":"x","method":"re2","options":{"model":"/etc"}}`, "options.model"},
		{`{"index":"synth","query":"x","method":"fastinsight","options":{"bmax":1.5}}`, "options.bmax"},
		{`{"index":"synth","query":"x","method":"fastinsight","options":{"bmax":"7"}}`, "options.bmax"},
		{`{"index":"synth","query":"x","method":"fastinsight","options":{"bmax":null}}`, "options.bmax"},
		{`{"index":"synth","query":"x","method":"fastinsight","options":{"b-max":1}}`, "options.b-max"},
		{`{"index":"synth","query":"x","method":"kg-khop","options":{"khop_quotas":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40,41,42,43,44,45,46,47,48,49,50,51,52,53,54,55,56,57,58,59,60,61,62,63,64,65]}}`, "options.khop_quotas"},
		{`{"index":"synth","query":"x","method":"fuserag","options":{"fuserag_stop":"nan"}}`, "options.fuserag_stop"},
		{`{"index":"synth","query":"x","query":"y"}`, "query"},                                                 // given twice
		{`{"index":"synth","Query":"x"}`, "Query"},                                                             // names are case-sensitive
		{`{"index":"synth","query":"x","method":"fastinsight","options":{"bmax":5,"bmax":6}}`, "options.bmax"}, // given twice
		{`{"index":"synth","query":"x","method":"fastinsight","options":{"first-stage":7}}`, "options.first-stage"},
		{`{"index":"synth","query":"x","method":"fastinsight","first_stage":"bm25","options":{"first_stage":"vector"}}`, "first_stage"},
		{`{"index":"synth","query":"x","method":"fastinsight","graph_kinds":["nosuch"]}`, "graph_kinds"},
		{`{"index":"synth","query":"x","method":"fastinsight","options":{"graph_kind":["nosuch"]}}`, "options.graph_kind"},
		{`{"index":"synth","query":"x","method":"fastinsight","options":{"bmax":[7]}}`, "options.bmax"},
		{`{"index":"synth","query":"x","method":"kg-khop","options":{"khop_quotas":5}}`, "options.khop_quotas"},
		{`{"index":"synth","query":"x","method":"fastinsight","options":{"alpha":"0.5"}}`, "options.alpha"},
		{`{"index":"synth","query":"x","method":"re2","options":{"model":null}}`, "options.model"},
		{`{"index":"synth","query":"x","method":"nexusrag"}`, ""}, // no Tri-Graph in this index
		{`{"index":"synth","query":"x"} {"more":1}`, ""},
		{`{"index":"synth","query":"` + strings.Repeat("x", 5000) + `"}`, ""},
		{`not json`, ""},
	} {
		resp, err := http.Post(hs.URL+"/v1/retrieve", "application/json", strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		var e server.Error
		json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || e.Field != c.field || e.Error == "" {
			t.Errorf("%.60s: %d %+v, want 400 naming %q", c.body, resp.StatusCode, e, c.field)
		}
	}
}

// Overload is a 503 with Retry-After at once, never a queue; a client that
// goes away cancels its work.
func TestAdmissionAndCancellation(t *testing.T) {
	_, hs, c := newServer(t, func(c *server.Config) { c.MaxInFlight = 1 })
	release := armGate()
	defer release()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Retrieve(ctx, server.RetrieveRequest{Index: "synth", Query: "x", Method: "test-block"})
		done <- err
	}()
	<-gate.started
	_, err := c.Retrieve(context.Background(), server.RetrieveRequest{Index: "synth", Query: "x"})
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusServiceUnavailable || ae.RetryAfter == "" {
		t.Fatalf("second request at max in flight 1: %v", err)
	}
	before := gate.canceled.Load()
	cancel()
	<-done
	deadline := time.Now().Add(5 * time.Second)
	for gate.canceled.Load() == before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if gate.canceled.Load() == before {
		t.Error("the server kept working for a client that went away")
	}
	resp, _ := http.Get(hs.URL + "/metrics")
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	resp.Body.Close()
	if !strings.Contains(b.String(), "gleaner_rejected_total 1") {
		t.Error("/metrics does not count the rejection")
	}
}

// Reloading under load drops no request; requests in flight finish on the
// indexes they started with.
func TestReloadUnderLoad(t *testing.T) {
	s, _, c := newServer(t, nil)
	var wg sync.WaitGroup
	var failed atomic.Int32
	stop := make(chan struct{})
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := c.Retrieve(context.Background(), server.RetrieveRequest{Index: "synth", Query: "band city", Method: "ppr"}); err != nil {
					failed.Add(1)
					t.Log(err)
				}
			}
		}()
	}
	for i := 0; i < 5; i++ {
		time.Sleep(30 * time.Millisecond)
		if err := s.Reload(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if failed.Load() != 0 {
		t.Errorf("%d requests failed during reloads", failed.Load())
	}
}

// Draining finishes the request in flight and then stops.
func TestDrain(t *testing.T) {
	cfg := server.DefaultConfig()
	cfg.Indexes = map[string]string{"synth": testIndex(t)}
	cfg.Backend, cfg.InsecureNoAuth = cpu.New(), true
	s, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	c, _ := client.New(hs.URL, hs.Client())
	release := armGate()
	done := make(chan error, 1)
	go func() {
		_, err := c.Retrieve(context.Background(), server.RetrieveRequest{Index: "synth", Query: "x", Method: "test-block"})
		done <- err
	}()
	<-gate.started
	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		hs.Config.Shutdown(ctx)
		shut <- s.Close(ctx)
	}()
	time.Sleep(50 * time.Millisecond)
	release()
	if err := <-done; err != nil {
		t.Errorf("the request in flight during the drain failed: %v", err)
	}
	if err := <-shut; err != nil {
		t.Errorf("drain: %v", err)
	}
	hs.Close()
}

// Two replicas over one read-only index folder answer alike: replicas are
// stateless and scale behind any load balancer.
func TestTwoReplicas(t *testing.T) {
	_, _, a := newServer(t, nil)
	_, _, b := newServer(t, nil)
	for _, q := range []string{"band city", "person country"} {
		ra, err1 := a.Retrieve(context.Background(), server.RetrieveRequest{Index: "synth", Query: q, Method: "ppr"})
		rb, err2 := b.Retrieve(context.Background(), server.RetrieveRequest{Index: "synth", Query: q, Method: "ppr"})
		if err1 != nil || err2 != nil || len(ra.Hits) == 0 {
			t.Fatal(err1, err2)
		}
		for i := range ra.Hits {
			if ra.Hits[i].ID != rb.Hits[i].ID {
				t.Errorf("%q: replicas differ at rank %d", q, i)
			}
		}
	}
}

// The OpenAPI document lists exactly the routes the server serves, and every
// documented route answers (not 404/405).
func TestOpenAPIMatchesHandlers(t *testing.T) {
	_, hs, _ := newServer(t, nil)
	doc := string(server.OpenAPI)
	var documented []string
	scopes := map[string]string{}
	path := ""
	for _, line := range strings.Split(doc, "\n") {
		if m := regexp.MustCompile(`^  (/\S*):$`).FindStringSubmatch(line); m != nil {
			path = m[1]
		} else if m := regexp.MustCompile(`^    (get|post|put|delete):$`).FindStringSubmatch(line); m != nil && path != "" {
			documented = append(documented, strings.ToUpper(m[1])+" "+path)
		} else if m := regexp.MustCompile(`^      x-scope: (\w+)$`).FindStringSubmatch(line); m != nil {
			scopes[documented[len(documented)-1]] = m[1]
		}
	}
	for _, r := range server.Routes() {
		if got := string(server.RouteScope(r)); scopes[r] != got {
			t.Errorf("%s: openapi.yaml says scope %q, the server needs %q", r, scopes[r], got)
		}
	}
	routes := server.Routes()
	slices.Sort(documented)
	slices.Sort(routes)
	if !slices.Equal(documented, routes) {
		t.Fatalf("openapi.yaml documents %v; the server serves %v", documented, routes)
	}
	for _, r := range routes {
		method, p, _ := strings.Cut(r, " ")
		body := `{"index":"synth","query":"band"}`
		req, _ := http.NewRequest(method, hs.URL+p, strings.NewReader(body))
		resp, err := hs.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed {
			t.Errorf("%s: %d", r, resp.StatusCode)
		}
	}
}

// /metrics reports the reranking methods' engine schedulers.
func TestSchedulerMetrics(t *testing.T) {
	_, hs, c := newServer(t, nil)
	if _, err := c.Retrieve(context.Background(), server.RetrieveRequest{Index: "synth", Query: "band city", Method: "re2"}); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(hs.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`(?m)^gleaner_scheduler_items_total (\d+)`).FindStringSubmatch(b.String())
	if m == nil || m[1] == "0" {
		t.Errorf("no scheduler items in /metrics after a re2 query:\n%.400s", b.String())
	}
}

// counted is a backend with a device allocator's counters.
type counted struct{ engine.Backend }

func (counted) MemoryStats() engine.MemoryStats {
	return engine.MemoryStats{Allocs: 7, Reuses: 5, DriverAllocs: 2, InUse: 4096, Cached: 512}
}

// /metrics reports a backend's device allocator when it has one, and no
// such series for the cpu backend.
func TestDeviceMemoryMetrics(t *testing.T) {
	scrape := func(hs *httptest.Server) string {
		resp, err := http.Get(hs.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		return b.String()
	}
	_, hs, _ := newServer(t, nil)
	if body := scrape(hs); strings.Contains(body, "gleaner_device_") {
		t.Errorf("the cpu backend reported device memory")
	}
	_, hs, _ = newServer(t, func(c *server.Config) { c.Backend = counted{c.Backend} })
	body := scrape(hs)
	for _, want := range []string{"gleaner_device_memory_in_use_bytes 4096", "gleaner_device_memory_cached_bytes 512",
		"gleaner_device_allocs_total 7", "gleaner_device_alloc_reuses_total 5", "gleaner_device_driver_allocs_total 2"} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// Each request's options make their own method: the cache key once dropped
// json.Marshal's error (FuseRAG's default Stop is −Inf), so every request
// ran with the first request's options.
func TestOptionsPerRequest(t *testing.T) {
	_, _, c := newServer(t, nil)
	for _, bmax := range []int{30, 10, 20} { // rounds of 10 nodes each on this index
		rounds := 0
		err := c.Stream(context.Background(), server.RetrieveRequest{Index: "synth", Query: "band city", Method: "fastinsight",
			Options: map[string]any{"bmax": bmax}}, func(r *server.RetrieveResponse) bool {
			if !r.Done {
				rounds++
			}
			return true
		})
		if want := bmax / 10; err != nil || rounds != want {
			t.Errorf("b_max %d: %d rounds, %v; want %d (batch 10)", bmax, rounds, err, want)
		}
	}
}

// A method the index cannot run (no trained SeedER encoder) is the
// caller's mistake: 400, not 500.
func TestNoSeederIsBadRequest(t *testing.T) {
	_, _, c := newServer(t, nil)
	_, err := c.Retrieve(context.Background(), server.RetrieveRequest{Index: "synth", Query: "band city", Method: "seeder"})
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest {
		t.Errorf("seeder without an encoder: %v, want 400", err)
	}
}

// A request never echoes a huge key or value in full.
func TestErrorsClipWhatTheyEcho(t *testing.T) {
	_, hs, _ := newServer(t, nil)
	long := strings.Repeat("z", 100000)
	for _, body := range []string{
		`{"index":"synth","query":"x","method":"fastinsight","options":{"` + long + `":1}}`,
		`{"index":"synth","query":"x","method":"fastinsight","first_stage":"` + long + `"}`,
		`{"index":"synth","query":"x","` + long + `":1}`,
		`{"index":"synth","query":"x","method":"` + long + `"}`,
	} {
		resp, err := http.Post(hs.URL+"/v1/retrieve", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || b.Len() > 600 {
			t.Errorf("%.70s…: %d, a %d-byte error", body, resp.StatusCode, b.Len())
		}
	}
}

// More option sets than the server keeps evict the least recently used
// ones: every request is served, the defaults included, and the server
// holds at most the limit per method.
func TestOptionSetsAreEvicted(t *testing.T) {
	_, hs, c := newServer(t, func(c *server.Config) { c.MaxOptionSets = 2 })
	ctx := context.Background()
	for bmax := 1; bmax <= 6; bmax++ {
		if _, err := c.Retrieve(ctx, server.RetrieveRequest{Index: "synth", Query: "band city", Method: "gar",
			Options: map[string]any{"bmax": bmax}}); err != nil {
			t.Fatalf("bmax %d: %v", bmax, err)
		}
	}
	resp, err := c.Retrieve(ctx, server.RetrieveRequest{Index: "synth", Query: "band city", Method: "gar"})
	if err != nil || len(resp.Hits) == 0 {
		t.Fatalf("the defaults after six option sets: %v", err)
	}
	m, err := http.Get(hs.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(m.Body)
	if !strings.Contains(b.String(), "\ngleaner_option_sets 2\n") {
		t.Errorf("want 2 option sets held; /metrics:\n%s", regexp.MustCompile(`(?m)^gleaner_option_sets.*$`).FindString(b.String()))
	}
}

// GET /v1/methods lists the values a request starts from: the operator's
// settings over the defaults; sending the listed values back is accepted.
func TestMethodsListWhatRequestsGet(t *testing.T) {
	_, _, c := newServer(t, func(c *server.Config) { c.Settings.Set("bmax", "5") })
	ms, err := c.Methods(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms.Methods {
		if m.Name != "gar" && m.Name != "fastinsight" {
			continue
		}
		opts := map[string]any{}
		for _, st := range m.Settings {
			if st.Name == "bmax" && st.Default != float64(5) {
				t.Errorf("%s: bmax listed as %v, want the server's 5", m.Name, st.Default)
			}
			if !st.Local {
				opts[st.Name] = st.Default
			}
		}
		if _, err := c.Retrieve(context.Background(), server.RetrieveRequest{Index: "synth", Query: "band city", Method: m.Name, Options: opts}); err != nil {
			t.Errorf("%s with its listed settings sent back: %v", m.Name, err)
		}
	}
}

// Operator settings that no request could use are refused at start.
func TestStartRefusesBadServerSettings(t *testing.T) {
	for _, c := range [][2]string{{"graph-kind", "nosuch"}, {"model", "/nonexistent"}, {"bmax", "0"}} {
		cfg := server.DefaultConfig()
		cfg.Indexes = map[string]string{"synth": testIndex(t)}
		cfg.Backend, cfg.InsecureNoAuth = cpu.New(), true
		cfg.Settings.Set(c[0], c[1])
		if s, err := server.New(cfg); err == nil || !strings.Contains(err.Error(), c[0]) {
			t.Errorf("%s=%s: %v, want an error naming it", c[0], c[1], err)
			if s != nil {
				s.Close(context.Background())
			}
		}
	}
}

// A method that panics when made is a 500 for each request, never an
// option set that later requests wait on until their deadline.
func TestMethodPanicIsNotCached(t *testing.T) {
	_, _, c := newServer(t, nil)
	for i := 0; i < 2; i++ {
		_, err := c.Retrieve(context.Background(), server.RetrieveRequest{Index: "synth", Query: "band", Method: "test-panic", TimeoutMS: 60000})
		var ae *client.APIError
		if !errors.As(err, &ae) || ae.Status != http.StatusInternalServerError || !strings.Contains(ae.Error(), "panicked") {
			t.Fatalf("request %d: %v, want a 500 saying the method panicked", i, err)
		}
	}
}

// A request without a method gets the index's default (ppr over its
// mentions edges) or the server's profile's, and hits carry documents.
func TestDefaultsProfileAndGrouping(t *testing.T) {
	ctx := context.Background()
	_, _, c := newServer(t, nil)
	resp, err := c.Retrieve(ctx, server.RetrieveRequest{Index: "synth", Query: "band city", K: api.K(4)})
	if err != nil || resp.Method != "ppr" || resp.Hits[0].Document != resp.Hits[0].ID {
		t.Fatalf("auto: %+v %v", resp, err)
	}
	grouped, err := c.Retrieve(ctx, server.RetrieveRequest{Index: "synth", Query: "band city", Method: "bm25", K: api.K(4), GroupBy: "document"})
	plain, err2 := c.Retrieve(ctx, server.RetrieveRequest{Index: "synth", Query: "band city", Method: "bm25", K: api.K(4)})
	if err != nil || err2 != nil || len(grouped.Hits) != 4 || grouped.Hits[0].Passage != plain.Hits[0].ID || grouped.Hits[0].ID != plain.Hits[0].Document {
		t.Fatalf("group_by document on whole documents: %+v %+v %v %v", grouped, plain, err, err2)
	}
	p := &retrieve.Profile{Method: "hybrid", Settings: map[string]string{"hybrid-weight": "0.5"}, GroupBy: "document"}
	_, _, pc := newServer(t, func(cfg *server.Config) { cfg.Profile = p })
	resp, err = pc.Retrieve(ctx, server.RetrieveRequest{Index: "synth", Query: "band city", K: api.K(2)})
	if err != nil || resp.Method != "hybrid" || resp.Hits[0].Passage == "" {
		t.Fatalf("profile: %+v %v", resp, err)
	}
}

func TestStartRefusesAProfileAnIndexCannotRun(t *testing.T) {
	for _, p := range []*retrieve.Profile{
		{Method: "ketrag"}, // no KET-RAG section
		{Method: "ppr", Settings: map[string]string{"graph-kind": "nope"}},
	} {
		cfg := server.DefaultConfig()
		cfg.Indexes = map[string]string{"synth": testIndex(t)}
		cfg.Backend, cfg.Profile, cfg.InsecureNoAuth = cpu.New(), p, true
		if s, err := server.New(cfg); err == nil || !strings.Contains(err.Error(), "profile") {
			if s != nil {
				s.Close(context.Background())
			}
			t.Fatalf("profile %+v: %v", p, err)
		}
	}
}

// serveGuarded serves s over real TCP with its connection defences.
func serveGuarded(t *testing.T, s *server.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := s.HTTPServer()
	go hs.Serve(s.Listener(ln))
	t.Cleanup(func() { hs.Close(); s.Close(context.Background()) })
	return "http://" + ln.Addr().String()
}

// stall opens a connection that sends a request's headers and part of its
// body, then nothing.
func stall(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(addr, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "POST /v1/retrieve HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"index\":")
	return c
}

// Stalled bodies no longer hold the request slots: with 4 slots and 257
// stalled bodies, every well-behaved request is answered 200.
func TestStalledBodiesDoNotHoldSlots(t *testing.T) {
	s := mustServer(t, func(c *server.Config) { c.MaxInFlight, c.BodyTimeout = 4, 2*time.Second })
	addr := serveGuarded(t, s)
	var stalled []net.Conn
	for range 257 {
		stalled = append(stalled, stall(t, addr))
	}
	defer func() {
		for _, c := range stalled {
			c.Close()
		}
	}()
	c, err := client.New(addr, &http.Client{Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if _, err := c.Retrieve(context.Background(), server.RetrieveRequest{Index: "synth", Query: "band city", Method: "bm25"}); err != nil {
			t.Fatalf("request %d beside 257 stalled bodies: %v", i, err)
		}
	}
	// A stalled body gets 408 once its time is up.
	buf := make([]byte, 512)
	stalled[0].SetReadDeadline(time.Now().Add(20 * time.Second))
	n, rerr := stalled[0].Read(buf)
	if !strings.Contains(string(buf[:n]), "408") {
		t.Fatalf("a stalled body got %q (%v), want a 408", buf[:n], rerr)
	}
}

// A flood of silent and idle connections past the cap is shed, oldest
// first, and a real client keeps being served.
func TestIdleFloodLeavesClientsServed(t *testing.T) {
	s := mustServer(t, func(c *server.Config) { c.MaxConns = 64 })
	addr := serveGuarded(t, s)
	host := strings.TrimPrefix(addr, "http://")
	var flood []net.Conn
	defer func() {
		for _, c := range flood {
			c.Close()
		}
	}()
	c, err := client.New(addr, &http.Client{Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ok := 0
	for round := range 20 {
		for range 100 { // 2,000 connections in all, 64 allowed
			conn, err := net.Dial("tcp", host)
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			flood = append(flood, conn)
		}
		for range 5 {
			if _, err := c.Retrieve(context.Background(), server.RetrieveRequest{Index: "synth", Query: "band city", Method: "bm25"}); err == nil {
				ok++
			} else {
				t.Logf("round %d: %v", round, err)
			}
		}
	}
	if ok < 99 { // ≥ 99 % of 100
		t.Fatalf("%d of 100 requests served beside 2,000 idle connections", ok)
	}
	// The last round's connections may still wait in the listen backlog:
	// wait until the server has met them all (accepted or shed).
	open, shed := gauge(t, s, "gleaner_connections"), gauge(t, s, "gleaner_connections_shed_total")
	for deadline := time.Now().Add(time.Minute); open+shed < 2000 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		open, shed = gauge(t, s, "gleaner_connections"), gauge(t, s, "gleaner_connections_shed_total")
	}
	if open > 64 || shed < 2000-64 {
		t.Fatalf("%v connections open (cap 64), %v shed", open, shed)
	}
}

// gauge reads one metric of s's registry.
func gauge(t *testing.T, s *server.Server, name string) float64 {
	return counter(t, s, name, "")
}

// counter reads one metric of s's registry: the series whose (only)
// label has the value label, or the first series when label is "".
func counter(t *testing.T, s *server.Server, name, label string) float64 {
	t.Helper()
	mfs, err := s.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if label != "" && (len(m.GetLabel()) == 0 || m.GetLabel()[0].GetValue() != label) {
				continue
			}
			if m.GetGauge() != nil {
				return m.GetGauge().GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	t.Fatalf("no metric %s{%s}", name, label)
	return 0
}

// mustServer makes a server over the test index (not yet listening).
func mustServer(t *testing.T, mutate func(*server.Config)) *server.Server {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.Indexes = map[string]string{"synth": testIndex(t)}
	cfg.Backend, cfg.InsecureNoAuth = cpu.New(), true
	if mutate != nil {
		mutate(&cfg)
	}
	s, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
