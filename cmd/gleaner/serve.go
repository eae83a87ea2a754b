package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/gleaner-rag/gleaner/retrieve"
	"github.com/gleaner-rag/gleaner/server"
)

func newServe(g *globals) *cobra.Command {
	var indexes []string
	var addr, profile string
	var grace time.Duration
	var sf *settingFlags
	cfg := server.DefaultConfig()
	cmd := &cobra.Command{
		Use:   "serve --index name=dir [--index name=dir ...] [--addr 127.0.0.1:8080]",
		Short: "Serve retrieval over HTTP (JSON and NDJSON streaming, /metrics, reload, graceful drain)",
		Long: `Serve the methods over the given indexes (opened read-only once, shared by all requests).

  POST /v1/retrieve     {"index", "query", "method", "k", "first_stage", "graph_kinds", "options", "stream", "timeout_ms", "text"}
  GET  /v1/indexes, /v1/methods (every method's settings), /healthz, /readyz, /metrics (Prometheus)
  POST /v1/admin/reload reopens the index folders (rebuilt in place) and swaps them in atomically

The method flags (--bmax, --model, …) set what requests start from; a request's "options" change any
setting but the local ones (--model, --runtime, --precision), which only the server sets.

At --max-in-flight requests the server answers 503 with Retry-After at once. SIGHUP reloads like
/v1/admin/reload; SIGTERM or Ctrl-C stops accepting, lets requests in flight finish within --grace, and
exits 0. The API is described in server/openapi.yaml; server/client is the Go client.`,
		Example: `  gleaner serve --index scifact=idx/scifact --index 2wiki=idx/2wiki
  curl -s localhost:8080/v1/retrieve -d '{"index":"scifact","query":"vitamin D","k":3}'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Indexes = map[string]string{}
			for _, spec := range indexes {
				name, dir, ok := strings.Cut(spec, "=")
				if !ok || name == "" || dir == "" {
					return fmt.Errorf("--index %q: want name=dir", spec)
				}
				if _, dup := cfg.Indexes[name]; dup {
					return fmt.Errorf("--index: the name %q is given twice", name)
				}
				cfg.Indexes[name] = dir
			}
			if grace <= 0 {
				return fmt.Errorf("--grace must be positive, got %v", grace)
			}
			if profile != "" {
				p, err := retrieve.ReadProfile(profile)
				if err != nil {
					return fmt.Errorf("--profile: %w", err)
				}
				cfg.Profile, sf.profile = p, p
			}
			if _, err := sf.configs(retrieve.NewConfig, retrieve.Names()); err != nil {
				return err // the server checks too; this speaks of flags
			}
			cfg.Backend, cfg.Logger, cfg.Settings = g.be, g.log, sf.overrides()
			s, err := server.New(cfg)
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				s.Close(context.Background())
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "serving %d index(es) on http://%s\n", len(cfg.Indexes), ln.Addr())
			return serve(cmd.Context(), s, ln, grace)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&indexes, "index", nil, "name=dir of an index to serve (repeatable)")
	fl.StringVar(&addr, "addr", "127.0.0.1:8080", "listen address")
	fl.StringVar(&profile, "profile", "", "a profile from gleaner tune: the method (and its settings and grouping) of requests that name none")
	fl.IntVar(&cfg.MaxInFlight, "max-in-flight", cfg.MaxInFlight, "requests served at once; more get 503 with Retry-After")
	fl.DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "longest a request may run (timeout_ms may ask less)")
	fl.DurationVar(&cfg.BodyTimeout, "body-timeout", cfg.BodyTimeout, "longest a request body may take to arrive (408 past it); read before the request takes a slot")
	fl.DurationVar(&cfg.HeaderTimeout, "header-timeout", cfg.HeaderTimeout, "longest the headers of a request may take to arrive")
	fl.DurationVar(&cfg.IdleTimeout, "idle-timeout", cfg.IdleTimeout, "longest a keep-alive connection may wait for its next request")
	fl.IntVar(&cfg.MaxConns, "max-conns", cfg.MaxConns, "open connections; at the cap a new one closes the longest-idle one")
	fl.IntVar(&cfg.Limits.MaxK, "max-k", cfg.Limits.MaxK, "largest k a request may ask")
	fl.Int64Var(&cfg.Limits.MaxBodyBytes, "max-body", cfg.Limits.MaxBodyBytes, "largest request body in bytes")
	fl.IntVar(&cfg.MaxOptionSets, "max-option-sets", cfg.MaxOptionSets, "distinct option sets kept per index and method; another evicts the least recently used")
	fl.BoolVar(&cfg.Pprof, "pprof", false, "serve /debug/pprof/")
	fl.DurationVar(&grace, "grace", 30*time.Second, "on SIGTERM, how long requests in flight may take to finish")
	sf = addSettingFlags(fl, retrieve.Methods(), "--method")
	return cmd
}

// serve runs until SIGTERM/SIGINT (drain, exit 0) or a listener error;
// SIGHUP reloads the indexes.
func serve(ctx context.Context, s *server.Server, ln net.Listener, grace time.Duration) error {
	hs := s.HTTPServer()
	ln = s.Listener(ln)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGTERM, os.Interrupt)
	defer signal.Stop(sigs)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	for {
		select {
		case err := <-errc:
			s.Close(context.Background())
			return err
		case sig := <-sigs:
			if sig == syscall.SIGHUP {
				if err := s.Reload(ctx); err != nil {
					fmt.Fprintln(os.Stderr, "gleaner: reload:", err)
				}
				continue
			}
			return drain(hs, s, grace)
		case <-ctx.Done():
			return drain(hs, s, grace)
		}
	}
}

// drain stops accepting, waits for requests in flight (up to grace) and
// releases the indexes.
// Connections still open when grace ends (a client that stalls its body,
// a request past its time) are closed: the drain ends with exit 0, as
// documented, and says how many it cut.
func drain(hs *http.Server, s *server.Server, grace time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := hs.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		fmt.Fprintf(os.Stderr, "gleaner: grace of %v over: closing the connections still open\n", grace)
		err = hs.Close()
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
