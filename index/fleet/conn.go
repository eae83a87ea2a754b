// Package fleet keeps many replicas of one index identical under writes.
//
// Every write goes through an ordered, replicated log: a NATS JetStream
// stream per index. Publish acknowledges a batch once the stream has
// stored it (on a majority of the stream's replicas: JetStream's Raft
// acknowledges at quorum). Each replica follows the stream (Follow) and
// applies its batches in order to its own live index (index/live),
// numbered by their stream sequence (live.Batch.SetSource): a replica
// restarted or cut off resumes after the last batch its index took, and
// a batch is applied once. Every replica decides every batch alike: a
// batch the checks refuse (an add of a document that exists) is refused
// everywhere, from the same state.
//
// Snapshots: a replica uploads its index, verified and numbered, to the
// stream's object store (PutSnapshot); a new or wiped replica restores the
// newest snapshot that verifies (Restore) and follows the stream from its
// number. Trim drops the log behind the oldest snapshot kept.
//
// docs/fleet.md says how to deploy it and what happens on each failure.
package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Config says how to reach the NATS cluster.
type Config struct {
	// URLs is one or more nats:// (or tls://) URLs, comma-separated.
	URLs string
	// CredsFile is a NATS credentials file (JWT and seed); "" for none.
	CredsFile string
	// CAFile, CertFile and KeyFile configure TLS: the CA that signed the
	// servers' certificates, and a client certificate with its key
	// (both or neither). "" for none.
	CAFile, CertFile, KeyFile string
	// Name names this connection in the servers' monitoring.
	Name string
	// Replicas is the replication factor of the streams and object
	// stores this connection creates: 1 to 5 (3 for a 3-node cluster).
	Replicas int
	// Timeout bounds each request to the cluster (> 0).
	Timeout time.Duration
	// Logger is required.
	Logger *slog.Logger
	// Extra are more connection options, applied last (a test keeps a
	// replica from finding other nodes: nats.IgnoreDiscoveredServers).
	Extra []nats.Option
}

// DefaultConfig is a configuration for the cluster at urls with a
// replication factor of 3.
func DefaultConfig(urls string, log *slog.Logger) Config {
	return Config{URLs: urls, Name: "gleaner", Replicas: 3, Timeout: 10 * time.Second, Logger: log}
}

func (c *Config) validate() error {
	switch {
	case c.Logger == nil:
		return fmt.Errorf("fleet: Config.Logger is required")
	case strings.TrimSpace(c.URLs) == "":
		return fmt.Errorf("fleet: Config.URLs is empty: give the NATS cluster's nats:// URLs")
	case c.Replicas < 1 || c.Replicas > 5:
		return fmt.Errorf("fleet: Config.Replicas %d: want 1 to 5 (JetStream's limit)", c.Replicas)
	case c.Timeout <= 0:
		return fmt.Errorf("fleet: Config.Timeout %v: want > 0", c.Timeout)
	case (c.CertFile == "") != (c.KeyFile == ""):
		return fmt.Errorf("fleet: a client certificate needs both Config.CertFile and Config.KeyFile")
	}
	for _, u := range strings.Split(c.URLs, ",") {
		u = strings.TrimSpace(u)
		if !strings.HasPrefix(u, "nats://") && !strings.HasPrefix(u, "tls://") {
			return fmt.Errorf("fleet: URL %q: want nats://host:port or tls://host:port", u)
		}
	}
	return nil
}

// Conn is a connection to the cluster. It is safe for concurrent use.
type Conn struct {
	nc  *nats.Conn
	js  jetstream.JetStream
	cfg Config
	log *slog.Logger
}

// Connect connects to the cluster; the connection reconnects by itself
// for as long as it is open.
func Connect(ctx context.Context, c Config) (*Conn, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	opts := []nats.Option{nats.Name(c.Name), nats.Timeout(c.Timeout), nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond), nats.RetryOnFailedConnect(false),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				c.Logger.Warn("fleet: disconnected from NATS; reconnecting", "err", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) { c.Logger.Info("fleet: reconnected to NATS", "url", nc.ConnectedUrlRedacted()) }),
	}
	if c.CredsFile != "" {
		opts = append(opts, nats.UserCredentials(c.CredsFile))
	}
	if c.CAFile != "" {
		opts = append(opts, nats.RootCAs(c.CAFile))
	}
	if c.CertFile != "" {
		opts = append(opts, nats.ClientCert(c.CertFile, c.KeyFile))
	}
	nc, err := nats.Connect(c.URLs, append(opts, c.Extra...)...)
	if err != nil {
		return nil, fmt.Errorf("fleet: connecting to %s: %w", c.URLs, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("fleet: %w", err)
	}
	return &Conn{nc: nc, js: js, cfg: c, log: c.Logger}, nil
}

// Close closes the connection.
func (c *Conn) Close() { c.nc.Close() }

// MaxPayload is the largest batch the cluster accepts, in bytes.
func (c *Conn) MaxPayload() int64 { return c.nc.MaxPayload() }

// streamName is the stream of the index name: stream names may not hold
// '.', which index names may, so '_' is doubled and '.' written "_d".
func streamName(index string) string {
	r := strings.NewReplacer("_", "__", ".", "_d")
	return "GLEANER_" + r.Replace(index)
}

// subject is the subject the index's batches are published on.
func subject(index string) string { return "gleaner.update." + streamName(index) }

// bucketName is the object store of the index's snapshots.
func bucketName(index string) string { return streamName(index) + "_snapshots" }

// retry runs f, each attempt bounded by the configured timeout, until
// it succeeds, fails for a reason retrying cannot mend, or ctx ends: a
// cluster electing a leader (a node killed) answers "no responders" or
// nothing for a moment.
func (c *Conn) retry(ctx context.Context, what string, f func(context.Context) error) error {
	wait := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
		err := f(actx)
		cancel()
		if err == nil || ctx.Err() == nil && !transient(err) {
			return err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w (last error: %v)", what, ctx.Err(), err)
		}
		if attempt == 3 {
			c.log.Warn("fleet: the cluster does not answer; retrying", "what", what, "err", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w (last error: %v)", what, ctx.Err(), err)
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// retryTransfer runs f, a transfer of about bytes (a snapshot), up to
// three times while it fails for a reason that may pass. Each attempt
// may take a minute plus a second per 4 MB (the client would otherwise
// bound the whole transfer by its 5 s request timeout).
func (c *Conn) retryTransfer(ctx context.Context, what string, bytes int64, f func(context.Context) error) error {
	var err error
	limit := time.Minute + time.Duration(bytes/(4<<20))*time.Second
	for attempt := 1; attempt <= 3; attempt++ {
		actx, cancel := context.WithTimeout(ctx, limit)
		err = f(actx)
		cancel()
		if err == nil || ctx.Err() != nil || !transient(err) {
			return err
		}
		c.log.Warn("fleet: a transfer failed; retrying", "what", what, "attempt", attempt, "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(attempt) * time.Second):
		}
	}
	return err
}

// transient reports whether err may pass by itself (a leader election, a
// reconnect, an attempt's timeout).
func transient(err error) bool {
	return errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, nats.ErrConnectionReconnecting) || errors.Is(err, nats.ErrDisconnected) ||
		errors.Is(err, jetstream.ErrNoHeartbeat) || isUnavailable(err)
}

// isUnavailable: JetStream answered that it cannot serve now (no quorum,
// no leader yet).
func isUnavailable(err error) bool {
	var api *jetstream.APIError
	if errors.As(err, &api) {
		d := strings.ToLower(api.Description)
		return api.Code == 503 || strings.Contains(d, "unavailable") || strings.Contains(d, "no suitable peers")
	}
	return false
}
