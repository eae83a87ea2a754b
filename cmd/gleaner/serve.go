package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/gleaner-rag/gleaner/retrieve"
	"github.com/gleaner-rag/gleaner/server"
	"github.com/gleaner-rag/gleaner/server/auth"
)

func newServe(g *globals) *cobra.Command {
	var o serveFlags
	var sf *settingFlags
	cfg := server.DefaultConfig()
	cmd := &cobra.Command{
		Use:   "serve --index name=dir [--index name=dir ...] (--keys keys.json | --insecure-no-auth) [--addr 127.0.0.1:8080]",
		Short: "Serve retrieval over HTTP (API keys, TLS, JSON and NDJSON streaming, /metrics, reload, graceful drain)",
		Long: `Serve the methods over the given indexes (opened read-only once, shared by all requests).

  POST /v1/retrieve     {"index", "query", "method", "k", "first_stage", "graph_kinds", "options", "filter", "group_by", "stream", "timeout_ms", "text"}
  GET  /v1/indexes, /v1/methods (every method's settings), /healthz, /readyz, /metrics (Prometheus)
  POST /v1/admin/reload reopens the index folders (rebuilt in place) and swaps them in atomically

Every request but /healthz and /readyz needs "Authorization: Bearer <token>", a key of --keys (made
by gleaner keys add) with the scope the route needs: read for retrieval and the lists, admin for
reload, /metrics and /debug/pprof. A key may use only its indexes and is held to its rate; with
--acl-field it sees only the nodes of its groups and the public ones. Only
--insecure-no-auth serves without keys, and only on a loopback address. --admin-addr moves the admin
routes to a listener of their own. --tls-cert and --tls-key serve HTTPS.

The method flags (--bmax, --model, …) set what requests start from; a request's "options" change any
setting but the local ones (--model, --runtime, --precision), which only the server sets.

At --max-in-flight requests the server answers 503 with Retry-After at once. SIGHUP (or POST
/v1/admin/reload) rereads the indexes, the keys file and the TLS pair; SIGTERM or Ctrl-C stops
accepting, lets requests in flight finish within --grace, and exits 0. --config reads any of these flags from a JSON file (the command
line wins); --print-config writes the configuration in that form. The API is described in
server/openapi.yaml; server/client is the Go client.`,
		Example: `  gleaner keys add --file keys.json --id app --scope read --index wiki   # prints the token
  gleaner serve --index wiki=idx/wiki --keys keys.json
  curl -s localhost:8080/v1/retrieve -H "Authorization: Bearer $TOKEN" -d '{"index":"wiki","query":"vitamin D","k":3}'
  gleaner serve --index wiki=idx/wiki --insecure-no-auth   # loopback only, for trying it out`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyConfigFile(cmd.LocalFlags(), cmd.InheritedFlags(), o.config); err != nil { // not the global flags: they act before serve runs
				return err
			}
			if o.printConfig {
				return printConfig(cmd.OutOrStdout(), cmd.LocalFlags())
			}
			if err := o.fill(&cfg, g); err != nil {
				return err
			}
			if _, err := sf.configs(retrieve.NewConfig, retrieve.Names()); err != nil {
				return err // the server checks too; this speaks of flags
			}
			cfg.Backend, cfg.Logger, cfg.Settings = g.be, g.log, sf.overrides()
			if o.otlp != "" {
				tp, err := newTracing(o.otlp, o.traceRatio)
				if err != nil {
					return err
				}
				defer tp.Shutdown(context.Background()) // flush the spans queued
				cfg.Tracing = tp
			}
			if err := o.fleet.check(cmd.Flags()); err != nil {
				return err
			}
			if o.fleet.urls != "" {
				conn, err := o.fleet.connect(cmd.Context(), g.log, &cfg)
				if err != nil {
					return err
				}
				defer conn.Close()
			}
			reserveProcs(g.log, cfg)
			s, err := server.New(cfg)
			if err != nil {
				return err
			}
			eps, err := o.listen(s)
			if err != nil {
				s.Close(context.Background())
				return err
			}
			for _, ep := range eps {
				fmt.Fprintf(cmd.OutOrStdout(), "serving %s on %s\n", ep.what, ep.url())
			}
			return serve(cmd.Context(), s, eps, o.grace, func() error { return s.ReloadAll(context.Background()) })
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&o.indexes, "index", nil, "name=dir of an index to serve (repeatable)")
	fl.StringVar(&o.addr, "addr", "127.0.0.1:8080", "listen address")
	fl.StringVar(&o.adminAddr, "admin-addr", "", "serve the admin routes (reload, /metrics, /debug/pprof) here instead of on --addr")
	fl.StringVar(&o.keys, "keys", "", "the API keys file (gleaner keys add); reread on SIGHUP")
	fl.BoolVar(&o.insecure, "insecure-no-auth", false, "serve without API keys: anyone who can connect may query and reload (loopback addresses only)")
	fl.StringVar(&cfg.ACLField, "acl-field", "", "metadata field of each node's ACL groups: a request sees only nodes listing one of its key's groups, or without the field")
	fl.StringVar(&o.auditLog, "audit-log", "", "append the audit lines (admin requests, keys reloads) to this file as JSON (default: stderr, whatever --log-level)")
	fl.StringVar(&o.tlsCert, "tls-cert", "", "PEM certificate (chain) to serve HTTPS with; reread on SIGHUP")
	fl.StringVar(&o.tlsKey, "tls-key", "", "PEM private key of --tls-cert")
	fl.StringVar(&o.otlp, "otlp-endpoint", "", "send OpenTelemetry traces (a span per request and per method stage) to this OTLP/HTTP endpoint, e.g. http://127.0.0.1:4318; off when empty")
	fl.Float64Var(&o.traceRatio, "trace-ratio", 1, "with --otlp-endpoint: the fraction of requests traced (a caller's sampled traceparent is always followed)")
	fl.StringVar(&o.config, "config", "", "read flags from this JSON file ({\"flag-name\": value}); flags on the command line win")
	fl.BoolVar(&o.printConfig, "print-config", false, "print the configuration (every serve flag after --config, and the method settings that were set) as a --config file, and exit")
	fl.StringVar(&o.profile, "profile", "", "a profile from gleaner tune: the method (and its settings and grouping) of requests that name none")
	fl.IntVar(&cfg.MaxInFlight, "max-in-flight", cfg.MaxInFlight, "requests served at once; more get 503 with Retry-After")
	fl.DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "longest a request may run (timeout_ms may ask less)")
	fl.DurationVar(&cfg.BodyTimeout, "body-timeout", cfg.BodyTimeout, "longest a request body may take to arrive (408 past it); read before the request takes a slot")
	fl.DurationVar(&cfg.HeaderTimeout, "header-timeout", cfg.HeaderTimeout, "longest the headers of a request (and a TLS handshake) may take to arrive")
	fl.DurationVar(&cfg.IdleTimeout, "idle-timeout", cfg.IdleTimeout, "longest a keep-alive connection may wait for its next request")
	fl.IntVar(&cfg.MaxConns, "max-conns", cfg.MaxConns, "open connections; at the cap a new one closes the longest-idle one")
	fl.IntVar(&cfg.Limits.MaxK, "max-k", cfg.Limits.MaxK, "largest k a request may ask")
	fl.Int64Var(&cfg.Limits.MaxBodyBytes, "max-body", cfg.Limits.MaxBodyBytes, "largest request body in bytes")
	fl.BoolVar(&cfg.Writes, "writes", false, "open the indexes for live updates and serve the write endpoints (PUT/DELETE /v1/indexes/{index}/documents/{id}, POST …/documents) to keys with the write scope; each index's update log is <index>.wal")
	fl.Int64Var(&cfg.CheckpointBytes, "checkpoint-bytes", cfg.CheckpointBytes, "with --writes: the update log size that starts a checkpoint (the index rewritten on disk, the log folded in)")
	fl.DurationVar(&cfg.CommitInterval, "commit-interval", cfg.CommitInterval, "with --writes: least time between two commits to an index; writes arriving meanwhile share the next (fewer passes over the index under a steady stream, each write up to this much slower)")
	fl.Float64Var(&cfg.DeletedShare, "deleted-share", cfg.DeletedShare, "with --writes: most of an index's passages that replaces and deletes may leave deleted in place, in [0, 1); the commit that would pass it renumbers the index without them (a pass over every array); 0 renumbers at every removal")
	fl.Float64Var(&o.mergeShare, "merge-share", -1, "with --writes: the share of an index's passages deleted in place past which it is merged in the background (renumbered without them while the writes go on), in [0, 1); 0: not while the writes go on (a pause of --refresh-after still merges; 0 there too for none), and at or above --deleted-share the commit past that renumbers first; -1: half of --deleted-share")
	fl.Float64Var(&cfg.ApplyShare, "apply-share", cfg.ApplyShare, "with --writes: most of the time commits to an index may take, in (0, 1]; below 1, a commit that took d waits d/share after its start before the next, which gathers the writes meanwhile (leaves CPU to queries under a stream of writes; each write waits longer)")
	fl.IntVar(&cfg.WriteCores, "write-cores", cfg.WriteCores, "with --writes: how many cores the write work (decoding writes, checking, embedding and applying commits) may take at once, leaving the others to queries (0: no bound; default: one less than the cores, at least 1)")
	fl.BoolVar(&cfg.WriteIdle, "write-idle", cfg.WriteIdle, "with --writes or a fleet: run the write work on threads the kernel runs only when no query wants the core (Linux's SCHED_IDLE), and, unless GOMAXPROCS is set, give the process a P for each write core besides the cores: a query preempts the write work at once; when queries keep every core busy, writes wait")
	fl.DurationVar(&cfg.RefreshWithin, "refresh-within", cfg.RefreshWithin, "with --writes: the longest those sections stay stale while the writes never pause; past it a refresh holds the index's writes until it is done (they wait, up to a build's time; past --timeout, 503 and not applied; 0: no bound)")
	fl.DurationVar(&cfg.RefreshAfter, "refresh-after", cfg.RefreshAfter, "with --writes: how long the writes to an index must pause before the sections they left stale (Tri-Graph, HNSW graph, local KET-RAG) are built again in the background (0: never; gleaner refresh does it offline)")
	fl.Int64Var(&cfg.Limits.MaxWriteBytes, "max-write-body", cfg.Limits.MaxWriteBytes, "with --writes: largest write request body in bytes")
	o.fleet.flags(fl)
	fl.IntVar(&cfg.MaxOptionSets, "max-option-sets", cfg.MaxOptionSets, "distinct option sets kept per index and method; another evicts the least recently used")
	fl.BoolVar(&cfg.Pprof, "pprof", false, "serve /debug/pprof/ (to admin keys)")
	fl.StringVar(&cfg.IndexMemory, "index-memory", cfg.IndexMemory, "copy: read the indexes into memory (files changed on disk afterwards change nothing); map: map them (shared page cache, for indexes larger than the memory to spare)")
	fl.DurationVar(&cfg.ScrubInterval, "scrub-interval", 0, "recheck every served file's checksum this often (0: never); an index changed on disk gets 503 until a reload")
	fl.DurationVar(&o.grace, "grace", 30*time.Second, "on SIGTERM, how long requests in flight may take to finish")
	sf = addSettingFlags(fl, retrieve.Methods(), "--method")
	o.sf = sf
	return cmd
}

// serveFlags are serve's flags beyond the server's Config.
type serveFlags struct {
	indexes                                  []string
	addr, adminAddr, keys, auditLog, profile string
	tlsCert, tlsKey, config, otlp            string
	traceRatio                               float64
	mergeShare                               float64 // -1: half of --deleted-share
	insecure, printConfig                    bool
	grace                                    time.Duration
	sf                                       *settingFlags
	cert                                     *server.Certificate
	fleet                                    fleetFlags
}

// fill checks the flags and sets what they give in cfg: indexes, profile,
// keys, audit log and TLS.
func (o *serveFlags) fill(cfg *server.Config, g *globals) error {
	cfg.Indexes = map[string]string{}
	for _, spec := range o.indexes {
		name, dir, ok := strings.Cut(spec, "=")
		if !ok || name == "" || dir == "" {
			return fmt.Errorf("--index %q: want name=dir", spec)
		}
		if _, dup := cfg.Indexes[name]; dup {
			return fmt.Errorf("--index: the name %q is given twice", name)
		}
		cfg.Indexes[name] = dir
	}
	if o.grace <= 0 {
		return fmt.Errorf("--grace must be positive, got %v", o.grace)
	}
	if o.profile != "" {
		p, err := retrieve.ReadProfile(o.profile)
		if err != nil {
			return fmt.Errorf("--profile: %w", err)
		}
		cfg.Profile, o.sf.profile = p, p
	}
	if err := o.fillAuth(cfg, g); err != nil {
		return err
	}
	cfg.SeparateAdmin = o.adminAddr != ""
	cfg.MergeShare = o.mergeShare
	if o.mergeShare == -1 {
		cfg.MergeShare = cfg.DeletedShare / 2
	}
	if (o.tlsCert == "") != (o.tlsKey == "") {
		return errors.New("--tls-cert and --tls-key go together")
	}
	if o.tlsCert != "" {
		c, err := server.LoadCertificate(o.tlsCert, o.tlsKey)
		if err != nil {
			return err
		}
		o.cert = c
	}
	return nil
}

// fillAuth sets the keys (or the explicit lack of them) and the audit log.
func (o *serveFlags) fillAuth(cfg *server.Config, g *globals) error {
	switch {
	case o.keys != "" && o.insecure:
		return errors.New("--keys and --insecure-no-auth: choose one")
	case o.keys == "" && !o.insecure:
		return errors.New("gleaner serve needs API keys: --keys keys.json (make one with `gleaner keys add --file keys.json --id NAME --scope read --index NAME`), or --insecure-no-auth to try it out on a loopback address")
	case o.insecure:
		cfg.InsecureNoAuth = true
	default:
		ring, err := auth.Load(o.keys)
		if err != nil {
			return fmt.Errorf("--keys: %w", err)
		}
		cfg.Keys = ring
		cfg.LoadKeys = func() (*auth.Keyring, error) { return auth.Load(o.keys) }
	}
	// Audit lines are kept whatever --log-level says: stderr by default.
	cfg.AuditLogger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	if o.auditLog != "" {
		f, err := os.OpenFile(o.auditLog, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return fmt.Errorf("--audit-log: %w", err)
		}
		if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
			f.Close()
			return fmt.Errorf("--audit-log %s: not a regular file", o.auditLog)
		}
		cfg.AuditLogger = slog.New(slog.NewJSONHandler(f, nil)) // open for the life of the process
	}
	return nil
}

// endpoint is one listener and the server on it.
type endpoint struct {
	what string
	hs   *http.Server
	ln   net.Listener
	tls  bool
}

func (e endpoint) url() string {
	if e.tls {
		return "https://" + e.ln.Addr().String()
	}
	return "http://" + e.ln.Addr().String()
}

// listen opens --addr (and --admin-addr), refusing --insecure-no-auth on
// an address other clients can reach.
func (o *serveFlags) listen(s *server.Server) ([]endpoint, error) {
	var eps []endpoint
	for _, l := range []struct{ what, addr string }{{"the API", o.addr}, {"the admin routes", o.adminAddr}} {
		if l.addr == "" {
			continue
		}
		ln, err := net.Listen("tcp", l.addr)
		if err != nil {
			closeAll(eps)
			return nil, err
		}
		if o.insecure && !isLoopback(ln.Addr()) {
			ln.Close()
			closeAll(eps)
			return nil, fmt.Errorf("--insecure-no-auth serves only on a loopback address (127.0.0.1, ::1); %s is not: give --keys", ln.Addr())
		}
		ep := endpoint{what: l.what, hs: s.HTTPServer(), tls: o.cert != nil}
		if l.what != "the API" {
			ep.hs.Handler = s.AdminHandler()
		}
		if len(o.indexes) > 0 && l.what == "the API" {
			ep.what = fmt.Sprintf("%d index(es)", len(o.indexes))
		}
		ep.ln = s.Listener(ln)
		if o.cert != nil {
			ep.ln = s.TLSListener(ln, o.cert)
		}
		eps = append(eps, ep)
	}
	return eps, nil
}

func closeAll(eps []endpoint) {
	for _, ep := range eps {
		ep.ln.Close()
	}
}

func isLoopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// serve runs until SIGTERM/SIGINT (drain, exit 0) or a listener error;
// SIGHUP calls reload.
func serve(ctx context.Context, s *server.Server, eps []endpoint, grace time.Duration, reload func() error) error {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGTERM, os.Interrupt)
	defer signal.Stop(sigs)
	errc := make(chan error, len(eps))
	for _, ep := range eps {
		go func() { errc <- ep.hs.Serve(ep.ln) }()
	}
	for {
		select {
		case err := <-errc:
			for _, ep := range eps {
				ep.hs.Close()
			}
			s.Close(context.Background())
			return err
		case sig := <-sigs:
			if sig == syscall.SIGHUP {
				if err := reload(); err != nil {
					fmt.Fprintln(os.Stderr, "gleaner: reload:", err)
				}
				continue
			}
			return drain(eps, s, grace)
		case <-ctx.Done():
			return drain(eps, s, grace)
		}
	}
}

// drain stops accepting, waits for requests in flight (up to grace) and
// releases the indexes.
// Connections still open when grace ends (a client that stalls its body,
// a request past its time) are closed: the drain ends with exit 0, as
// documented, and says how many it cut.
func drain(eps []endpoint, s *server.Server, grace time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	errs := make([]error, len(eps))
	var wg sync.WaitGroup
	for i, ep := range eps {
		wg.Go(func() { errs[i] = ep.hs.Shutdown(ctx) })
	}
	wg.Wait()
	err := errors.Join(errs...)
	if errors.Is(err, context.DeadlineExceeded) {
		fmt.Fprintf(os.Stderr, "gleaner: grace of %v over: closing the connections still open\n", grace)
		for _, ep := range eps {
			ep.hs.Close()
		}
		err = nil
	}
	closeCtx, cancelClose := context.WithTimeout(context.Background(), grace)
	defer cancelClose()
	if cerr := s.Close(closeCtx); err == nil {
		err = cerr
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// reserveProcs gives the process the Ps server.Procs asks for, unless the
// GOMAXPROCS environment variable chose them.
func reserveProcs(log *slog.Logger, cfg server.Config) {
	if os.Getenv("GOMAXPROCS") != "" {
		return
	}
	cores := runtime.GOMAXPROCS(0)
	if n := server.Procs(cores, cfg); n != cores {
		runtime.GOMAXPROCS(n)
		log.Info("a P for each write core besides the cores, so that write work on idle threads never holds a P queries need", "gomaxprocs", n, "cores", cores)
	}
}
