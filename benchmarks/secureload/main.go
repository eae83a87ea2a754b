// Command secureload measures what authentication and filters cost gleaner
// serve: the same requests against the same index, once open (no keys, no
// filter) and once secured (a bearer key checked per request, its ACL
// groups ANDed with a request filter on every query), on 127.0.0.1
// (loopback only). It builds a synthetic corpus with ACL and team
// metadata, runs each setup for -duration per method, prints throughput
// and latency side by side, and stops by itself. Methods that read a
// section (nexusrag, linearrag: the Tri-Graph with prose and title NER;
// ketrag: its structures with the local extractor) get it built first.
//
//	go run ./benchmarks/secureload -nodes 20000 -duration 10s
//	go run ./benchmarks/secureload -nodes 3000 -methods nexusrag,ketrag
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/corpus/synth"
	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/index"
	_ "github.com/gleaner-rag/gleaner/kernels/cpu"
	_ "github.com/gleaner-rag/gleaner/methods"
	"github.com/gleaner-rag/gleaner/methods/ketrag"
	"github.com/gleaner-rag/gleaner/methods/trigraph"
	"github.com/gleaner-rag/gleaner/models/kgextract"
	"github.com/gleaner-rag/gleaner/models/ner"
	"github.com/gleaner-rag/gleaner/retrieve"
	"github.com/gleaner-rag/gleaner/server"
	"github.com/gleaner-rag/gleaner/server/auth"
)

func main() {
	nodes := flag.Int("nodes", 20000, "about how many nodes the synthetic corpus has")
	clients := flag.Int("clients", 16, "concurrent clients")
	duration := flag.Duration("duration", 10*time.Second, "attack per method and setup")
	work := flag.String("work", "", "folder for the index (default: a temporary one, removed)")
	profile := flag.String("cpuprofile", "", "write a CPU profile of the secured runs here")
	list := flag.String("methods", "bm25,ppr", "comma-separated methods to measure")
	flag.Parse()
	methods = strings.Split(*list, ",")
	for _, m := range methods {
		if !retrieve.SupportsFilters(m) {
			log.Fatalf("secureload: -methods: %q is not a method that takes filters", m)
		}
	}
	if *nodes < 100 || *clients < 1 || *duration <= 0 {
		log.Fatal("secureload: -nodes ≥ 100, -clients ≥ 1, -duration > 0")
	}
	dir := *work
	if dir == "" {
		d, err := os.MkdirTemp("", "secureload")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(d)
		dir = d
	}
	c := corpusWithACLs(*nodes)
	ixDir := filepath.Join(dir, "ix")
	start := time.Now()
	if err := index.Build(context.Background(), c, ixDir, index.WithoutHead()); err != nil {
		log.Fatal(err)
	}
	if err := buildSections(ixDir, methods); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("secureload: %d nodes, %d edges, %d queries; indexed in %v; %d clients, %v per run, GOMAXPROCS %d\n\n",
		len(c.Nodes), len(c.Edges), len(c.Queries), time.Since(start).Round(time.Millisecond), *clients, *duration, runtime.GOMAXPROCS(0))
	open := run(ixDir, c.Queries, *clients, *duration, false)
	if *profile != "" {
		f, err := os.Create(*profile)
		if err != nil {
			log.Fatal(err)
		}
		pprof.StartCPUProfile(f)
	}
	secured := run(ixDir, c.Queries, *clients, *duration, true)
	pprof.StopCPUProfile()
	fmt.Println("| method | setup | q/s (200) | p50 ms | p99 ms | statuses |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, m := range methods {
		for _, r := range []struct {
			name string
			res  map[string]*vegeta.Metrics
		}{{"open", open}, {"key + ACL + filter", secured}} {
			x := r.res[m]
			fmt.Printf("| %s | %s | %.0f | %.2f | %.2f | %v |\n", m, r.name, x.Throughput,
				ms(x.Latencies.P50), ms(x.Latencies.P99), x.StatusCodes)
		}
		fmt.Printf("| %s | secured / open | %.2f× | | %.2f× | |\n", m, secured[m].Throughput/open[m].Throughput,
			float64(secured[m].Latencies.P99)/float64(open[m].Latencies.P99))
	}
}

// methods are the methods measured (-methods; each takes filters).
var methods []string

// buildSections builds the sections the methods read: the Tri-Graph
// (prose and title NER) and KET-RAG's structures (local extractor).
func buildSections(dir string, methods []string) error {
	ctx := context.Background()
	be, err := engine.Open("cpu")
	if err != nil {
		return err
	}
	if slices.Contains(methods, "nexusrag") || slices.Contains(methods, "linearrag") {
		o := trigraph.DefaultBuildOptions()
		if o.Extractor, err = trigraph.Extractor(dir, "both"); err != nil {
			return err
		}
		o.Backend = be
		if _, err := trigraph.Set(ctx, dir, nil, o); err != nil {
			return err
		}
	}
	if slices.Contains(methods, "ketrag") {
		ix, err := index.Open(dir, store.OpenOptions{})
		if err != nil {
			return err
		}
		names := ix.Names()
		ix.Close()
		o := ketrag.DefaultBuildOptions()
		if o.Extractor, err = kgextract.NewLocal(ner.NewGazetteer(names, ner.DefaultMinTitleLen)); err != nil {
			return err
		}
		o.Backend = be
		if _, err := ketrag.Set(ctx, dir, nil, o); err != nil {
			return err
		}
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// corpusWithACLs is a synthetic multi-hop corpus whose nodes carry a team
// and, for two thirds of them, ACL groups.
func corpusWithACLs(n int) *corpus.Corpus {
	people := max(10, n*2/3) // synth makes about 1.45 nodes per person
	c := synth.Generate(synth.Options{People: people, Cities: max(4, people/6), Countries: max(2, people/30),
		Bands: max(4, people/4), Queries: 200, Seed: 11})
	rng := rand.New(rand.NewPCG(11, 3))
	teams := []string{"red", "green", "blue", "gold"}
	groups := []string{"eng", "legal", "hr", "sales"}
	for i := range c.Nodes {
		m := map[string]any{"team": teams[rng.IntN(len(teams))]}
		if rng.IntN(3) > 0 {
			m["acl"] = []any{groups[rng.IntN(len(groups))]}
		}
		c.Nodes[i].Meta = m
	}
	return c
}

// run serves the index (secured or open) and attacks it with each method.
func run(ixDir string, qs []corpus.Query, clients int, d time.Duration, secured bool) map[string]*vegeta.Metrics {
	cfg := server.DefaultConfig()
	cfg.Indexes = map[string]string{"ix": ixDir}
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cfg.AuditLogger = cfg.Logger
	be, err := engine.Open("cpu")
	if err != nil {
		log.Fatal(err)
	}
	cfg.Backend = be
	hdr := http.Header{"Content-Type": []string{"application/json"}}
	var filter json.RawMessage
	if secured {
		tok, hash, err := auth.NewToken("bench")
		if err != nil {
			log.Fatal(err)
		}
		ring, err := auth.New(auth.File{Version: auth.FileVersion, Keys: []auth.Key{{ID: "bench", Hash: hash,
			Scopes: []auth.Scope{auth.Read}, Indexes: []string{"ix"}, Groups: []string{"eng", "legal"}}}})
		if err != nil {
			log.Fatal(err)
		}
		cfg.Keys, cfg.ACLField = ring, "acl"
		hdr.Set("Authorization", "Bearer "+tok)
		filter = json.RawMessage(`{"field":"team","in":["red","green","blue"]}`)
	} else {
		cfg.InsecureNoAuth = true
	}
	s, err := server.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0") // loopback only
	if err != nil {
		log.Fatal(err)
	}
	hs := s.HTTPServer()
	go hs.Serve(s.Listener(ln))
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		hs.Shutdown(ctx)
		s.Close(ctx)
	}()
	url := "http://" + ln.Addr().String() + "/v1/retrieve"
	out := map[string]*vegeta.Metrics{}
	for _, m := range methods {
		targets := targeter(url, qs, m, hdr, filter)
		attack(targets, clients, time.Second) // methods made, caches warm
		out[m] = attack(targets, clients, d)
	}
	return out
}

// attack sends requests from clients workers, each as soon as the last
// returns, for d.
func attack(targets vegeta.Targeter, clients int, d time.Duration) *vegeta.Metrics {
	att := vegeta.NewAttacker(vegeta.Workers(uint64(clients)), vegeta.MaxWorkers(uint64(clients)), vegeta.KeepAlive(true),
		vegeta.Connections(clients), vegeta.Timeout(30*time.Second))
	res := &vegeta.Metrics{}
	for r := range att.Attack(targets, vegeta.ConstantPacer{}, d, "attack") {
		res.Add(r)
	}
	res.Close()
	return res
}

// targeter cycles through the queries with one method.
func targeter(url string, qs []corpus.Query, method string, hdr http.Header, filter json.RawMessage) vegeta.Targeter {
	bodies := make([][]byte, len(qs))
	for i, q := range qs {
		req := map[string]any{"index": "ix", "query": q.Text, "method": method, "k": 10}
		if filter != nil {
			req["filter"] = filter
		}
		bodies[i], _ = json.Marshal(req)
	}
	var next int
	var mu = make(chan struct{}, 1)
	return func(t *vegeta.Target) error {
		mu <- struct{}{}
		b := bodies[next%len(bodies)]
		next++
		<-mu
		*t = vegeta.Target{Method: http.MethodPost, URL: url, Body: b, Header: hdr}
		return nil
	}
}
