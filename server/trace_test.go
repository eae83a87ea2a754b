package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/gleaner-rag/gleaner/server"
)

// With Tracing set, a request gets a server span that continues the
// caller's traceparent, with the method and its stages (first stage,
// PageRank) as children; the in-memory exporter shows the tree.
func TestTracesRequestsAndStages(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	_, hs, _ := newServer(t, func(c *server.Config) { c.Tracing = tp })
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	req, _ := http.NewRequest("POST", hs.URL+"/v1/retrieve", strings.NewReader(`{"index":"synth","query":"band city","method":"ppr"}`))
	req.Header.Set("traceparent", parent)
	resp, err := hs.Client().Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v %v", resp, err)
	}
	resp.Body.Close()
	spans := exp.GetSpans()
	byName := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		byName[s.Name] = s
	}
	root, ok := byName["POST /v1/retrieve"]
	if !ok {
		t.Fatalf("no request span among %d spans", len(spans))
	}
	if got := root.SpanContext.TraceID().String(); got != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("trace id %s: the caller's traceparent was not continued", got)
	}
	if root.Parent.SpanID().String() != "00f067aa0ba902b7" {
		t.Errorf("parent span %s", root.Parent.SpanID())
	}
	attrs := map[string]string{}
	for _, a := range root.Attributes {
		attrs[string(a.Key)] = a.Value.Emit()
	}
	for k, v := range map[string]string{"gleaner.index": "synth", "gleaner.method": "ppr", "http.response.status_code": "200", "gleaner.k": "10"} {
		if attrs[k] != v {
			t.Errorf("request span %s = %q, want %q (%v)", k, attrs[k], v, attrs)
		}
	}
	// The tree: request → method ppr → first stage and pagerank.
	parentOf := func(name string) string {
		s := byName[name]
		for _, p := range spans {
			if p.SpanContext.SpanID() == s.Parent.SpanID() {
				return p.Name
			}
		}
		return "(none)"
	}
	for child, want := range map[string]string{"method ppr": "POST /v1/retrieve", "first stage": "method ppr", "pagerank": "method ppr"} {
		if got := parentOf(child); got != want {
			t.Errorf("span %q: parent %q, want %q", child, got, want)
		}
	}
}
