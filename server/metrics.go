package server

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are what /metrics serves.
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	inFlight prometheus.Gauge
	rejected prometheus.Counter
	rounds   prometheus.Histogram
}

func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gleaner_requests_total",
		Help: "Retrieve requests by method and HTTP status."}, []string{"method", "code"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gleaner_request_seconds",
		Help: "Retrieve latency by method.", Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18)}, []string{"method"})
	m.inFlight = prometheus.NewGauge(prometheus.GaugeOpts{Name: "gleaner_in_flight", Help: "Retrieve requests being served."})
	m.rejected = prometheus.NewCounter(prometheus.CounterOpts{Name: "gleaner_rejected_total",
		Help: "Requests turned away with 503 because the server was at max in flight."})
	m.rounds = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "gleaner_stream_rounds",
		Help: "Rounds emitted per streamed request.", Buckets: prometheus.LinearBuckets(1, 1, 12)})
	m.reg.MustRegister(m.requests, m.latency, m.inFlight, m.rejected, m.rounds,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}
