package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/gleaner-rag/gleaner/index/fleet"
	"github.com/gleaner-rag/gleaner/server"
	"github.com/spf13/pflag"
)

// fleetFlags are serve's flags for a replica of a fleet.
type fleetFlags struct {
	urls, creds, ca, cert, key string
	replicas, keep             int
	every, wait, timeout       time.Duration
	scratch                    string
	restoreBehind              bool
}

func (f *fleetFlags) flags(fl *pflag.FlagSet) {
	fl.StringVar(&f.urls, "fleet", "", "serve as a replica of a fleet: the NATS cluster's URLs (nats://host:4222,… or tls://…); every index follows its update log there, and with --writes the write endpoints publish to it (docs/fleet.md); an index folder that does not exist is restored from the fleet's newest snapshot")
	fl.StringVar(&f.creds, "fleet-creds", "", "with --fleet: a NATS credentials file")
	fl.StringVar(&f.ca, "fleet-ca", "", "with --fleet: PEM CA of the NATS servers' certificates")
	fl.StringVar(&f.cert, "fleet-cert", "", "with --fleet: PEM client certificate for NATS (with --fleet-key)")
	fl.StringVar(&f.key, "fleet-key", "", "with --fleet: PEM private key of --fleet-cert")
	fl.IntVar(&f.replicas, "fleet-replicas", 3, "with --fleet: replication factor of the logs and snapshot stores this server creates (1 to 5; at most the NATS nodes: 1 for a lone NATS server)")
	fl.DurationVar(&f.every, "fleet-snapshot-every", 10*time.Minute, "with --fleet: upload a snapshot of each changed index this often, and trim the log behind the oldest of --fleet-snapshot-keep (0: never; one replica of a fleet needs it). A replica down for longer than about keep × this must restore a snapshot (--fleet-restore-behind): make it longer than the outages you expect")
	fl.IntVar(&f.keep, "fleet-snapshot-keep", 2, "with --fleet: snapshots kept per index")
	fl.DurationVar(&f.wait, "fleet-wait", time.Second, "with --fleet: longest a request with min_seq waits for this replica to apply that write (then 503 with Retry-After)")
	fl.DurationVar(&f.timeout, "fleet-timeout", 10*time.Second, "with --fleet: longest one request to the NATS cluster may take before it is retried")
	fl.BoolVar(&f.restoreBehind, "fleet-restore-behind", false, "with --fleet: an index further behind than the log keeps is moved aside (<dir>.behind-<time>, kept) at start and the fleet's newest snapshot restored in its place (default: the start fails, saying so)")
	fl.StringVar(&f.scratch, "fleet-scratch", "", "with --fleet: folder snapshots are written to before upload, one per server: a start removes what a killed upload left there (default: the system's temporary folder, not cleaned)")
}

// check refuses a --fleet-* flag given without --fleet (it would do
// nothing).
func (f *fleetFlags) check(fl *pflag.FlagSet) error {
	if f.urls != "" {
		switch {
		case f.replicas < 1 || f.replicas > 5:
			return fmt.Errorf("--fleet-replicas %d: want 1 to 5 (at most the NATS cluster's nodes; 1 for a lone server)", f.replicas)
		case (f.cert == "") != (f.key == ""):
			return fmt.Errorf("--fleet-cert and --fleet-key go together")
		case f.keep < 1:
			return fmt.Errorf("--fleet-snapshot-keep %d: want ≥ 1", f.keep)
		case f.wait <= 0 || f.wait > time.Minute:
			return fmt.Errorf("--fleet-wait %v: want > 0 and ≤ 1m", f.wait)
		case f.every < 0:
			return fmt.Errorf("--fleet-snapshot-every %v: want ≥ 0 (0: never)", f.every)
		case f.timeout <= 0:
			return fmt.Errorf("--fleet-timeout %v: want > 0", f.timeout)
		}
		return nil
	}
	var err error
	fl.Visit(func(x *pflag.Flag) {
		if err == nil && strings.HasPrefix(x.Name, "fleet-") {
			err = fmt.Errorf("--%s needs --fleet (the NATS cluster's URLs)", x.Name)
		}
	})
	return err
}

// connect connects to the fleet's cluster and sets cfg.Fleet.
func (f *fleetFlags) connect(ctx context.Context, log *slog.Logger, cfg *server.Config) (*fleet.Conn, error) {
	c := fleet.DefaultConfig(f.urls, log)
	c.CredsFile, c.CAFile, c.CertFile, c.KeyFile = f.creds, f.ca, f.cert, f.key
	c.Replicas, c.Timeout, c.Name = f.replicas, f.timeout, "gleaner serve"
	conn, err := fleet.Connect(ctx, c)
	if err != nil {
		return nil, err
	}
	fl := server.DefaultFleet(conn)
	fl.SnapshotEvery, fl.SnapshotKeep, fl.Wait, fl.Scratch, fl.RestoreBehind = f.every, f.keep, f.wait, f.scratch, f.restoreBehind
	cfg.Fleet = fl
	return conn, nil
}
