// Command load is gleaner serve's load test: it serves an index in-process
// on 127.0.0.1 (loopback only), attacks it with vegeta from -clients
// concurrent clients for -duration with a mix of bm25, fastinsight and
// streamed fastinsight requests, and prints throughput, latency, status
// counts, RSS and goroutines before and after. It stops by itself.
//
//	go run ./benchmarks/load -index idx/2wiki -queries data/2wiki/queries.jsonl -graph-kind mentions
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"log/slog"
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
	flag.Parse()
	if *ixDir == "" || *queries == "" || *clients < 3 || *duration <= 0 {
		log.Fatal("load: -index and -queries are required; -clients ≥ 3 and -duration > 0")
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
	s, err := server.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0") // loopback only
	if err != nil {
		log.Fatal(err)
	}
	hs := &http.Server{Handler: s.Handler()}
	go hs.Serve(ln)
	base := "http://" + ln.Addr().String() + "/v1/retrieve"
	warm(base, qs)
	rss0, g0 := rssMiB(), runtime.NumGoroutine()

	kindsOf := []struct {
		name   string
		method string
		stream bool
	}{{"bm25", "bm25", false}, {"fastinsight", "fastinsight", false}, {"fastinsight-stream", "fastinsight", true}}
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
			for r := range att.Attack(targeter(base, qs, kd.method, kd.stream), vegeta.ConstantPacer{}, *duration, kd.name) {
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

	fmt.Printf("load: %d clients for %v against 127.0.0.1, max in flight %d, %d queries (GOMAXPROCS %d)\n\n",
		*clients, *duration, *inFlight, len(qs), runtime.GOMAXPROCS(0))
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
func warm(url string, qs []corpus.Query) {
	for _, m := range []string{"bm25", "fastinsight"} {
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
