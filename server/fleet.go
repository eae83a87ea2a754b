package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gleaner-rag/gleaner/index/fleet"
	"github.com/gleaner-rag/gleaner/index/live"
	"github.com/gleaner-rag/gleaner/server/api"
	"github.com/gleaner-rag/gleaner/server/auth"
	"github.com/nats-io/nuid"
)

func (f *Fleet) validate() error {
	switch {
	case f == nil:
		return nil
	case f.Conn == nil:
		return errors.New("server: Config.Fleet.Conn is nil (fleet.Connect)")
	case f.SnapshotEvery < 0:
		return fmt.Errorf("server: fleet snapshot interval %v: want ≥ 0 (0: never)", f.SnapshotEvery)
	case f.SnapshotKeep < 1:
		return fmt.Errorf("server: fleet snapshots kept %d: want ≥ 1", f.SnapshotKeep)
	case f.Wait <= 0 || f.Wait > time.Minute:
		return fmt.Errorf("server: fleet min_seq wait %v: want > 0 and ≤ 1m", f.Wait)
	}
	return nil
}

// replica is one index's place in the fleet.
type replica struct {
	log     *fleet.Log
	rep     *fleet.Replica
	snap    atomic.Uint64 // the sequence of the last snapshot this server uploaded
	unready atomic.Bool   // it was not ready at the last /readyz
}

type fleetStats struct {
	snapshots, snapshotFailures, published, publishFailures atomic.Int64
}

// restoreMissing restores, from the fleet's newest snapshot, every index
// whose folder does not exist: a new or wiped replica.
func (s *Server) restoreMissing(ctx context.Context) error {
	if s.cfg.Fleet == nil {
		return nil
	}
	for name, dir := range s.cfg.Indexes {
		if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if _, err := os.Stat(live.LogDir(dir)); !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("server: index %q: %s does not exist but its update log %s does: move the log away too, and the server restores the fleet's newest snapshot", name, dir, live.LogDir(dir))
		}
		l, err := s.cfg.Fleet.Conn.OpenLog(ctx, name)
		if err != nil {
			return fmt.Errorf("server: index %q: %w", name, replicasHint(err))
		}
		s.cfg.Logger.Info("fleet: the index folder does not exist; restoring the fleet's newest snapshot", "index", name, "dir", dir)
		if _, err := l.Restore(ctx, dir); err != nil {
			return fmt.Errorf("server: index %q (%s): %w", name, dir, err)
		}
	}
	return nil
}

// missingLogs are the update logs (<index>.wal) a replica's start will
// make, for the indexes that have none yet.
func (s *Server) missingLogs() []string {
	if s.cfg.Fleet == nil {
		return nil
	}
	var out []string
	for _, dir := range s.cfg.Indexes {
		if _, err := os.Stat(live.LogDir(dir)); errors.Is(err, fs.ErrNotExist) {
			out = append(out, live.LogDir(dir))
		}
	}
	return out
}

// followFleet starts following each index's log (Config.Fleet), within
// fleetStartTimeout: a cluster without a quorum fails the start rather
// than hang it.
func (s *Server) followFleet(ctx context.Context) error {
	if s.cfg.Fleet == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, fleetStartTimeout)
	defer cancel()
	s.replicas = map[string]*replica{}
	s.cleanScratch()
	for name := range s.writers {
		l, err := s.cfg.Fleet.Conn.OpenLog(ctx, name)
		if err == nil {
			var r *fleet.Replica
			r, err = fleet.Follow(ctx, l, s.writers[name], fleet.DefaultFollowOptions(s.cfg.Logger))
			if errors.Is(err, fleet.ErrBehind) && s.cfg.Fleet.RestoreBehind {
				r, err = s.restoreBehind(ctx, name, l, err)
			}
			if err == nil {
				s.replicas[name] = &replica{log: l, rep: r}
				s.replicas[name].snap.Store(s.writers[name].Source())
				continue
			}
		}
		s.stopFleet()
		switch dir := s.cfg.Indexes[name]; {
		case errors.Is(err, fleet.ErrBehind):
			err = fmt.Errorf("%w (move %s and its .wal away, or start with --fleet-restore-behind: the server then restores the fleet's newest snapshot there)", err, dir)
		case errors.Is(err, fleet.ErrForeign):
			err = fmt.Errorf("%w (to serve the fleet's index instead, move %s and its .wal away: the server then restores the fleet's newest snapshot there)", err, dir)
		}
		err = replicasHint(err)
		return fmt.Errorf("server: index %q: %w", name, err)
	}
	return nil
}

// cleanScratch removes the staging copies a killed snapshot upload left
// in Config.Fleet.Scratch (when set: the system's temporary folder may
// hold another server's).
func (s *Server) cleanScratch() {
	dir := s.cfg.Fleet.Scratch
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		s.cfg.Logger.Error("fleet: the scratch folder cannot be made; snapshots will fail", "dir", dir, "err", err)
	}
	// Read, not globbed: a folder whose name holds '*' or '[' would make
	// a pattern that matches other folders.
	entries, err := os.ReadDir(dir)
	if err != nil {
		s.cfg.Logger.Error("fleet: the scratch folder cannot be read; staging copies a stopped server left stay", "dir", dir, "err", err)
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "gleaner-snapshot-") && !strings.HasPrefix(e.Name(), "gleaner-fingerprint-") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if err := os.RemoveAll(p); err == nil {
			s.cfg.Logger.Info("fleet: removed a snapshot's staging copy left by a stopped server", "path", p)
		}
	}
}

// fleetStartTimeout bounds how long a start waits for the NATS cluster.
const fleetStartTimeout = 2 * time.Minute

// restoreBehind replaces index name, whose next batch the log no longer
// holds (behind), with the fleet's newest snapshot: the writer is closed,
// the folder and its update log are moved aside (kept, named
// <dir>.behind-<time>), the snapshot restored in their place, served, and
// followed.
func (s *Server) restoreBehind(ctx context.Context, name string, l *fleet.Log, behind error) (*fleet.Replica, error) {
	dir := s.cfg.Indexes[name]
	s.cfg.Logger.Warn("fleet: the index is behind the log; restoring the newest snapshot (--fleet-restore-behind)", "index", name, "why", behind)
	if err := s.writers[name].Close(); err != nil {
		return nil, fmt.Errorf("closing the index behind the log: %w", err)
	}
	aside := fmt.Sprintf("%s.behind-%d", dir, time.Now().Unix())
	for _, p := range [][2]string{{dir, aside}, {live.LogDir(dir), live.LogDir(aside)}} {
		if err := os.Rename(p[0], p[1]); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("moving %s aside: %w", p[0], err)
		}
	}
	s.cfg.Logger.Info("fleet: moved the index behind the log aside", "index", name, "to", aside)
	if _, err := l.Restore(ctx, dir); err != nil {
		return nil, err
	}
	w, err := s.openWriter(ctx, name, dir)
	if err != nil {
		return nil, err
	}
	s.writers[name] = w
	s.publish(name, w.Index())
	return fleet.Follow(ctx, l, w, fleet.DefaultFollowOptions(s.cfg.Logger))
}

// replicasHint names the flag when the cluster has fewer nodes than the
// replicas asked for (NATS says it in its own words).
func replicasHint(err error) error {
	if msg := err.Error(); strings.Contains(msg, "replicas > 1 not supported") || strings.Contains(msg, "insufficient resources") || strings.Contains(msg, "no suitable peers") {
		return fmt.Errorf("%w (is --fleet-replicas more than the NATS cluster's nodes? a lone NATS server takes --fleet-replicas 1)", err)
	}
	return err
}

// stopFleet stops following (the writers stay open).
func (s *Server) stopFleet() {
	if s.snapDone != nil {
		<-s.snapDone
		s.snapDone = nil
	}
	for _, r := range s.replicas {
		r.rep.Close()
	}
}

// stoppedReplica reports whether an index is not ready to serve
// (fleet.Replica.Ready: catching up, failing, stopped); the log says
// why, once per change of reason.
func (s *Server) stoppedReplica() bool {
	for name, r := range s.replicas {
		err := r.rep.Ready()
		// Logged when readiness flips, not at every probe.
		if was := r.unready.Swap(err != nil); was != (err != nil) {
			if err != nil {
				s.cfg.Logger.Warn("fleet: not ready", "index", name, "why", err)
			} else {
				s.cfg.Logger.Info("fleet: ready", "index", name, "applied", r.rep.Applied())
			}
		}
		if err != nil {
			return true
		}
	}
	return false
}

// readyAt answers /readyz?index=NAME[&min_seq=N]: ready only once the
// index has applied batch N (a load balancer may hold a replica back
// until it caught up), and then it says the last batch the index
// applied. It reports whether the request may go on (nothing answered).
func (s *Server) readyAt(w http.ResponseWriter, r *http.Request) bool {
	name, raw := r.URL.Query().Get("index"), r.URL.Query().Get("min_seq")
	if name == "" && raw == "" {
		return true
	}
	if raw == "" {
		raw = "0"
	}
	seq, err := strconv.ParseUint(raw, 10, 64)
	if err != nil || name == "" {
		writeError(w, http.StatusBadRequest, &FieldError{"min_seq", "give index=NAME, and min_seq=N (a sequence, ≥ 0) to wait for a write"})
		return false
	}
	applied, ok := s.appliedSeq(name)
	if ok && applied >= seq {
		fmt.Fprintf(w, "ready\napplied %d\n", applied)
		return false
	}
	// The same answer for an unknown index: /readyz needs no key.
	w.Header().Set("Retry-After", "1")
	writeError(w, http.StatusServiceUnavailable, &FieldError{Msg: "not ready: the index has not applied that sequence"})
	return false
}

// appliedSeq is the last batch of its log index name has applied: the
// fleet's sequence, or the local update log's record.
func (s *Server) appliedSeq(name string) (uint64, bool) {
	if r, ok := s.replicas[name]; ok {
		return r.rep.Applied(), true
	}
	if w, ok := s.writers[name]; ok {
		return w.Stats().Seq, true
	}
	_, served := s.cfg.Indexes[name] // read-only: no write applied, ever
	return 0, served
}

// waitSeq waits, within the fleet's bound and the request's limit, until
// index name has applied batch seq (a request's min_seq). It answers the
// status to return when it has not.
func (s *Server) waitSeq(ctx context.Context, name string, seq uint64, limit time.Duration) (int, error) {
	if seq == 0 {
		return 0, nil
	}
	if s.writers == nil {
		return http.StatusBadRequest, &FieldError{"min_seq", "this server takes no writes (start it with --writes or --fleet)"}
	}
	if applied, ok := s.appliedSeq(name); ok && applied >= seq {
		return 0, nil
	}
	r, ok := s.replicas[name]
	if !ok { // a lone server applies a write before it acknowledges it
		return http.StatusServiceUnavailable, &FieldError{"min_seq", "the index has not applied that sequence (a sequence of another server?)"}
	}
	wctx, cancel := context.WithTimeout(ctx, min(s.cfg.Fleet.Wait, limit))
	defer cancel()
	if _, err := r.rep.Wait(wctx, seq); err != nil {
		if ctx.Err() != nil {
			return 499, ctx.Err()
		}
		return http.StatusServiceUnavailable, &FieldError{"min_seq", fmt.Sprintf("this replica has applied up to %d, not yet %d; retry", r.rep.Applied(), seq)}
	}
	return 0, nil
}

// publishWrite publishes b to the index's log and waits, within ctx, for
// this replica to apply it, so that the answer carries the batch's
// outcome (a refusal, as a lone server would give it). A batch stored in
// the log but not applied here within ctx is answered 202: it will be.
// id is the message id (messageID).
func (s *Server) publishWrite(ctx context.Context, name, id string, b *live.Batch) (res live.Result, applied, duplicate bool, err error) {
	r := s.replicas[name]
	ack, err := r.log.PublishID(ctx, b, id)
	if err != nil {
		s.fleetStats.publishFailures.Add(1)
		return live.Result{}, false, false, err
	}
	s.fleetStats.published.Add(1)
	res = live.Result{Seq: ack.Seq}
	if !ack.Duplicate && ack.Seq <= r.rep.Applied() {
		// Taken already: applied before the acknowledgement came back, or
		// the stream is not the log this replica follows (deleted and made
		// again, numbering from 1): the log's identity tells.
		if _, _, err := r.log.Bounds(ctx); err != nil {
			return res, false, false, err
		}
	}
	refusal, werr := r.rep.Wait(ctx, ack.Seq)
	if werr != nil {
		return res, false, ack.Duplicate, nil // stored; applied later
	}
	res.Nodes = s.writers[name].Index().Live()
	return res, true, ack.Duplicate, refusal
}

// snapshotEvery uploads a snapshot of each index that changed since its
// last, and trims the log behind the oldest kept, until stop.
func (s *Server) snapshotEvery(every time.Duration, stop <-chan struct{}) {
	defer close(s.snapDone)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-stop
		cancel()
	}()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if err := s.Snapshot(ctx); err != nil {
				s.cfg.Logger.Error("fleet: snapshot failed; the next one retries", "err", err)
			}
		}
	}
}

// Snapshot uploads a snapshot of each index that changed since this
// server's last, then trims each log behind the oldest snapshot kept
// (Config.Fleet.SnapshotKeep). Config.Fleet.SnapshotEvery calls it.
func (s *Server) Snapshot(ctx context.Context) error {
	var errs []error
	for name, r := range s.replicas {
		w := s.writers[name]
		if w.Source() == r.snap.Load() {
			continue
		}
		snap, err := r.log.PutSnapshot(ctx, w, s.cfg.Fleet.Scratch)
		if err == nil {
			r.snap.Store(snap.Seq)
			_, err = r.log.Trim(ctx, s.cfg.Fleet.SnapshotKeep)
		}
		if err != nil {
			s.fleetStats.snapshotFailures.Add(1)
			errs = append(errs, fmt.Errorf("index %q: %w", name, err))
			continue
		}
		s.fleetStats.snapshots.Add(1)
	}
	return errors.Join(errs...)
}

// fleetWrite publishes a write to the fleet's log and answers it: with
// this replica's outcome once applied here, 202 when the log stored it
// but this replica has not applied it within the request's time, 504
// when the log did not acknowledge it in time (it may still have stored
// it: a retry with the same Idempotency-Key is stored at most once).
func (s *Server) fleetWrite(ctx context.Context, w http.ResponseWriter, r *http.Request, lw *live.Writer, op, name string, b *live.Batch, start time.Time) {
	key := r.Header.Get("Idempotency-Key")
	if err := checkIdempotencyKey(key); err != nil {
		s.answerWrite(w, op, name, 0, nil, err)
		return
	}
	if err := lw.CheckNew(b); err != nil { // the replicas apply what the log holds as it is
		s.answerWrite(w, op, name, 0, nil, err)
		return
	}
	if key == "" {
		key = nuid.Next()
	}
	w.Header().Set("Idempotency-Key", key)
	id, err := messageID(KeyOf(r.Context()), name, key, b) // before the vectors, which depend on the replica
	if err != nil {
		s.answerWrite(w, op, name, 0, nil, err)
		return
	}
	s.writeWork(func() { err = lw.Embed(ctx, b) }) // the log carries the vectors: every replica applies the same
	if err != nil {
		s.answerWrite(w, op, name, 0, nil, err)
		return
	}
	res, applied, dup, err := s.publishWrite(ctx, name, id, b)
	s.metrics.writeLatency.WithLabelValues(op).Observe(time.Since(start).Seconds())
	switch {
	case err != nil && errors.Is(err, context.DeadlineExceeded) && r.Context().Err() == nil:
		s.metrics.writes.WithLabelValues(op, strconv.Itoa(http.StatusGatewayTimeout)).Inc()
		writeError(w, http.StatusGatewayTimeout, &FieldError{Msg: "the fleet's log did not acknowledge the write in time; it may have stored it: retry with the same Idempotency-Key header (" + key + ") and it is stored at most once"})
	case err == nil && !applied:
		s.metrics.writes.WithLabelValues(op, strconv.Itoa(http.StatusAccepted)).Inc()
		writeJSON(w, http.StatusAccepted, api.WriteResponse{Index: name, Seq: res.Seq, Changes: b.Len(), Pending: true, Duplicate: dup})
	case err == nil && dup:
		s.metrics.writes.WithLabelValues(op, "200").Inc()
		writeJSON(w, http.StatusOK, api.WriteResponse{Index: name, Seq: res.Seq, Nodes: res.Nodes, Changes: b.Len(), Duplicate: true})
	default:
		s.answerWrite(w, op, name, b.Len(), &res, err)
	}
}

// messageID is the log's message id of a write: the same key's retry of
// the same batch, within the log's dedup window, is stored once; another
// key's, or another batch under the same key, is another write.
func messageID(k *auth.Key, index, idem string, b *live.Batch) (string, error) {
	payload, err := b.MarshalBinary()
	if err != nil { // hashing nothing instead would give other batches this id
		return "", fmt.Errorf("fleet: encoding the batch: %w", err)
	}
	h := sha256.New()
	if k != nil {
		h.Write([]byte(k.ID))
	}
	for _, part := range [][]byte{[]byte(index), []byte(idem), payload} {
		h.Write([]byte{0})
		h.Write(part)
	}
	return hex.EncodeToString(h.Sum(nil))[:40], nil
}

// checkIdempotencyKey refuses an Idempotency-Key header that is not a
// short printable token.
func checkIdempotencyKey(k string) error {
	if len(k) > 128 {
		return &FieldError{"Idempotency-Key", fmt.Sprintf("%d bytes, over 128", len(k))}
	}
	for _, c := range k {
		if c <= ' ' || c > '~' {
			return &FieldError{"Idempotency-Key", "printable ASCII without spaces only"}
		}
	}
	return nil
}
