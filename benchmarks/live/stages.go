package main

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// A query's way through the client, the loopback and the server is cut
// into stages, so that a slow tail can be put down to one of them: the
// wait for a connection, the client's write, the time until the server's
// handler starts (the server reading the request, its goroutines waking),
// the handler, the time until the client reads the answer's first byte,
// and the answer's reading and decoding.
type stages struct {
	start, gotConn, wrote, handlerIn, handlerOut, firstByte, done time.Time
}

// stageNames name the spans between consecutive stamps.
var stageNames = []string{"connection", "client write", "to handler", "handler", "to client", "client read"}

func (s stages) spans() []time.Duration {
	t := []time.Time{s.start, s.gotConn, s.wrote, s.handlerIn, s.handlerOut, s.firstByte, s.done}
	out := make([]time.Duration, len(t)-1)
	for i := range out {
		if !t[i].IsZero() && !t[i+1].IsZero() {
			out[i] = t[i+1].Sub(t[i])
		}
	}
	return out
}

// traceHeader carries a query's number from the client to the handler.
const traceHeader = "X-Bench-Query"

type queryID struct{}

// tracer is the stamps of the queries in flight, by number.
type tracer struct {
	next atomic.Int64
	mu   sync.Mutex
	by   map[int64]*stages
}

var traced = &tracer{by: map[int64]*stages{}}

// begin numbers a query and returns a context that stamps its client side.
func (t *tracer) begin(ctx context.Context) (context.Context, *stages) {
	id := t.next.Add(1)
	s := &stages{start: time.Now()}
	t.mu.Lock()
	t.by[id] = s
	t.mu.Unlock()
	ctx = context.WithValue(ctx, queryID{}, id)
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(httptrace.GotConnInfo) { s.gotConn = time.Now() },
		WroteRequest: func(httptrace.WroteRequestInfo) {
			s.wrote = time.Now()
			trace.Log(ctx, "wrote", strconv.FormatInt(id, 10)) // for -trace
		},
		GotFirstResponseByte: func() { s.firstByte = time.Now() },
	}), s
}

// end stamps a query done, forgets its number and returns its stamps.
func (t *tracer) end(ctx context.Context, s *stages) stages {
	s.done = time.Now()
	id, _ := ctx.Value(queryID{}).(int64)
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.by, id)
	return *s
}

// stamp records the handler's start or end for the query the request
// carries the number of.
func (t *tracer) stamp(r *http.Request, in bool) {
	id, err := strconv.ParseInt(r.Header.Get(traceHeader), 10, 64)
	if err != nil {
		return
	}
	now := time.Now()
	if in {
		trace.Log(r.Context(), "handler", strconv.FormatInt(id, 10))
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.by[id]; s != nil {
		if in {
			s.handlerIn = now
		} else {
			s.handlerOut = now
		}
	}
}

// numbered is a transport that sends a query's number along.
type numbered struct{ next http.RoundTripper }

func (n numbered) RoundTrip(r *http.Request) (*http.Response, error) {
	if id, ok := r.Context().Value(queryID{}).(int64); ok {
		r = r.Clone(r.Context())
		r.Header.Set(traceHeader, strconv.FormatInt(id, 10))
	}
	return n.next.RoundTrip(r)
}

// slowest says where the slowest 1 % of the queries spent their time: the
// mean of each stage over them.
func slowest(all []stages) string {
	if len(all) == 0 {
		return "no queries"
	}
	slices.SortFunc(all, func(a, b stages) int { return cmp.Compare(b.done.Sub(b.start), a.done.Sub(a.start)) })
	top := all[:max(1, len(all)/100)]
	sum := make([]time.Duration, len(stageNames))
	for _, s := range top {
		for i, d := range s.spans() {
			sum[i] += d
		}
	}
	parts := make([]string, len(sum))
	for i, d := range sum {
		parts[i] = fmt.Sprintf("%s %.2f", stageNames[i], float64(d.Microseconds())/1000/float64(len(top)))
	}
	return fmt.Sprintf("the slowest %d queries, mean ms per stage: %s", len(top), strings.Join(parts, ", "))
}
