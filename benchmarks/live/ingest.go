package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/server"
	"github.com/gleaner-rag/gleaner/server/api"
	"github.com/gleaner-rag/gleaner/server/client"
)

// ingestRun is what an ingest run does.
type ingestRun struct {
	d                                time.Duration // each phase
	rounds                           int           // ingest phases, each followed by an idle one
	rate, writers, batch, ingestRate int
	seed                             uint64
	profile, memProfile, trace       string
	traceAt                          time.Duration // when the trace starts, into the ingest
	interval                         time.Duration // the server's --commit-interval
	share                            float64       // its --apply-share
	writeCores                       int           // its --write-cores
	writeIdle                        bool          // its --write-idle
}

func ingest(c *corpus.Corpus, dir string, o ingestRun) error {
	d, rate, writers, batch, ingestRate := o.d, o.rate, o.writers, o.batch, o.ingestRate
	cfg := server.DefaultConfig()
	cfg.Indexes = map[string]string{"ix": dir}
	cfg.Writes, cfg.InsecureNoAuth, cfg.Logger = true, true, quiet
	cfg.CommitInterval, cfg.ApplyShare, cfg.WriteCores, cfg.WriteIdle = o.interval, o.share, o.writeCores, o.writeIdle
	if os.Getenv("GOMAXPROCS") == "" { // as gleaner serve does
		runtime.GOMAXPROCS(server.Procs(runtime.GOMAXPROCS(0), cfg))
	}
	be, err := engine.Open("cpu")
	if err != nil {
		return err
	}
	cfg.Backend = be
	s, err := server.New(cfg)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0") // loopback only
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: timed(s.Handler())}
	go hs.Serve(ln)
	cl, err := client.New("http://"+ln.Addr().String(), &http.Client{Transport: numbered{&http.Transport{MaxIdleConnsPerHost: 256}}})
	if err != nil {
		return err
	}
	queries := c.Queries
	floor, err := floorClient()
	if err != nil {
		return err
	}
	// The index was built in this process: collect its garbage and hand
	// the memory back now, so the runtime does not do it during the idle
	// phases (a server opens an index it did not build).
	runtime.GC()
	debug.FreeOSMemory()
	fmt.Printf("\ncollector's work at the start: %s\n", heapScan())
	load(cl, queries, rate, 2*time.Second) // warm-up
	fmt.Printf("\nloopback floor (a handler that answers at once, same client and load): %s\n", load(floor, queries, rate, d))
	idle := load(cl, queries, rate, d)
	fmt.Printf("idle: %s\n", idle)
	stopProfile, err := startProfile(o.profile)
	if err != nil {
		return err
	}
	stopTrace, err := startTrace(o.trace, o.traceAt, 10*time.Second)
	if err != nil {
		return err
	}
	defer stopTrace()
	w := &writeLoad{cl: cl, g: newGenerator(c, o.seed), run: strconv.FormatInt(time.Now().UnixNano(), 36) + "-", // ids new to an index an earlier run grew
		writers: writers, batch: batch, ingestRate: ingestRate}
	var busies, idles []latencies
	for r := range o.rounds {
		w.start(r)
		busy := load(cl, queries, rate, d)
		if err := w.stop(); err != nil {
			return err
		}
		if r == 0 {
			if err := stopProfile(); err != nil {
				return err
			}
			if o.memProfile != "" { // what the ingest allocated: go tool pprof -sample_index=alloc_space
				if err := writeHeapProfile(o.memProfile); err != nil {
					return err
				}
			}
		}
		after := load(cl, queries, rate, d) // idle again, at the index's size now
		fmt.Printf("ingesting%s: %s\n", roundName(r, o.rounds), busy)
		fmt.Printf("idle after%s: %s\n", roundName(r, o.rounds), after)
		busies, idles = append(busies, busy), append(idles, after)
	}
	st, _ := s.LiveStats("ix")
	pace := "as fast as acknowledged"
	if ingestRate > 0 {
		pace = fmt.Sprintf("paced at %d passages/s", ingestRate)
	}
	fmt.Printf("ingest (%s, --write-cores %d, --write-idle %v, GOMAXPROCS %d): %d passages acknowledged (durable) in %v by %d writers of %d-passage batches: %.0f passages/s; %d passages now, log %d records, %d checkpoints (%.1f s)\n",
		pace, o.writeCores, o.writeIdle, runtime.GOMAXPROCS(0), w.acked.Load(), w.took.Round(time.Millisecond), writers, batch, float64(w.acked.Load())/w.took.Seconds(), st.Nodes, st.Seq, st.Checkpoints, st.CheckpointSecs)
	if busy, after := busies[0], idles[0]; o.rounds == 1 {
		fmt.Printf("query p99 ingesting / idle before: %.2f; / idle after (the final size): %.2f; the server's took_ms p99 ingesting / idle after: %.2f\n",
			busy.p99.Seconds()/idle.p99.Seconds(), busy.p99.Seconds()/after.p99.Seconds(), busy.server99.Seconds()/after.server99.Seconds())
	} else {
		// Each ingest phase lies between two idle ones, so the idle
		// queries taken together ran on indexes of the ingest's sizes.
		b, i := pooled(busies), pooled(append([]latencies{idle}, idles...))
		fmt.Printf("pooled over %d rounds: ingesting p99 %.2f ms (server's %.2f) over %d queries; idle p99 %.2f ms (server's %.2f) over %d queries, the phases before and after each ingest phase; ratio %.2f (server's %.2f)\n",
			o.rounds, ms(b.p99), ms(b.server99), b.n, ms(i.p99), ms(i.server99), i.n, b.p99.Seconds()/i.p99.Seconds(), b.server99.Seconds()/i.server99.Seconds())
	}
	fmt.Printf("memory: RSS %s now, %s at the peak; log %d segments, %d bytes\n", procStatus("VmRSS"), procStatus("VmHWM"), st.LogSegments, st.LogBytes)
	fmt.Printf("collector's work at the end: %s\n", heapScan())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	hs.Shutdown(ctx)
	return s.Close(ctx)
}

// roundName names round r of n in the output ("" for a single round).
func roundName(r, n int) string {
	if n == 1 {
		return ""
	}
	return fmt.Sprintf(" (round %d of %d)", r+1, n)
}

// writeLoad sends batches of new passages from concurrent writers, paced
// or as fast as acknowledged, between start and stop.
type writeLoad struct {
	cl                         *client.Client
	g                          *generator
	gmu                        sync.Mutex
	run                        string
	writers, batch, ingestRate int
	acked                      atomic.Int64
	took                       time.Duration // the ingest phases' time so far
	halt                       chan struct{}
	wg                         sync.WaitGroup
	began                      time.Time
	emu                        sync.Mutex
	err                        error
}

// start starts the writers of round r.
func (w *writeLoad) start(r int) {
	w.halt, w.began = make(chan struct{}), time.Now()
	for k := range w.writers {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			var every time.Duration // one batch per writer this often (0: no pause)
			if w.ingestRate > 0 {
				every = time.Duration(float64(time.Second) * float64(w.batch*w.writers) / float64(w.ingestRate))
			}
			// writers start spread over one period, so that a paced load
			// is steady rather than all writers' batches at once
			next := time.Now().Add(every * time.Duration(k) / time.Duration(w.writers))
			for n := 0; ; n++ {
				if every > 0 {
					next = next.Add(every)
					time.Sleep(time.Until(next))
				}
				select {
				case <-w.halt:
					return
				default:
				}
				if err := w.send(fmt.Sprintf("%sr%dw%d-%d", w.run, r, k, n)); err != nil {
					w.emu.Lock()
					w.err = errors.Join(w.err, err)
					w.emu.Unlock()
					return
				}
			}
		}()
	}
}

// send commits one batch of new passages, ids prefixed by id.
func (w *writeLoad) send(id string) error {
	changes := make([]api.DocumentChange, w.batch)
	w.gmu.Lock()
	for i := range changes {
		changes[i] = api.DocumentChange{Op: "add", ID: fmt.Sprintf("%s-%d", id, i),
			Document: api.Document{Title: w.g.name(), Text: w.g.plainText()}}
	}
	w.gmu.Unlock()
	if _, err := w.cl.CommitDocuments(context.Background(), "ix", changes); err != nil {
		return err
	}
	w.acked.Add(int64(w.batch))
	return nil
}

// stop stops the writers and waits for their batches in flight.
func (w *writeLoad) stop() error {
	close(w.halt)
	w.wg.Wait()
	w.took += time.Since(w.began)
	return w.err
}

// pooled is the latencies of several phases' queries taken together.
func pooled(ls []latencies) latencies {
	var all, took []time.Duration
	for _, l := range ls {
		all, took = append(all, l.all...), append(took, l.took...)
	}
	slices.Sort(all)
	slices.Sort(took)
	return latencies{n: len(all), p50: pct(all, 0.5), p99: pct(all, 0.99), server99: pct(took, 0.99), all: all, took: took}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// latencies summarises a load phase.
type latencies struct {
	n, failed int
	p50, p99  time.Duration
	// server99 is the p99 of the server's own took_ms (from the handler's
	// start to the answer), which leaves out the wait for a connection,
	// the request's decoding and the client's side.
	server99 time.Duration
	// handler99 is the p99 of the whole handler's time for retrieve
	// requests (middleware and the answer's encoding included).
	handler99 time.Duration
	// sched99 is the p99 of the time the process's goroutines waited to
	// run once ready (runtime/metrics), over the phase: a wait for a core.
	sched99 time.Duration
	slowest string  // where the slowest queries' time went
	cores   float64 // the process's CPU time over the phase's, in cores
	// gcs and allocGB are the collections and the bytes the process
	// allocated over the phase (what the collector works on).
	gcs     uint32
	allocGB float64
	markCPU time.Duration // the collector's mark work over the phase, in CPU time
	faults  int64         // minor page faults over the phase
	// all and took are every query's latency and server's took_ms,
	// ascending (for pooled).
	all, took []time.Duration
}

func (l latencies) String() string {
	return fmt.Sprintf("%d queries, %d failed, p50 %.2f ms, p99 %.2f ms (server's took_ms p99 %.2f ms, whole handler p99 %.2f ms; goroutines' wait for a core p99 %.2f ms; CPU %.2f cores; %.2f GB allocated, %d collections, %.0f ms of mark CPU, %d page faults)",
		l.n, l.failed, ms(l.p50), ms(l.p99), ms(l.server99), ms(l.handler99), ms(l.sched99), l.cores, l.allocGB, l.gcs, ms(l.markCPU), l.faults) + "\n  " + l.slowest
}

// load sends BM25 queries at rate per second for d (open loop: a slow
// answer does not delay the next send) and returns their latencies.
func load(cl *client.Client, qs []corpus.Query, rate int, d time.Duration) latencies {
	var mu sync.Mutex
	var lat, took []time.Duration
	var st []stages
	failed := 0
	sched := schedWaits()
	cpu0, wall0, faults0, mark0 := cpuTime(), time.Now(), pageFaults(), markCPU()
	var mem0, mem1 runtime.MemStats
	runtime.ReadMemStats(&mem0)
	handled.reset()
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	end := time.After(d)
	for i := 0; ; i++ {
		select {
		case <-end:
			wg.Wait()
			runtime.ReadMemStats(&mem1)
			slices.Sort(lat)
			slices.Sort(took)
			return latencies{n: len(lat), failed: failed, p50: pct(lat, 0.5), p99: pct(lat, 0.99), server99: pct(took, 0.99), handler99: handled.p99(), sched99: sched.p99since(), slowest: slowest(st),
				cores: (cpuTime() - cpu0).Seconds() / time.Since(wall0).Seconds(), gcs: mem1.NumGC - mem0.NumGC, allocGB: float64(mem1.TotalAlloc-mem0.TotalAlloc) / 1e9,
				faults: pageFaults() - faults0, markCPU: markCPU() - mark0, all: lat, took: took}
		case <-tick.C:
		}
		q := qs[i%len(qs)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, s := traced.begin(context.Background())
			res, err := cl.Retrieve(ctx, api.RetrieveRequest{Index: "ix", Query: q.Text, Method: "bm25", K: api.K(10)})
			stamps := traced.end(ctx, s)
			el := stamps.done.Sub(stamps.start)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed++
				return
			}
			lat = append(lat, el)
			st = append(st, stamps)
			took = append(took, time.Duration(res.TookMS*float64(time.Millisecond)))
		}()
	}
}

// markCPU is the CPU time the collector spent marking so far.
func markCPU() time.Duration {
	s := []metrics.Sample{{Name: "/cpu/classes/gc/mark/assist:cpu-seconds"}, {Name: "/cpu/classes/gc/mark/dedicated:cpu-seconds"}, {Name: "/cpu/classes/gc/mark/idle:cpu-seconds"}}
	metrics.Read(s)
	var t float64
	for _, x := range s {
		if x.Value.Kind() == metrics.KindFloat64 {
			t += x.Value.Float64()
		}
	}
	return time.Duration(t * float64(time.Second))
}

// heapScan collects and says what the collector marks on every cycle:
// the heap it scans for pointers and the objects it holds.
func heapScan() string {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/scan/heap:bytes"}, {Name: "/gc/heap/objects:objects"}, {Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return fmt.Sprintf("%.1f MB of %.0f MB live heap scanned for pointers, %d objects", float64(s[0].Value.Uint64())/1e6, float64(s[2].Value.Uint64())/1e6, s[1].Value.Uint64())
}

func pct(s []time.Duration, p float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

// usage is the process's resource usage so far (zero where unknown).
func usage() syscall.Rusage {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return syscall.Rusage{}
	}
	return ru
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	ru := usage()
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// pageFaults is the process's minor page faults so far (memory the
// kernel maps on first touch, slow on a virtual machine).
func pageFaults() int64 { return int64(usage().Minflt) }

// procStatus is a line's value from /proc/self/status ("?" elsewhere).
func procStatus(key string) string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "?"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

// startProfile starts a CPU profile into path (nothing when path is
// empty); the function it returns stops it.
func startProfile(path string) (func() error, error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() error { pprof.StopCPUProfile(); return f.Close() }, nil
}

// startTrace writes an execution trace of span, from at on, into path
// (nothing when path is empty); the function it returns waits for it.
func startTrace(path string, at, span time.Duration) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer f.Close()
		time.Sleep(at)
		if err := trace.Start(f); err != nil {
			fmt.Fprintln(os.Stderr, "trace:", err)
			return
		}
		time.Sleep(span)
		trace.Stop()
	}()
	return func() { <-done }, nil
}

// schedHist is a snapshot of the runtime's histogram of goroutine
// scheduling latencies.
type schedHist struct{ counts []uint64 }

const schedMetric = "/sched/latencies:seconds"

func readSched() *metrics.Float64Histogram {
	s := []metrics.Sample{{Name: schedMetric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64Histogram {
		return nil
	}
	return s[0].Value.Float64Histogram()
}

func schedWaits() schedHist {
	h := readSched()
	if h == nil {
		return schedHist{}
	}
	return schedHist{counts: slices.Clone(h.Counts)}
}

// p99since is the p99 of the waits since the snapshot (the upper edge of
// the bucket that holds it).
func (s schedHist) p99since() time.Duration {
	h := readSched()
	if h == nil || len(s.counts) != len(h.Counts) {
		return 0
	}
	var total uint64
	diff := make([]uint64, len(h.Counts))
	for i := range diff {
		diff[i] = h.Counts[i] - s.counts[i]
		total += diff[i]
	}
	var seen uint64
	for i, c := range diff {
		seen += c
		if total > 0 && float64(seen) >= 0.99*float64(total) {
			return time.Duration(h.Buckets[i+1] * float64(time.Second))
		}
	}
	return 0
}

// floorClient is a client of a loopback server whose handler answers every
// retrieve request at once with no hits: the latency of the path itself
// (this machine's loopback, HTTP, the client), to read the others against.
func floorClient() (*client.Client, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	answer := []byte(`{"index":"ix","method":"bm25","done":true,"took_ms":0,"hits":[]}`)
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		traced.stamp(r, true)
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(answer)
		traced.stamp(r, false)
	}))
	return client.New("http://"+ln.Addr().String(), &http.Client{Transport: numbered{&http.Transport{MaxIdleConnsPerHost: 256}}})
}

// handled collects the server handler's times for retrieve requests.
var handled handlerTimes

type handlerTimes struct {
	mu sync.Mutex
	d  []time.Duration
}

func (h *handlerTimes) reset() {
	h.mu.Lock()
	h.d = h.d[:0]
	h.mu.Unlock()
}

func (h *handlerTimes) p99() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	slices.Sort(h.d)
	return pct(h.d, 0.99)
}

// timed records how long next takes over each retrieve request.
func timed(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		traced.stamp(r, true)
		next.ServeHTTP(w, r)
		traced.stamp(r, false)
		if r.URL.Path == "/v1/retrieve" {
			handled.mu.Lock()
			handled.d = append(handled.d, time.Since(start))
			handled.mu.Unlock()
		}
	})
}
