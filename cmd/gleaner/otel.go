package main

import (
	"context"
	"fmt"
	"net/url"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// newTracing is serve's OpenTelemetry tracing: spans batched to an OTLP
// HTTP endpoint (e.g. http://127.0.0.1:4318, posting to /v1/traces unless
// the URL gives a path), a ratio of new traces
// sampled (a caller's sampled traceparent is always followed). The
// returned shutdown flushes what is queued.
func newTracing(endpoint string, ratio float64) (*sdktrace.TracerProvider, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--otlp-endpoint %q: want http(s)://host:port[/v1/traces]", endpoint)
	}
	if u.User != nil {
		return nil, fmt.Errorf("--otlp-endpoint: credentials in the URL would show in --print-config and logs; give them in OTEL_EXPORTER_OTLP_HEADERS")
	}
	if !(ratio > 0 && ratio <= 1) {
		return nil, fmt.Errorf("--trace-ratio %v: want a fraction in (0, 1]", ratio)
	}
	if u.Path == "" || u.Path == "/" { // the collector's standard path, as the SDK's own default
		u.Path = "/v1/traces"
	}
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(u.String()))
	if err != nil {
		return nil, fmt.Errorf("--otlp-endpoint: %w", err)
	}
	res := resource.NewSchemaless(attribute.String("service.name", "gleaner"))
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio)))), nil
}
