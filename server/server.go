package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/trace"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/index/fleet"
	"github.com/gleaner-rag/gleaner/index/live"
	"github.com/gleaner-rag/gleaner/retrieve"
	"github.com/gleaner-rag/gleaner/retrieve/filter"
	"github.com/gleaner-rag/gleaner/server/api"
	"github.com/gleaner-rag/gleaner/server/auth"
)

// Config configures a Server. Start from DefaultConfig: every field is used
// as given.
type Config struct {
	// Indexes maps names (letters, digits, '-', '_', '.') to index folders.
	Indexes map[string]string
	// Backend runs the engine ops (engine.Open); required.
	Backend engine.Backend
	// Settings are the operator's method settings by name (the CLI's
	// flags): every request starts from each method's defaults with these
	// applied, and may change any of them but the local ones (a model
	// folder). A setting no method has is an error.
	Settings retrieve.Overrides
	// Profile, when set, is the method a request without one runs, and its
	// settings and grouping (under Settings and the request's own).
	Profile *retrieve.Profile
	Limits  Limits
	// MaxInFlight bounds the requests being served; more get 503 with
	// Retry-After at once (fail fast), never a growing queue.
	MaxInFlight int
	// Timeout is the longest a request may run (timeout_ms may ask less).
	Timeout time.Duration
	// BodyTimeout is how long a request's body may take to arrive; it is
	// read before the request takes one of the MaxInFlight slots, so slow
	// or stalled bodies cannot hold them (408 past it).
	BodyTimeout time.Duration
	// HeaderTimeout bounds the wait for a request's headers, IdleTimeout a
	// keep-alive connection's wait for its next request, and MaxConns the
	// open connections (HTTPServer and Listener apply them).
	HeaderTimeout, IdleTimeout time.Duration
	MaxConns                   int
	// MaxOptionSets bounds the distinct option sets per index and method
	// whose methods (schedulers, caches) the server keeps.
	MaxOptionSets int
	// Pprof serves /debug/pprof/ (to admin keys).
	Pprof bool
	// Keys are the API keys requests must present (auth.Load); nil only
	// with InsecureNoAuth, which serves every request without a key (for
	// a server on loopback: the CLI refuses it on any other address).
	Keys           *auth.Keyring
	InsecureNoAuth bool
	// LoadKeys, when set, rereads the keys (auth.Load of the keys file) on
	// every ReloadAll: SIGHUP and POST /v1/admin/reload alike.
	LoadKeys func() (*auth.Keyring, error)
	// ACLField, when set, is the metadata field holding each node's ACL
	// groups: every request sees only the nodes that list one of its key's
	// groups or have no such field (retrieve/filter.ACL), and only methods
	// that honour filters serve. Keys with groups need it.
	ACLField string
	// SeparateAdmin moves the admin routes (reload, metrics, profiling)
	// from Handler to AdminHandler, for a listener of their own.
	SeparateAdmin bool
	// IndexMemory is how indexes are held: MemoryCopy (read into memory:
	// files changed or truncated on disk afterwards change nothing) or
	// MemoryMap (mapped: shared page cache, for indexes larger than the
	// memory to spare; a file truncated under it can crash the process,
	// and ScrubInterval catches files rewritten in place).
	IndexMemory string
	// ScrubInterval, when positive, rechecks every served file's checksum
	// that often; an index whose files changed is answered 503 until a
	// reload (and /readyz fails).
	ScrubInterval time.Duration
	// Tracing, when set, traces every request (a server span, continuing
	// a W3C traceparent) and the methods' stages under it; nil: off.
	Tracing trace.TracerProvider
	Logger  *slog.Logger
	// AuditLogger gets one line per admin action and keys reload.
	AuditLogger *slog.Logger
	// Writes opens every index for live updates (index/live, its log in
	// <index>.wal) and serves the write endpoints to keys with the write
	// scope; without it they answer 403.
	Writes bool
	// CheckpointBytes is the update log size that starts a checkpoint
	// (with Writes).
	CheckpointBytes int64
	// RefreshAfter is how long the writes to an index must pause before
	// the sections they left stale that can be built in memory (the
	// Tri-Graph, the HNSW graph, locally extracted KET-RAG) are built again in the background (with
	// Writes; 0: never).
	RefreshAfter time.Duration
	// RefreshWithin bounds how long those sections stay stale under writes
	// that never pause (live.Options.RefreshWithin; with Writes and
	// RefreshAfter; 0: no bound): past it a refresh holds the index's
	// writes until it is done, so a write may wait about as long as a
	// build of the section; one that waits past Timeout is answered 503,
	// not applied.
	RefreshWithin time.Duration
	// CommitInterval is the least time between two commits to an index
	// (with Writes; live.Options.MinInterval): writes arriving meanwhile
	// share the next one, so a steady stream of writes makes fewer new
	// indexes (each costs a pass over the index) at the price of up to
	// this much more latency per write.
	CommitInterval time.Duration
	// ApplyShare bounds the share of the time commits to an index may
	// take (with Writes; live.Options.ApplyShare), in (0, 1].
	ApplyShare float64
	// DeletedShare bounds the share of an index's passages that writes
	// may delete in place before a commit renumbers it without them (with
	// Writes; live.Options.DeletedShare), in [0, 1); 0 renumbers at every
	// removal.
	DeletedShare float64
	// MergeShare is the share of deleted passages past which an index's
	// writer merges in the background (with Writes;
	// live.Options.MergeShare), in [0, 1); 0: none while the writes go
	// on (a pause of RefreshAfter still merges), nor at or above
	// DeletedShare, whose commit renumbers first.
	MergeShare float64
	// WriteCores is how many cores the write work (decoding write
	// requests, checking, embedding and applying commits, over every
	// index) may take at once (with Writes; ≥ 0, 0: no bound), so that a
	// stream of writes leaves the other cores to queries. DefaultConfig
	// sets one less than GOMAXPROCS, at least 1.
	WriteCores int
	// WriteIdle runs the write work (decoding write requests, commits,
	// merges, checkpoints, background refreshes, also a fleet replica's)
	// on threads that the kernel runs only when no other thread wants the
	// core (Linux's SCHED_IDLE; elsewhere ordinary threads;
	// live.Options.IdleThreads says which work exactly):
	// a query's thread that wakes then preempts it at once, instead of
	// waiting out its time slice. When queries keep every core busy,
	// writes wait. The process should run with Procs' GOMAXPROCS.
	// DefaultConfig sets it.
	WriteIdle bool
	// Fleet, when set, makes the server a replica of a fleet: every
	// index follows its update log on NATS JetStream (index/fleet), and
	// with Writes the write endpoints publish to the log instead of
	// committing here. The live settings above apply to each replica's
	// writer.
	Fleet *Fleet
}

// Fleet configures a replica (Config.Fleet).
type Fleet struct {
	// Conn is the connection to the NATS cluster (fleet.Connect);
	// required. The server does not close it.
	Conn *fleet.Conn
	// SnapshotEvery is how often the server uploads a snapshot of each
	// index that changed since its last (0: never; a fleet needs one
	// replica that does, for new replicas and to trim the log).
	SnapshotEvery time.Duration
	// SnapshotKeep is how many snapshots are kept (≥ 1); the log is
	// trimmed behind the oldest.
	SnapshotKeep int
	// Wait bounds how long a request with min_seq waits for this replica
	// to apply that batch before it is answered 503 (> 0).
	Wait time.Duration
	// Scratch is the folder snapshots are written to before upload (""
	// the system's temporary folder).
	Scratch string
	// RestoreBehind: an index whose next batch the log no longer holds
	// (trimmed behind the snapshots) is moved aside (<dir>.behind-<time>,
	// kept) at start and the newest snapshot restored in its place;
	// without it the start fails, saying so.
	RestoreBehind bool
}

// DefaultFleet follows the fleet on conn, with a snapshot every 10
// minutes, two kept, and min_seq waits of up to a second.
func DefaultFleet(conn *fleet.Conn) *Fleet {
	return &Fleet{Conn: conn, SnapshotEvery: 10 * time.Minute, SnapshotKeep: 2, Wait: time.Second}
}

// live reports whether the server opens its indexes' writers: for
// writes, or to follow a fleet.
func (c Config) live() bool { return c.Writes || c.Fleet != nil }

// The ways an index is held in memory (Config.IndexMemory).
const (
	MemoryCopy = "copy"
	MemoryMap  = "map"
)

// DefaultConfig serves with the methods' defaults, 256 requests in
// flight, a 10 s timeout and 1 MiB bodies; set Indexes and Backend.
func DefaultConfig() Config {
	return Config{MaxInFlight: 256, Timeout: 10 * time.Second, BodyTimeout: 5 * time.Second, MaxOptionSets: 16,
		HeaderTimeout: 5 * time.Second, IdleTimeout: 30 * time.Second, MaxConns: 2048, IndexMemory: MemoryCopy,
		Limits: Limits{MaxBodyBytes: 1 << 20, MaxQueryBytes: 16 << 10, MaxK: 1000, MaxWriteBytes: 32 << 20}, Logger: slog.Default(), AuditLogger: slog.Default(),
		CheckpointBytes: 64 << 20, RefreshAfter: 30 * time.Second, ApplyShare: 1, DeletedShare: 1.0 / 8, MergeShare: 1.0 / 16, WriteCores: max(1, runtime.GOMAXPROCS(0)-1), WriteIdle: true}
}

// maxWriteCores bounds Config.WriteCores: Procs adds them to GOMAXPROCS,
// which Go caps at 1024 anyway.
const maxWriteCores = 1024

func (c Config) validate() error {
	switch {
	case len(c.Indexes) == 0:
		return errors.New("server: no indexes")
	case c.HeaderTimeout <= 0 || c.IdleTimeout <= 0 || c.MaxConns < 1:
		return fmt.Errorf("server: header timeout %v, idle timeout %v and max conns %d must be positive (start from DefaultConfig)", c.HeaderTimeout, c.IdleTimeout, c.MaxConns)
	case c.MaxInFlight < 1 || c.Timeout <= 0 || c.BodyTimeout <= 0 || c.MaxOptionSets < 1:
		return fmt.Errorf("server: max in flight %d, timeout %v, body timeout %v and max option sets %d must be positive (start from DefaultConfig)", c.MaxInFlight, c.Timeout, c.BodyTimeout, c.MaxOptionSets)
	case c.Limits.MaxBodyBytes < 1 || c.Limits.MaxQueryBytes < 1 || c.Limits.MaxK < 1 || c.Limits.MaxWriteBytes < 1:
		return fmt.Errorf("server: limits %+v must be positive (start from DefaultConfig)", c.Limits)
	case c.Logger == nil || c.AuditLogger == nil:
		return errors.New("server: nil logger or audit logger (start from DefaultConfig)")
	case c.Keys == nil && !c.InsecureNoAuth:
		return errors.New("server: no keys: set Config.Keys (auth.Load), or InsecureNoAuth to serve without authentication")
	case c.Keys != nil && c.InsecureNoAuth:
		return errors.New("server: both Keys and InsecureNoAuth are set; choose one")
	case c.IndexMemory != MemoryCopy && c.IndexMemory != MemoryMap:
		return fmt.Errorf("server: index memory %q: want %q or %q", c.IndexMemory, MemoryCopy, MemoryMap)
	case c.live() && c.CheckpointBytes < 1:
		return fmt.Errorf("server: checkpoint bytes %d must be positive with writes (start from DefaultConfig)", c.CheckpointBytes)
	case c.RefreshAfter < 0:
		return fmt.Errorf("server: negative refresh delay %v (0: no background refresh)", c.RefreshAfter)
	case c.RefreshWithin < 0:
		return fmt.Errorf("server: negative refresh bound %v (0: no bound)", c.RefreshWithin)
	case c.live() && c.RefreshWithin > 0 && c.RefreshAfter == 0:
		return fmt.Errorf("server: a refresh bound (%v) needs the background refresh (refresh delay > 0)", c.RefreshWithin)
	case c.live() && !(c.ApplyShare >= 0.01 && c.ApplyShare <= 1):
		return fmt.Errorf("server: apply share %v: want a share in [0.01, 1] (start from DefaultConfig)", c.ApplyShare)
	case c.live() && !(c.DeletedShare >= 0 && c.DeletedShare < 1):
		return fmt.Errorf("server: deleted share %v: want a share in [0, 1) (0: renumber at every removal)", c.DeletedShare)
	case c.live() && !(c.MergeShare >= 0 && c.MergeShare < 1):
		return fmt.Errorf("server: merge share %v: want a share in [0, 1) (0: no merge while the writes go on)", c.MergeShare)
	case c.WriteCores < 0 || c.WriteCores > maxWriteCores:
		return fmt.Errorf("server: write cores %d: want 0 to %d (0: no bound)", c.WriteCores, maxWriteCores)
	case c.CommitInterval < 0 || c.CommitInterval > time.Minute:
		return fmt.Errorf("server: commit interval %v: want 0 to 1m", c.CommitInterval)
	case c.ScrubInterval < 0:
		return fmt.Errorf("server: negative scrub interval %v", c.ScrubInterval)
	case c.ACLField == "" && c.Keys.HasGroups():
		return errors.New("server: keys carry ACL groups but no ACL field is set (--acl-field): they would see every node")
	case c.Backend == nil:
		return errors.New("server: Config.Backend is nil (open one with engine.Open, after importing kernels/cpu)")
	}
	if err := c.Fleet.validate(); err != nil {
		return err
	}
	for name := range c.Indexes {
		if !validName(name) {
			return fmt.Errorf("server: index name %q: use letters, digits, '-', '_' and '.' (a name, not a path)", name)
		}
	}
	return c.validateSettings()
}

// validateSettings applies the operator's settings to every method, so a
// bad or unknown one fails at start rather than on some request.
func (c Config) validateSettings() error {
	var cfgs []*retrieve.Config
	for _, name := range retrieve.Names() {
		cfg, err := c.methodConfig(name)
		if err != nil {
			return fmt.Errorf("server: settings: %w", err)
		}
		if err := cfg.Validate(); err != nil {
			return fmt.Errorf("server: settings: %w", err)
		}
		cfgs = append(cfgs, cfg)
	}
	if unused := c.Settings.Unused(cfgs...); len(unused) > 0 {
		return fmt.Errorf("server: settings %v: no method has them", unused)
	}
	return nil
}

// methodConfig is a method's configuration before a request's options:
// its defaults with the operator's settings.
func (c Config) methodConfig(name string) (*retrieve.Config, error) {
	cfg, err := retrieve.NewConfig(name)
	if err != nil {
		return nil, err
	}
	if c.Profile != nil && name == c.Profile.Method {
		if err := c.Profile.Overrides().Apply(cfg); err != nil {
			return nil, fmt.Errorf("profile: %w", err)
		}
	}
	return cfg, c.Settings.Apply(cfg)
}

func validName(s string) bool {
	if s == "" || s == "." || s == ".." || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// Server serves retrieval over a set of indexes. It is safe for concurrent
// use; Reload swaps the indexes without dropping requests in flight.
type Server struct {
	cfg      Config
	set      atomic.Pointer[indexSet]
	reloadMu sync.Mutex
	slots    chan struct{}
	metrics  *metrics
	guard    *connGuard
	ready    atomic.Bool
	keys     atomic.Pointer[auth.Keyring]
	limits   limiters
	stop     chan struct{} // closed by Close: ends the scrubber
	stopOnce sync.Once
	certMu   sync.Mutex
	certs    []*Certificate // TLSListener's, reread by ReloadAll
	// writers update the indexes in place (Config.Writes); nil without.
	writers  map[string]*live.Writer
	writeCPU live.Gate // the cores write work may take (Config.WriteCores)
	// replicas follow the fleet's logs (Config.Fleet), by index; nil
	// without a fleet.
	replicas   map[string]*replica
	snapDone   chan struct{} // closed when the snapshot loop ends
	fleetStats fleetStats
	// open counts the index sets not closed yet: a request may still
	// read a set a publish or reload retired.
	open sync.WaitGroup
}

// track counts set among the open ones until it closes.
func (s *Server) track(set *indexSet) *indexSet {
	s.open.Add(1)
	set.onClose = s.open.Done
	return set
}

// waitSets waits for every set to close, or ctx.
func (s *Server) waitSets(ctx context.Context) error {
	done := make(chan struct{})
	go func() { s.open.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// New opens every index (read-only, shared by all requests).
func New(cfg Config) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, slots: make(chan struct{}, cfg.MaxInFlight), metrics: newMetrics()}
	if err := s.restoreMissing(context.Background()); err != nil {
		return nil, err
	}
	newLogs := s.missingLogs() // a start that fails removes the logs it made
	if cfg.live() {
		if err := s.openWriters(context.Background()); err != nil {
			return nil, err
		}
	}
	set, err := s.openSet()
	if err != nil {
		s.closeWriters()
		return nil, err
	}
	s.guard = newConnGuard(cfg.MaxConns, s.metrics)
	s.set.Store(s.track(set))
	// Following starts once the set is served: each batch it applies is
	// published into it.
	if err := s.followFleet(context.Background()); err != nil {
		s.set.Swap(nil).retire(context.Background())
		s.closeWriters()
		for _, dir := range newLogs {
			os.RemoveAll(dir) // empty: following failed before it took a batch
		}
		return nil, err
	}
	s.keys.Store(cfg.Keys)
	s.metrics.reg.MustRegister(newSchedulerCollector(s))
	if s.writers != nil {
		s.metrics.reg.MustRegister(newLiveCollector(s))
	}
	if s.replicas != nil {
		s.metrics.reg.MustRegister(newFleetCollector(s))
	}
	if ms, ok := cfg.Backend.(engine.MemoryStater); ok {
		s.metrics.reg.MustRegister(newMemoryCollector(ms))
	}
	s.ready.Store(true)
	s.stop = make(chan struct{})
	if cfg.ScrubInterval > 0 {
		go s.scrubEvery(cfg.ScrubInterval, s.stop)
	}
	if s.replicas != nil && cfg.Fleet.SnapshotEvery > 0 {
		s.snapDone = make(chan struct{})
		go s.snapshotEvery(cfg.Fleet.SnapshotEvery, s.stop)
	}
	return s, nil
}

// Registry is the Prometheus registry /metrics serves.
func (s *Server) Registry() *prometheus.Registry { return s.metrics.reg }

// Reload reopens every index folder (rebuilt in place by `gleaner index`)
// and swaps them in at once; requests in flight finish on the indexes they
// started with, which are closed after them.
func (s *Server) Reload(ctx context.Context) error {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	set, err := s.openSet()
	if err != nil {
		return err
	}
	old := s.set.Swap(s.track(set))
	s.metrics.damaged.Reset() // the new set is freshly verified
	s.cfg.Logger.Info("indexes reloaded", "indexes", len(set.entries))
	go old.retire(context.WithoutCancel(ctx))
	return nil
}

// ReloadAll rereads everything the server serves from files: the indexes
// (Reload), the keys (Config.LoadKeys) and the TLS pairs of TLSListener.
// A part that fails keeps what it had; the error names each failure.
func (s *Server) ReloadAll(ctx context.Context) error {
	errs := []error{s.Reload(ctx)}
	if s.cfg.LoadKeys != nil {
		errs = append(errs, s.ReloadKeys(s.cfg.LoadKeys))
	}
	s.certMu.Lock()
	certs := slices.Clone(s.certs)
	s.certMu.Unlock()
	for _, c := range certs {
		errs = append(errs, c.Reload())
	}
	return errors.Join(errs...)
}

// Close marks the server not ready and releases the indexes once the
// requests using them are done (or ctx ends).
func (s *Server) Close(ctx context.Context) error {
	s.ready.Store(false)
	s.stopOnce.Do(func() { close(s.stop) })
	s.reloadMu.Lock() // no publish swaps a set in after this
	set := s.set.Swap(nil)
	s.reloadMu.Unlock()
	var err error
	if set != nil {
		err = set.retire(ctx)
	}
	s.stopFleet()
	if err == nil && s.writers != nil {
		err = s.waitSets(ctx) // sets retired by publishes may still be read
	}
	if err == nil && s.writers != nil {
		err = s.closeWriters() // readers are done: fold each log into its index
	}
	return err
}

// Routes are the API's endpoints ("METHOD /path"), as openapi.yaml lists
// them.
func Routes() []string {
	return []string{"POST /v1/retrieve", "GET /v1/indexes", "GET /v1/methods", "POST /v1/admin/reload",
		"PUT /v1/indexes/{index}/documents/{id}", "DELETE /v1/indexes/{index}/documents/{id}", "POST /v1/indexes/{index}/documents",
		"POST /v1/indexes/{index}/refit", "GET /healthz", "GET /readyz", "GET /metrics"}
}

// routeScopes are the scope each route needs ("": none, the health
// checks); openapi.yaml lists them as x-scope.
var routeScopes = map[string]auth.Scope{
	"POST /v1/retrieve": auth.Read, "GET /v1/indexes": auth.Read, "GET /v1/methods": auth.Read,
	"POST /v1/admin/reload": auth.Admin, "GET /metrics": auth.Admin, "GET /healthz": "", "GET /readyz": "",
	"PUT /v1/indexes/{index}/documents/{id}": auth.Write, "DELETE /v1/indexes/{index}/documents/{id}": auth.Write,
	"POST /v1/indexes/{index}/documents": auth.Write, "POST /v1/indexes/{index}/refit": auth.Admin,
	"/debug/pprof/": auth.Admin, "/debug/pprof/profile": auth.Admin, "/debug/pprof/trace": auth.Admin,
}

// RouteScope is the scope a route of Routes needs ("" for none).
func RouteScope(route string) auth.Scope { return routeScopes[route] }

// routeOf is the route (as Routes and openapi.yaml write it) of a mux
// pattern: a document id may hold '/', so its pattern takes the rest of
// the path ("{id...}").
func routeOf(pattern string) string { return strings.Replace(pattern, "...}", "}", 1) }

func (s *Server) handlers() map[string]http.Handler {
	hs := map[string]http.Handler{
		"POST /v1/retrieve":                            http.HandlerFunc(s.retrieve),
		"GET /v1/indexes":                              http.HandlerFunc(s.indexes),
		"GET /v1/methods":                              http.HandlerFunc(s.methods),
		"POST /v1/admin/reload":                        http.HandlerFunc(s.reload),
		"PUT /v1/indexes/{index}/documents/{id...}":    http.HandlerFunc(s.putDocument),
		"DELETE /v1/indexes/{index}/documents/{id...}": http.HandlerFunc(s.deleteDocument),
		"POST /v1/indexes/{index}/documents":           http.HandlerFunc(s.postDocuments),
		"POST /v1/indexes/{index}/refit":               http.HandlerFunc(s.refit),
		"GET /healthz":                                 http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok\n")) }),
		"GET /readyz":                                  http.HandlerFunc(s.readyz),
		"GET /metrics":                                 promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}),
	}
	if s.cfg.Pprof {
		hs["/debug/pprof/"] = http.HandlerFunc(pprof.Index)
		hs["/debug/pprof/profile"] = http.HandlerFunc(pprof.Profile)
		hs["/debug/pprof/trace"] = http.HandlerFunc(pprof.Trace)
	}
	return hs
}

// Handler is the HTTP API (openapi.yaml). Every route but the health
// checks needs a key with its scope (Config.Keys); with SeparateAdmin the
// admin routes are left to AdminHandler.
func (s *Server) Handler() http.Handler {
	return s.mux(func(scope auth.Scope) bool { return !s.cfg.SeparateAdmin || scope != auth.Admin })
}

// AdminHandler serves the admin routes (and the health checks) for a
// listener of their own (Config.SeparateAdmin); they still need an admin
// key.
func (s *Server) AdminHandler() http.Handler {
	return s.mux(func(scope auth.Scope) bool { return scope == auth.Admin || scope == "" })
}

// mux serves the routes whose scope keep accepts.
func (s *Server) mux(keep func(auth.Scope) bool) http.Handler {
	mux := http.NewServeMux()
	for pattern, h := range s.handlers() {
		scope := routeScopes[routeOf(pattern)]
		if !keep(scope) {
			continue
		}
		if scope != "" {
			h = s.requireKey(scope, h)
		}
		mux.Handle(pattern, s.traced(routeOf(pattern), h))
		if method, path, ok := strings.Cut(pattern, " "); ok && scope == auth.Admin {
			// Another method on an admin path is still an admin request:
			// the key is checked and the attempt audited, then 405.
			mux.Handle(path, s.requireKey(scope, methodNotAllowed(method)))
		}
	}
	return s.accessLog(mux)
}

// accessLog gives every request an id (X-Request-Id, kept when the caller
// sends one) and logs it with its status and duration.
func (s *Server) accessLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if id == "" || len(id) > 64 {
			var b [8]byte
			rand.Read(b[:])
			id = hex.EncodeToString(b[:])
		}
		w.Header().Set("X-Request-Id", id)
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		start := time.Now()
		defer s.recoverPanic(rec, r, id)
		next.ServeHTTP(rec, r)
		s.cfg.Logger.Info("request", "id", id, "method", r.Method, "path", r.URL.Path, "status", rec.status,
			"ms", float64(time.Since(start).Microseconds())/1000)
	})
}

type statusRecorder struct {
	http.ResponseWriter
	status int
	wrote  bool // headers sent
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status, r.wrote = code, true
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.ResponseWriter.Write(b)
}

// recoverPanic turns a request's panic into a logged error, a metric and
// a 500 (net/http would only drop the connection and log it quietly). On
// mapped indexes a panic is likeliest a file changed in place, so it
// scrubs them at once: a damaged index stops being served.
func (s *Server) recoverPanic(rec *statusRecorder, r *http.Request, id string) {
	p := recover()
	if p == nil {
		return
	}
	if p == http.ErrAbortHandler {
		panic(p)
	}
	s.metrics.panics.Inc()
	s.cfg.Logger.Error("request panicked", "id", id, "path", r.URL.Path, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
	if s.cfg.IndexMemory == MemoryMap {
		go s.Scrub(context.Background())
	}
	if !rec.wrote {
		writeError(rec, http.StatusInternalServerError, &FieldError{Msg: "internal error (logged with the request id)"})
	}
}

// Unwrap lets http.ResponseController reach the connection (the body's
// read deadline).
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if !s.ready.Load() || s.set.Load() == nil {
		writeError(w, http.StatusServiceUnavailable, &FieldError{Msg: "not ready"})
		return
	}
	if s.damagedIndex() != nil { // which one, and why, is in the log: /readyz needs no key
		writeError(w, http.StatusServiceUnavailable, &FieldError{Msg: "not ready: an index changed on disk; see the log"})
		return
	}
	if s.stoppedReplica() { // which one, and why, is in the log and /metrics
		writeError(w, http.StatusServiceUnavailable, &FieldError{Msg: "not ready: an index stopped following the fleet's log; see the log"})
		return
	}
	if !s.readyAt(w, r) {
		return // answered
	}
	w.Write([]byte("ready\n"))
}

func (s *Server) indexes(w http.ResponseWriter, r *http.Request) {
	set, release := s.acquire()
	if set == nil {
		writeError(w, http.StatusServiceUnavailable, &FieldError{Msg: "shutting down"})
		return
	}
	defer release()
	out := []api.Index{}
	for name, e := range set.entries {
		if !mayUse(r.Context(), name) {
			continue
		}
		m := e.ix.Meta
		sections := []string{}
		for _, st := range e.ix.Sections() {
			if st.Err == nil {
				sections = append(sections, st.Name)
			}
		}
		nodes, edges, err := s.visibleSize(r.Context(), e)
		if err != nil {
			writeError(w, http.StatusInternalServerError, err)
			return
		}
		out = append(out, api.Index{Name: name, Nodes: nodes, Edges: edges, GraphKinds: m.GraphKinds, Head: e.ix.HeadFile() != nil, Sections: sections})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	writeJSON(w, http.StatusOK, out)
}

// visibleSize is an index's node and edge counts as the request's key
// sees it: under ACLs only its nodes and the edges between them, so no
// count reveals nodes it may not see.
func (s *Server) visibleSize(ctx context.Context, e *entry) (nodes, edges int, err error) {
	if s.cfg.ACLField == "" {
		return e.ix.Live(), e.ix.Meta.Edges, nil
	}
	var groups []string
	if k := KeyOf(ctx); k != nil {
		groups = k.Groups
	}
	allow, err := filter.Eval(e.ix, filter.ACL(s.cfg.ACLField, groups))
	if err != nil {
		return 0, 0, err
	}
	allow = retrieve.Visible(e.ix, retrieve.Query{Allow: allow}).Allow // no deleted node either
	edges = allow.Memo("edges", func() any { return edgesWithin(e.ix.Graph(), allow) }).(int)
	return allow.Len(), edges, nil
}

// edgesWithin counts the graph's edges whose two ends are in allow.
func edgesWithin(g *graphops.Graph, allow *filter.Set) int {
	n := 0
	for v := 0; v+1 < len(g.Out.Ptr); v++ {
		if !allow.Has(v) {
			continue
		}
		for _, u := range g.Out.Idx[g.Out.Ptr[v]:g.Out.Ptr[v+1]] {
			if allow.Has(int(u)) {
				n++
			}
		}
	}
	return n
}

func (s *Server) methods(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.methodList())
}

// methodList describes every method and the settings a request may give.
// methodList is GET /v1/methods: every method with its settings at the
// values a request starts from (the defaults and the operator's settings).
func (s *Server) methodList() api.Methods {
	out := api.Methods{Methods: []api.Method{}, FirstStages: retrieve.Stages()}
	for _, in := range retrieve.Methods() {
		cfg, err := s.cfg.methodConfig(in.Name)
		if err != nil { // validated at start
			continue
		}
		m := api.Method{Name: in.Name, Summary: in.Summary, Settings: []api.Setting{}, Reads: in.Reads, Host: in.Host, Filters: in.Filters}
		for _, p := range cfg.Params() {
			m.Settings = append(m.Settings, api.Setting{Name: p.JSONName(), Type: string(p.Kind()), Default: p.Value(), Usage: p.Usage(), Local: p.IsLocal()})
		}
		out.Methods = append(out.Methods, m)
	}
	return out
}

func (s *Server) reload(w http.ResponseWriter, r *http.Request) {
	if err := s.ReloadAll(r.Context()); err != nil {
		writeError(w, http.StatusInternalServerError, &FieldError{Msg: "reload: " + err.Error() + " (the parts that failed keep what they had)"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "reloaded"})
}

// acquire takes a reference on the current index set.
func (s *Server) acquire() (*indexSet, func()) {
	for {
		set := s.set.Load()
		if set == nil {
			return nil, func() {}
		}
		if set.ref() {
			return set, set.unref
		}
		// the set was retired between the load and the ref: load again
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	newEncoder(w).Encode(v)
}

// newEncoder writes JSON as it is: a heading path's '>' stays '>' (the
// responses are never embedded in HTML, so escaping buys nothing).
func newEncoder(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc
}

func writeError(w http.ResponseWriter, code int, err error) {
	var fe *FieldError
	body := Error{Error: err.Error()}
	if errors.As(err, &fe) {
		body = Error{Error: fe.Msg, Field: fe.Field}
	}
	writeJSON(w, code, body)
}
