package server

import (
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// tracerName names the server's spans.
const tracerName = "github.com/gleaner-rag/gleaner/server"

// traced gives every request of route a server span (Config.Tracing),
// continuing the caller's trace when it sends a W3C traceparent; the
// methods' stages become its children (retrieve.StartSpan).
func (s *Server) traced(route string, next http.Handler) http.Handler {
	if s.cfg.Tracing == nil {
		return next
	}
	tr := s.cfg.Tracing.Tracer(tracerName)
	prop := propagation.TraceContext{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := tr.Start(ctx, route, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("http.request.method", r.Method), attribute.String("url.path", r.URL.Path)))
		defer span.End()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r.WithContext(ctx))
		span.SetAttributes(attribute.Int("http.response.status_code", rec.status))
		if rec.status >= 500 {
			span.SetStatus(codes.Error, strconv.Itoa(rec.status))
		}
	})
}

// annotate adds the request's index, method and size to its span.
func annotate(r *http.Request, req *RetrieveRequest, filtered bool) {
	span := trace.SpanFromContext(r.Context())
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(attribute.String("gleaner.index", req.Index), attribute.String("gleaner.method", req.Method),
		attribute.Int("gleaner.k", *req.K), attribute.Bool("gleaner.filtered", filtered),
		attribute.String("gleaner.group_by", req.GroupBy), attribute.Bool("gleaner.stream", req.Stream))
}
