// Command load is gleaner serve's load test: it serves an index in-process
// on 127.0.0.1 (loopback only), attacks it with vegeta from -clients
// concurrent clients for -duration with a mix of requests (-methods:
// by default bm25, fastinsight and streamed fastinsight), each kind
// closed-loop or at -rate requests per second, and prints throughput,
// latency, status counts, the index's open time, RSS and goroutines
// before and after. It stops by itself.
//
//	go run ./benchmarks/load -index idx/2wiki -queries data/2wiki/queries.jsonl -graph-kind mentions
//	go run ./benchmarks/load -index scale/index-1000000 -queries scale/corpus-1000000/queries.jsonl \
//	    -methods bm25,hybrid,ppr,fastinsight -clients 8 -rate 10 -duration 60s
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/engine"
	_ "github.com/gleaner-rag/gleaner/kernels/cpu"
	_ "github.com/gleaner-rag/gleaner/methods"
	"github.com/gleaner-rag/gleaner/server"
)

func main() {
	ixDir := flag.String("index", "", "index folder")
	queries := flag.String("queries", "", "queries.jsonl whose texts are sent")
	kinds := flag.String("graph-kind", "", "edge kinds for fastinsight")
	clients := flag.Int("clients", 500, "concurrent clients (split over the three request kinds)")
	duration := flag.Duration("duration", 60*time.Second, "attack duration")
	inFlight := flag.Int("max-in-flight", 256, "the server's max in flight (more get a deliberate 503)")
	methods := flag.String("methods", "bm25,fastinsight,fastinsight+stream", "request kinds, comma-separated: a method, +stream to stream it")
	rate := flag.Float64("rate", 0, "requests per second per kind (0: each client sends as fast as it is answered)")
	flag.Parse()
	kindsOf, err := parseKinds(*methods)
	if err != nil {
		log.Fatal(err)
	}
	if *ixDir == "" || *queries == "" || *clients < len(kindsOf) || *duration <= 0 || !(*rate >= 0) || *rate > 1e6 {
		log.Fatal("load: -index and -queries are required; -clients ≥ the number of kinds, -duration > 0, 0 ≤ -rate ≤ 1e6")
	}
	qs, err := corpus.ReadQueries(*queries, nil, corpus.ReadOptions{})
	if err != nil {
		log.Fatal(err)
	}
	cfg := server.DefaultConfig()
	cfg.Indexes = map[string]string{"ix": *ixDir}
	cfg.MaxInFlight = *inFlight
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	be, err := engine.Open("cpu")
	if err != nil {
		log.Fatal(err)
	}
	cfg.Backend, cfg.InsecureNoAuth = be, true
	if *kinds != "" {
		cfg.Settings.Set("graph-kind", *kinds)
	}
	start := time.Now()
	s, err := server.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	opened := time.Since(start)
	ln, err := net.Listen("tcp", "127.0.0.1:0") // loopback only
	if err != nil {
		log.Fatal(err)
	}
	hs := &http.Server{Handler: s.Handler()}
	go hs.Serve(ln)
	base := "http://" + ln.Addr().String() + "/v1/retrieve"
	warm(base, qs, kindsOf)
	rss0, g0 := rssMiB(), runtime.NumGoroutine()

	results := make([]*vegeta.Metrics, len(kindsOf))
	peak := &peakRSS{}
	stop := make(chan struct{})
	go peak.watch(stop)
	var wg sync.WaitGroup
	for i, kd := range kindsOf {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := *clients / len(kindsOf)
			att := vegeta.NewAttacker(vegeta.Workers(uint64(n)), vegeta.MaxWorkers(uint64(n)), vegeta.KeepAlive(true),
				vegeta.Connections(n), vegeta.Timeout(30*time.Second))
			m := &vegeta.Metrics{}
			pacer := vegeta.ConstantPacer{} // zero: as fast as the workers are answered
			if *rate > 0 {
				pacer = vegeta.ConstantPacer{Freq: int(math.Ceil(*rate)), Per: time.Second}
			}
			for r := range att.Attack(targeter(base, qs, kd.method, kd.stream), pacer, *duration, kd.name) {
				m.Add(r)
			}
			m.Close()
			results[i] = m
		}()
	}
	wg.Wait()
	close(stop)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	hs.Shutdown(ctx)
	s.Close(ctx)
	cancel()
	time.Sleep(500 * time.Millisecond) // let idle connections' goroutines end
	runtime.GC()

	pace := "closed loop"
	if *rate > 0 {
		pace = fmt.Sprintf("%g requests/s per kind", math.Ceil(*rate))
	}
	fmt.Printf("load: %d clients for %v against 127.0.0.1 (%s), max in flight %d, %d queries (GOMAXPROCS %d); server and index opened in %v\n\n",
		*clients, *duration, pace, *inFlight, len(qs), runtime.GOMAXPROCS(0), opened.Round(time.Millisecond))
	fmt.Println("| requests | sent | q/s (200) | p50 ms | p99 ms | status counts |")
	fmt.Println("|---|---|---|---|---|---|")
	for i, kd := range kindsOf {
		m := results[i]
		fmt.Printf("| %s | %d | %.0f | %.2f | %.2f | %s |\n", kd.name, m.Requests, m.Throughput,
			float64(m.Latencies.P50.Microseconds())/1000, float64(m.Latencies.P99.Microseconds())/1000, codes(m.StatusCodes))
	}
	fmt.Printf("\nRSS: %.0f MiB before, %.0f MiB peak, %.0f MiB after; goroutines: %d before, %d after\n",
		rss0, peak.max, rssMiB(), g0, runtime.NumGoroutine())
	for i, kd := range kindsOf {
		for _, e := range results[i].Errors {
			fmt.Printf("%s error: %s\n", kd.name, e)
		}
	}
}

// kind is one request kind: a method, streamed or not.
type kind struct {
	name   string
	method string
	stream bool
}

// parseKinds reads -methods: names, each optionally suffixed +stream.
func parseKinds(s string) ([]kind, error) {
	var out []kind
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		m, stream := strings.CutSuffix(f, "+stream")
		if m == "" {
			return nil, fmt.Errorf("load: -methods: %q names no method", f)
		}
		out = append(out, kind{name: strings.Replace(f, "+", "-", 1), method: m, stream: stream})
	}
	return out, nil
}

// targeter cycles through the queries for one request kind.
func targeter(url string, qs []corpus.Query, method string, stream bool) vegeta.Targeter {
	var mu sync.Mutex
	i := 0
	hdr := http.Header{"Content-Type": []string{"application/json"}}
	return func(t *vegeta.Target) error {
		mu.Lock()
		q := qs[i%len(qs)]
		i++
		mu.Unlock()
		body, _ := json.Marshal(map[string]any{"index": "ix", "query": q.Text, "method": method, "k": 10, "stream": stream})
		*t = vegeta.Target{Method: http.MethodPost, URL: url, Body: body, Header: hdr}
		return nil
	}
}

// warm sends one request of each kind so methods are made before timing.
func warm(url string, qs []corpus.Query, kinds []kind) {
	for _, k := range kinds {
		m := k.method
		b, _ := json.Marshal(map[string]any{"index": "ix", "query": qs[0].Text, "method": m})
		resp, err := http.Post(url, "application/json", bytes.NewReader(b))
		if err != nil {
			log.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			log.Fatalf("warm-up %s: status %d", m, resp.StatusCode)
		}
	}
}

func codes(c map[string]int) string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s: %d", k, c[k]))
	}
	return strings.Join(parts, ", ")
}

// rssMiB reads the resident set size from /proc.
func rssMiB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			var kb float64
			fmt.Sscan(f[1], &kb)
			return kb / 1024
		}
	}
	return 0
}

type peakRSS struct{ max float64 }

func (p *peakRSS) watch(stop chan struct{}) {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			p.max = max(p.max, rssMiB())
		}
	}
}
