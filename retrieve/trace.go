package retrieve

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// tracerName names gleaner's method spans.
const tracerName = "github.com/gleaner-rag/gleaner/retrieve"

// StartSpan starts a span for one stage of a method (the first stage, a
// walk, a reranking batch) under the span in ctx, with its tracer
// provider: a caller that traces (gleaner serve with OpenTelemetry on)
// gets the stages as children of its request; one that does not pays a
// no-op. end records err, when not nil, as the span's status.
func StartSpan(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, func(err error)) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, func(error) {}
	}
	ctx, span := parent.TracerProvider().Tracer(tracerName).Start(ctx, name, trace.WithAttributes(attrs...))
	return ctx, func(err error) {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
}
