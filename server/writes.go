package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/index/fleet"
	"github.com/gleaner-rag/gleaner/index/live"
	"github.com/gleaner-rag/gleaner/internal/excerpt"
	"github.com/gleaner-rag/gleaner/internal/parallel"
	"github.com/gleaner-rag/gleaner/server/api"
)

// maxChanges bounds the changes of one documents request.
const maxChanges = 10000

// openWriters opens every index for live updates (Config.Writes); each
// publishes its new indexes into the served set.
func (s *Server) openWriters(ctx context.Context) error {
	s.writers = map[string]*live.Writer{}
	s.writeCPU = live.NewGate(s.cfg.WriteCores)
	for name, dir := range s.cfg.Indexes {
		w, err := s.openWriter(ctx, name, dir)
		if err != nil {
			s.closeWriters()
			return err
		}
		s.writers[name] = w
	}
	return nil
}

// openWriter opens index name at dir for live updates.
func (s *Server) openWriter(ctx context.Context, name, dir string) (*live.Writer, error) {
	o := live.DefaultOptions(s.cfg.Logger)
	o.CheckpointBytes = s.cfg.CheckpointBytes
	o.OpenOptions.Copy = s.cfg.IndexMemory == MemoryCopy
	o.OnPublish = func(ix *index.Index) { s.publish(name, ix) }
	o.RefreshAfter, o.RefreshWithin, o.Refresh.Backend = s.cfg.RefreshAfter, s.cfg.RefreshWithin, s.cfg.Backend
	o.Refresh.Workers = 1 // a background refresh leaves the other cores to queries
	o.MinInterval, o.ApplyShare, o.CPU, o.IdleThreads = s.cfg.CommitInterval, s.cfg.ApplyShare, s.writeCPU, s.cfg.WriteIdle
	o.DeletedShare, o.MergeShare = s.cfg.DeletedShare, s.cfg.MergeShare
	w, err := live.Open(ctx, dir, o)
	if err != nil {
		return nil, fmt.Errorf("server: index %q: opening it for writes: %w", name, err)
	}
	return w, nil
}

// LiveStats describes the live writer of index name (Config.Writes).
func (s *Server) LiveStats(name string) (live.Stats, bool) {
	w, ok := s.writers[name]
	if !ok {
		return live.Stats{}, false
	}
	return w.Stats(), true
}

// closeWriters closes the writers (each folds its log into its index).
func (s *Server) closeWriters() error {
	var errs []error
	for name, w := range s.writers {
		if err := w.Close(); err != nil {
			errs = append(errs, fmt.Errorf("index %q: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// publish serves ix as index name from now on: the next request sees it.
// It runs before the commit that made ix is acknowledged.
func (s *Server) publish(name string, ix *index.Index) {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	old := s.set.Load()
	if old == nil {
		return // closing
	}
	set := s.track(old.with(name, s.newEntry(ix, false)))
	s.set.Store(set)
	go old.retire(context.Background())
}

// writeRequest is what the write handlers share: the index's writer, the
// key's right to write, the body.
func (s *Server) writeRequest(w http.ResponseWriter, r *http.Request, op string) (*live.Writer, string, []byte, bool) {
	name := r.PathValue("index")
	fail := func(code int, err error) (*live.Writer, string, []byte, bool) {
		s.metrics.writes.WithLabelValues(op, strconv.Itoa(code)).Inc()
		writeError(w, code, err)
		return nil, "", nil, false
	}
	if !s.cfg.Writes {
		return fail(http.StatusForbidden, &FieldError{Msg: "writes are disabled on this server (start it with --writes)"})
	}
	if !mayUse(r.Context(), name) {
		s.metrics.authRefused.WithLabelValues("index").Inc()
		return fail(http.StatusForbidden, &FieldError{"index", "this key may not use that index"})
	}
	if k := KeyOf(r.Context()); k != nil && len(k.Groups) > 0 {
		s.metrics.authRefused.WithLabelValues("groups").Inc()
		return fail(http.StatusForbidden, &FieldError{Msg: "keys with ACL groups may not write: they could publish passages to groups they are not in"})
	}
	lw, ok := s.writers[name]
	if !ok {
		return fail(http.StatusNotFound, &FieldError{"index", "unknown index " + clip(strconv.Quote(name))})
	}
	body, err := s.readLimited(w, r, s.cfg.Limits.MaxWriteBytes)
	if err != nil {
		code := http.StatusBadRequest
		var fe *FieldError
		switch {
		case errors.As(err, &fe) && fe.Field == "timeout":
			code, fe.Field = http.StatusRequestTimeout, ""
		case errors.As(err, &fe) && strings.HasPrefix(fe.Msg, "a body over"):
			code = http.StatusRequestEntityTooLarge
		}
		return fail(code, err)
	}
	return lw, name, body, true
}

// putDocument adds or replaces one document.
func (s *Server) putDocument(w http.ResponseWriter, r *http.Request) {
	lw, name, body, ok := s.writeRequest(w, r, "put")
	if !ok {
		return
	}
	var d api.Document
	var doc live.Document
	var err error
	s.writeWork(func() {
		if err = decodeStrict(body, &d); err == nil {
			doc, err = liveDocument(r.PathValue("id"), &d, lw.Index().Meta.Dims)
		}
	})
	if err != nil {
		s.answerWrite(w, "put", name, 0, nil, err)
		return
	}
	var b live.Batch
	b.Replace(doc)
	s.commit(w, r, lw, "put", name, &b)
}

// deleteDocument deletes one document.
func (s *Server) deleteDocument(w http.ResponseWriter, r *http.Request) {
	lw, name, _, ok := s.writeRequest(w, r, "delete")
	if !ok {
		return
	}
	id := r.PathValue("id")
	if err := checkName("id", id, false); err != nil {
		s.answerWrite(w, "delete", name, 0, nil, err)
		return
	}
	var b live.Batch
	b.Delete(id)
	s.commit(w, r, lw, "delete", name, &b)
}

// postDocuments commits a batch of changes, all or none.
func (s *Server) postDocuments(w http.ResponseWriter, r *http.Request) {
	lw, name, body, ok := s.writeRequest(w, r, "batch")
	if !ok {
		return
	}
	b, err := s.decodeBatch(body, lw.Index().Meta.Dims)
	if err != nil {
		s.answerWrite(w, "batch", name, 0, nil, err)
		return
	}
	s.commit(w, r, lw, "batch", name, b)
}

// decodeBatch decodes a batch request's body into a batch, holding a
// place among the write cores (Config.WriteCores).
func (s *Server) decodeBatch(body []byte, dims int) (b *live.Batch, err error) {
	s.writeWork(func() {
		var req api.DocumentsRequest
		if err = decodeStrict(body, &req); err == nil {
			b, err = liveBatch(&req, dims)
		}
	})
	return b, err
}

// writeWork runs fn holding a place among the write cores
// (Config.WriteCores), on an idle thread with Config.WriteIdle.
func (s *Server) writeWork(fn func()) {
	s.writeCPU.Enter()
	defer s.writeCPU.Leave()
	parallel.Run(s.cfg.WriteIdle, fn)
}

// Procs is the GOMAXPROCS a process serving cfg on cores cores should
// run with: with live indexes (writes, or a fleet replica following its
// log) on idle threads (Config.WriteIdle), one P for each write core
// besides the cores. The kernel may hold an idle thread off its core
// while it keeps its P, which queries would otherwise miss; the extra Ps
// leave every core's P to queries. With no bound on the write cores
// (WriteCores 0) it adds none, and it never adds more than
// maxWriteCores.
func Procs(cores int, cfg Config) int {
	if cfg.live() && cfg.WriteIdle && cfg.WriteCores > 0 {
		return cores + min(cfg.WriteCores, maxWriteCores)
	}
	return cores
}

// commit commits b within the request's time and answers.
func (s *Server) commit(w http.ResponseWriter, r *http.Request, lw *live.Writer, op, name string, b *live.Batch) {
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	start := time.Now()
	if s.replicas != nil {
		s.fleetWrite(ctx, w, r, lw, op, name, b, start)
		return
	}
	res, err := lw.Commit(ctx, b)
	s.metrics.writeLatency.WithLabelValues(op).Observe(time.Since(start).Seconds())
	s.answerWrite(w, op, name, b.Len(), &res, err)
}

// answerWrite maps a write's outcome to a status and answers it.
func (s *Server) answerWrite(w http.ResponseWriter, op, name string, n int, res *live.Result, err error) {
	code := http.StatusOK
	var fe *FieldError
	switch {
	case err == nil:
	case errors.Is(err, live.ErrExists):
		code = http.StatusConflict
	case errors.Is(err, live.ErrTooLarge):
		code = http.StatusRequestEntityTooLarge
	case errors.Is(err, live.ErrNotFound):
		code = http.StatusNotFound
	case errors.Is(err, live.ErrClosed) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, fleet.ErrForeign):
		code = http.StatusServiceUnavailable
		w.Header().Set("Retry-After", "1")
	case errors.Is(err, context.Canceled):
		code = 499 // the client went away; nobody reads this
	case errors.As(err, &fe) || errors.Is(err, errBadDocument) || live.IsInvalid(err):
		code = http.StatusBadRequest
	default:
		code = http.StatusInternalServerError
		s.cfg.Logger.Error("write failed", "index", name, "op", op, "err", err)
	}
	s.metrics.writes.WithLabelValues(op, strconv.Itoa(code)).Inc()
	if err != nil {
		writeError(w, code, err)
		return
	}
	writeJSON(w, code, api.WriteResponse{Index: name, Seq: res.Seq, Nodes: res.Nodes, Changes: n})
}

// maxName bounds ids, edge kinds and relations: errors quote them, and an
// error never echoes more than a short excerpt of a request.
const maxName = 1024

// checkName refuses a name that is empty (unless allowed), over maxName
// bytes or not UTF-8.
func checkName(field, v string, empty bool) error {
	switch {
	case v == "" && !empty:
		return &FieldError{field, "empty"}
	case len(v) > maxName:
		return &FieldError{field, fmt.Sprintf("%d bytes, over %d", len(v), maxName)}
	case !utf8.ValidString(v):
		return &FieldError{field, "not valid UTF-8"}
	}
	return nil
}

// errBadDocument marks a document the request describes wrongly.
var errBadDocument = errors.New("bad document")

// decodeStrict decodes one JSON value, refusing unknown fields, invalid
// UTF-8 and trailing data.
func decodeStrict(body []byte, v any) error {
	if !utf8.Valid(body) {
		return &FieldError{Msg: fmt.Sprintf("the body is not valid UTF-8 (at byte %d)", excerpt.InvalidUTF8At(body))}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &FieldError{Msg: "the body: " + err.Error()}
	}
	if dec.More() {
		return &FieldError{Msg: "trailing data after the JSON object"}
	}
	return nil
}

// liveBatch turns a documents request into a batch.
func liveBatch(req *api.DocumentsRequest, dims int) (*live.Batch, error) {
	if len(req.Changes) == 0 || len(req.Changes) > maxChanges {
		return nil, &FieldError{"changes", fmt.Sprintf("%d changes: want 1 to %d", len(req.Changes), maxChanges)}
	}
	var b live.Batch
	for i := range req.Changes {
		c := &req.Changes[i]
		field := fmt.Sprintf("changes[%d]", i)
		if c.Op == "delete" {
			if !emptyDocument(&c.Document) {
				return nil, &FieldError{field, "a delete carries no content"}
			}
			if err := checkName(field+".id", c.ID, false); err != nil {
				return nil, err
			}
			b.Delete(c.ID)
			continue
		}
		d, err := liveDocument(c.ID, &c.Document, dims)
		if fe := (*FieldError)(nil); errors.As(err, &fe) && fe.Field != "" {
			return nil, &FieldError{field + "." + fe.Field, fe.Msg} // the field's whole path in the request
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		switch c.Op {
		case "add":
			b.Add(d)
		case "replace":
			b.Replace(d)
		default:
			return nil, &FieldError{field + ".op", fmt.Sprintf("%q: want add, replace or delete", c.Op)}
		}
	}
	return &b, nil
}

func emptyDocument(d *api.Document) bool {
	return d.Title == "" && d.Text == "" && d.Type == "" && d.Aliases == nil && d.Meta == nil && d.Nodes == nil && d.Edges == nil && d.Vectors == nil
}

// liveDocument turns a request's document into the writer's.
func liveDocument(id string, d *api.Document, dims int) (live.Document, error) {
	bad := func(field, msg string) (live.Document, error) {
		return live.Document{}, fmt.Errorf("%w: field %s: %s", errBadDocument, field, msg)
	}
	if err := checkName("id", id, false); err != nil {
		return live.Document{}, err
	}
	out := live.Document{ID: id}
	if len(d.Nodes) == 0 {
		out.Nodes = []corpus.Node{{ID: id, Title: d.Title, Text: d.Text, Type: d.Type, Aliases: d.Aliases, Meta: d.Meta}}
	} else {
		if d.Title != "" || d.Text != "" || d.Type != "" || d.Aliases != nil || d.Meta != nil {
			return bad("nodes", "give a one-passage document's fields at the top, or its passages in nodes, not both")
		}
		for i, n := range d.Nodes {
			if err := checkName(fmt.Sprintf("nodes[%d].id", i), n.ID, false); err != nil {
				return live.Document{}, err
			}
			out.Nodes = append(out.Nodes, corpus.Node{ID: n.ID, Doc: id, Title: n.Title, Text: n.Text, Type: n.Type, Aliases: n.Aliases, Section: n.Section, Meta: n.Meta})
		}
	}
	for i, e := range d.Edges {
		w := 1.0
		if e.Weight != nil {
			w = *e.Weight
		}
		if math.IsNaN(w) || math.IsInf(w, 0) || w < 0 {
			return bad(fmt.Sprintf("edges[%d].weight", i), "not a finite non-negative number")
		}
		for _, f := range []struct {
			name, v string
			empty   bool
		}{{"src", e.Src, true}, {"dst", e.Dst, false}, {"kind", e.Kind, true}, {"rel", e.Rel, true}} {
			if err := checkName(fmt.Sprintf("edges[%d].%s", i, f.name), f.v, f.empty); err != nil {
				return live.Document{}, err
			}
		}
		src := e.Src
		if src == "" && len(out.Nodes) == 1 { // a one-passage document, either form
			src = out.Nodes[0].ID
		}
		out.Edges = append(out.Edges, corpus.Edge{Src: src, Dst: e.Dst, Kind: e.Kind, Rel: e.Rel, Weight: w})
	}
	if d.Vectors != nil {
		if len(d.Vectors) != len(out.Nodes) {
			return bad("vectors", fmt.Sprintf("%d vectors for %d passages", len(d.Vectors), len(out.Nodes)))
		}
		for i, v := range d.Vectors {
			if len(v) != dims {
				return bad(fmt.Sprintf("vectors[%d]", i), fmt.Sprintf("%d values, the index has %d dimensions", len(v), dims))
			}
			out.Vectors = append(out.Vectors, v...)
		}
	}
	return out, nil
}

// refit fits the index's LSA basis again on its passages as they are and
// makes every vector anew (live.Writer.Refit): written to the index's
// folder, then served. The index's writes wait meanwhile. What came from
// the vectors goes stale until a refresh (--refresh-after) builds it.
func (s *Server) refit(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("index")
	if !s.cfg.Writes {
		writeError(w, http.StatusForbidden, &FieldError{Msg: "writes are disabled on this server (start it with --writes); gleaner index refit refits an index offline"})
		return
	}
	if s.replicas != nil {
		writeError(w, http.StatusConflict, &FieldError{Msg: "refit: a replica of a fleet does not refit on its own (its vectors would differ from the other replicas'): stop a replica, gleaner index detach and gleaner index refit it, and start a new fleet from it (docs/fleet.md)"})
		return
	}
	if !mayUse(r.Context(), name) {
		s.metrics.authRefused.WithLabelValues("index").Inc()
		writeError(w, http.StatusForbidden, &FieldError{"index", "this key may not use that index"})
		return
	}
	lw, ok := s.writers[name]
	if !ok {
		writeError(w, http.StatusNotFound, &FieldError{"index", "unknown index " + clip(strconv.Quote(name))})
		return
	}
	start := time.Now()
	if err := lw.Refit(r.Context()); err != nil {
		code := http.StatusInternalServerError
		switch {
		case errors.Is(err, index.ErrNotLSA):
			code = http.StatusConflict
		case errors.Is(err, live.ErrClosed) || r.Context().Err() != nil:
			code = http.StatusServiceUnavailable
		}
		writeError(w, code, &FieldError{Msg: "refit: " + err.Error()})
		return
	}
	ix := lw.Index()
	writeJSON(w, http.StatusOK, api.RefitResponse{Index: name, Nodes: ix.Live(), Dims: ix.Meta.Dims,
		TookMS: float64(time.Since(start).Microseconds()) / 1000, Stale: append([]string{}, live.StaleNames(ix)...)})
}
