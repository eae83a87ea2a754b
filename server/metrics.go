package server

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/gleaner-rag/gleaner/engine"
)

// metrics are what /metrics serves.
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	inFlight prometheus.Gauge
	rejected prometheus.Counter
	rounds   prometheus.Histogram
	// bodyTimeouts counts requests whose body did not arrive in time.
	bodyTimeouts prometheus.Counter
	// shed counts idle connections closed to make room under the cap.
	shed          prometheus.Counter
	conns         prometheus.Gauge
	rejectedConns prometheus.Counter
	// authRefused counts requests refused for their key, by reason.
	authRefused *prometheus.CounterVec
	// damaged is 1 for an index whose files changed under it.
	damaged *prometheus.GaugeVec
	// panics counts requests that panicked (answered 500).
	panics prometheus.Counter
	// keysStale is 1 while the last keys reload failed.
	keysStale prometheus.Gauge
	// writes counts write requests by operation and status;
	// writeLatency times their commits (durable and visible).
	writes       *prometheus.CounterVec
	writeLatency *prometheus.HistogramVec
}

func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gleaner_requests_total",
		Help: "Retrieve requests by index, method and HTTP status (\"?\" before they are known)."}, []string{"index", "method", "code"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gleaner_request_seconds",
		Help: "Retrieve latency by index and method.", Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18)}, []string{"index", "method"})
	m.inFlight = prometheus.NewGauge(prometheus.GaugeOpts{Name: "gleaner_in_flight", Help: "Retrieve requests being served."})
	m.rejected = prometheus.NewCounter(prometheus.CounterOpts{Name: "gleaner_rejected_total",
		Help: "Requests turned away with 503 because the server was at max in flight."})
	m.rounds = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "gleaner_stream_rounds",
		Help: "Rounds emitted per streamed request.", Buckets: prometheus.LinearBuckets(1, 1, 12)})
	m.bodyTimeouts = prometheus.NewCounter(prometheus.CounterOpts{Name: "gleaner_body_timeouts_total",
		Help: "Requests answered 408 because their body did not arrive within the body timeout."})
	m.shed = prometheus.NewCounter(prometheus.CounterOpts{Name: "gleaner_connections_shed_total",
		Help: "Idle or silent connections closed to make room at the connection cap."})
	m.conns = prometheus.NewGauge(prometheus.GaugeOpts{Name: "gleaner_connections", Help: "Open client connections."})
	m.rejectedConns = prometheus.NewCounter(prometheus.CounterOpts{Name: "gleaner_connections_rejected_total",
		Help: "Connections closed at once because every connection at the cap was serving a request."})
	m.authRefused = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gleaner_auth_refused_total",
		Help: "Requests refused for their key: missing or invalid (401), scope or index (403), rate (429)."}, []string{"reason"})
	m.damaged = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "gleaner_index_damaged",
		Help: "1 for an index whose files changed on disk since it was opened (found by the scrub): not served until a reload."}, []string{"index"})
	m.panics = prometheus.NewCounter(prometheus.CounterOpts{Name: "gleaner_panics_total",
		Help: "Requests that panicked, answered 500 and logged as errors."})
	m.keysStale = prometheus.NewGauge(prometheus.GaugeOpts{Name: "gleaner_keys_reload_failed",
		Help: "1 while the last keys reload failed: the keys from before it, revoked ones included, are still accepted."})
	m.writes = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gleaner_writes_total",
		Help: "Write requests by operation (put, delete, batch) and HTTP status."}, []string{"op", "code"})
	m.writeLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gleaner_write_seconds",
		Help:    "Time from a write's turn to its acknowledgement: checked, embedded, logged and synced, applied and published.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}, []string{"op"})
	m.reg.MustRegister(m.writes, m.writeLatency, m.keysStale, m.panics, m.damaged, m.authRefused, m.requests, m.latency, m.inFlight, m.rejected, m.rounds, m.bodyTimeouts, m.shed, m.conns, m.rejectedConns,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// schedulerCollector reports, at each scrape, the engine schedulers of the
// reranking methods the server holds: batches, items, mean batch size,
// queue wait, dropped and rejected items (summed over methods; they restart
// from zero after a reload, which Prometheus's rate() handles).
type schedulerCollector struct {
	s                                                  *Server
	batches, items, meanBatch, wait, dropped, rejected *prometheus.Desc
	optionSets                                         *prometheus.Desc
}

func newSchedulerCollector(s *Server) *schedulerCollector {
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }
	return &schedulerCollector{s: s,
		batches:    d("gleaner_scheduler_batches_total", "Batches the engine schedulers ran."),
		items:      d("gleaner_scheduler_items_total", "(query, node) pairs the engine schedulers encoded."),
		meanBatch:  d("gleaner_scheduler_mean_batch", "Mean batch size."),
		wait:       d("gleaner_scheduler_queue_wait_seconds_total", "Summed queue wait of executed items."),
		dropped:    d("gleaner_scheduler_dropped_total", "Items dropped because their request was cancelled."),
		rejected:   d("gleaner_scheduler_rejected_total", "Items refused by a full scheduler queue."),
		optionSets: d("gleaner_option_sets", "Methods held, one per index, method and option set (at most --max-option-sets per index and method)."),
	}
}

func (c *schedulerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.batches, c.items, c.meanBatch, c.wait, c.dropped, c.rejected, c.optionSets} {
		ch <- d
	}
}

func (c *schedulerCollector) Collect(ch chan<- prometheus.Metric) {
	var sum engine.SchedulerMetrics
	held := 0
	set, release := c.s.acquire()
	if set != nil {
		for _, e := range set.entries {
			sm, n := e.schedulers()
			addScheduler(&sum, sm)
			held += n
		}
		release()
	}
	ch <- prometheus.MustNewConstMetric(c.batches, prometheus.CounterValue, float64(sum.Batches))
	ch <- prometheus.MustNewConstMetric(c.items, prometheus.CounterValue, float64(sum.Items))
	ch <- prometheus.MustNewConstMetric(c.meanBatch, prometheus.GaugeValue, sum.MeanBatch())
	ch <- prometheus.MustNewConstMetric(c.wait, prometheus.CounterValue, sum.WaitTotal.Seconds())
	ch <- prometheus.MustNewConstMetric(c.dropped, prometheus.CounterValue, float64(sum.Dropped))
	ch <- prometheus.MustNewConstMetric(c.rejected, prometheus.CounterValue, float64(sum.Rejected))
	ch <- prometheus.MustNewConstMetric(c.optionSets, prometheus.GaugeValue, float64(held))
}

// memoryCollector reports, at each scrape, the device allocator of a
// backend that has one (engine.MemoryStater: cuda).
type memoryCollector struct {
	be                                     engine.MemoryStater
	inUse, cached, allocs, reuses, drivers *prometheus.Desc
}

func newMemoryCollector(be engine.MemoryStater) *memoryCollector {
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }
	return &memoryCollector{be: be,
		inUse:   d("gleaner_device_memory_in_use_bytes", "Device memory handed out by the backend's caching allocator."),
		cached:  d("gleaner_device_memory_cached_bytes", "Device memory the allocator holds for reuse."),
		allocs:  d("gleaner_device_allocs_total", "Buffer allocations on the device."),
		reuses:  d("gleaner_device_alloc_reuses_total", "Allocations served from cached blocks."),
		drivers: d("gleaner_device_driver_allocs_total", "Allocations that went to the driver."),
	}
}

func (c *memoryCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.inUse, c.cached, c.allocs, c.reuses, c.drivers} {
		ch <- d
	}
}

func (c *memoryCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.be.MemoryStats()
	ch <- prometheus.MustNewConstMetric(c.inUse, prometheus.GaugeValue, float64(st.InUse))
	ch <- prometheus.MustNewConstMetric(c.cached, prometheus.GaugeValue, float64(st.Cached))
	ch <- prometheus.MustNewConstMetric(c.allocs, prometheus.CounterValue, float64(st.Allocs))
	ch <- prometheus.MustNewConstMetric(c.reuses, prometheus.CounterValue, float64(st.Reuses))
	ch <- prometheus.MustNewConstMetric(c.drivers, prometheus.CounterValue, float64(st.DriverAllocs))
}

// liveCollector reports each live writer's state at each scrape: its log
// (records, segments, bytes), checkpoints (the merges that fold the log
// into the index on disk), passages and what changes left stale.
type liveCollector struct {
	s                                              *Server
	seq, segments, bytes, nodes, ckpts, ckSecs, st *prometheus.Desc
	refreshes, rfFailed, rfSecs, deleted, compact  *prometheus.Desc
	merges, mgFailed, mgSecs                       *prometheus.Desc
}

func newLiveCollector(s *Server) *liveCollector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, []string{"index"}, nil)
	}
	return &liveCollector{s: s,
		seq:       d("gleaner_live_log_records", "The last record of the index's update log (changes committed since it was created)."),
		segments:  d("gleaner_live_log_segments", "Segment files of the update log (checkpoints drop the old ones)."),
		bytes:     d("gleaner_live_log_bytes", "Bytes of the update log on disk."),
		nodes:     d("gleaner_live_nodes", "Passages in the index served."),
		ckpts:     d("gleaner_live_checkpoints_total", "Checkpoints: the index written over the one on disk and the log folded in."),
		ckSecs:    d("gleaner_live_checkpoint_seconds_total", "Time spent in checkpoints."),
		st:        d("gleaner_live_stale", "Sections and edge kinds that changes left stale (their methods refuse until rebuilt)."),
		refreshes: d("gleaner_live_refreshes_total", "Refreshes that built stale sections again and published them."),
		rfFailed:  d("gleaner_live_refresh_failures_total", "Refreshes that failed or that a commit overtook (the sections stay stale)."),
		rfSecs:    d("gleaner_live_refresh_seconds_total", "Time spent building stale sections again."),
		deleted:   d("gleaner_live_deleted_nodes", "Passages deleted in place, kept until a compaction renumbers the index (--deleted-share)."),
		compact:   d("gleaner_live_compactions_total", "Commits, refreshes and merges that renumbered the index without its deleted passages."),
		merges:    d("gleaner_live_merges_total", "Merges published: the index renumbered without its deleted passages while the writes went on (past --merge-share, or by a refresh)."),
		mgFailed:  d("gleaner_live_merge_failures_total", "Merges that failed or gave up (a refit replaced the index, or the writes outpaced the merge)."),
		mgSecs:    d("gleaner_live_merge_seconds_total", "Time spent in published merges."),
	}
}

func (c *liveCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.seq, c.segments, c.bytes, c.nodes, c.ckpts, c.ckSecs, c.st, c.refreshes, c.rfFailed, c.rfSecs, c.deleted, c.compact, c.merges, c.mgFailed, c.mgSecs} {
		ch <- d
	}
}

func (c *liveCollector) Collect(ch chan<- prometheus.Metric) {
	for name, w := range c.s.writers {
		st := w.Stats()
		stale := 0
		if st.Stale != nil {
			stale = len(st.Stale.Sections) + len(st.Stale.GraphKinds)
		}
		g := func(d *prometheus.Desc, t prometheus.ValueType, v float64) {
			ch <- prometheus.MustNewConstMetric(d, t, v, name)
		}
		g(c.seq, prometheus.GaugeValue, float64(st.Seq))
		g(c.segments, prometheus.GaugeValue, float64(st.LogSegments))
		g(c.bytes, prometheus.GaugeValue, float64(st.LogBytes))
		g(c.nodes, prometheus.GaugeValue, float64(st.Nodes))
		g(c.ckpts, prometheus.CounterValue, float64(st.Checkpoints))
		g(c.ckSecs, prometheus.CounterValue, st.CheckpointSecs)
		g(c.st, prometheus.GaugeValue, float64(stale))
		g(c.refreshes, prometheus.CounterValue, float64(st.Refreshes))
		g(c.rfFailed, prometheus.CounterValue, float64(st.RefreshFailed))
		g(c.rfSecs, prometheus.CounterValue, st.RefreshSecs)
		g(c.deleted, prometheus.GaugeValue, float64(st.Deleted))
		g(c.compact, prometheus.CounterValue, float64(st.Compactions))
		g(c.merges, prometheus.CounterValue, float64(st.Merges))
		g(c.mgFailed, prometheus.CounterValue, float64(st.MergeFailed))
		g(c.mgSecs, prometheus.CounterValue, st.MergeSecs)
	}
}

// fleetCollector reports each index's place in its fleet log.
type fleetCollector struct {
	s                                               *Server
	applied, pending, failures, stopped             *prometheus.Desc
	snapshots, snapFailed, published, publishFailed *prometheus.Desc
}

func newFleetCollector(s *Server) *fleetCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &fleetCollector{s: s,
		applied:       d("gleaner_fleet_applied_seq", "The last batch of the fleet's log this replica took (applied, or refused alike on every replica).", "index"),
		pending:       d("gleaner_fleet_pending", "Batches the log held past the last one this replica read, when it read it (its lag).", "index"),
		failures:      d("gleaner_fleet_follow_failures_total", "Times following the log failed (a node or the connection lost) and was retried.", "index"),
		stopped:       d("gleaner_fleet_stopped", "1 when the index stopped following its log for good (behind a trimmed log): /readyz fails.", "index"),
		snapshots:     d("gleaner_fleet_snapshots_total", "Snapshots this replica uploaded."),
		snapFailed:    d("gleaner_fleet_snapshot_failures_total", "Snapshot uploads or trims that failed (the next one retries)."),
		published:     d("gleaner_fleet_published_total", "Write batches this replica published to the fleet's logs."),
		publishFailed: d("gleaner_fleet_publish_failures_total", "Write batches the fleet's logs did not acknowledge in time."),
	}
}

func (c *fleetCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.applied, c.pending, c.failures, c.stopped, c.snapshots, c.snapFailed, c.published, c.publishFailed} {
		ch <- d
	}
}

func (c *fleetCollector) Collect(ch chan<- prometheus.Metric) {
	for name, r := range c.s.replicas {
		stopped := 0.0
		if r.rep.Err() != nil {
			stopped = 1
		}
		ch <- prometheus.MustNewConstMetric(c.applied, prometheus.GaugeValue, float64(r.rep.Applied()), name)
		ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, float64(r.rep.Pending()), name)
		ch <- prometheus.MustNewConstMetric(c.failures, prometheus.CounterValue, float64(r.rep.Failures()), name)
		ch <- prometheus.MustNewConstMetric(c.stopped, prometheus.GaugeValue, stopped, name)
	}
	st := &c.s.fleetStats
	ch <- prometheus.MustNewConstMetric(c.snapshots, prometheus.CounterValue, float64(st.snapshots.Load()))
	ch <- prometheus.MustNewConstMetric(c.snapFailed, prometheus.CounterValue, float64(st.snapshotFailures.Load()))
	ch <- prometheus.MustNewConstMetric(c.published, prometheus.CounterValue, float64(st.published.Load()))
	ch <- prometheus.MustNewConstMetric(c.publishFailed, prometheus.CounterValue, float64(st.publishFailures.Load()))
}
