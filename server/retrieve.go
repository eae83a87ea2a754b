package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/retrieve"
	"github.com/gleaner-rag/gleaner/retrieve/filter"
)

// retrieve serves POST /v1/retrieve.
// requestTimeout is how long req may run: the server's timeout, or the
// request's timeout_ms when shorter.
func (s *Server) requestTimeout(req *RetrieveRequest) time.Duration {
	timeout := s.cfg.Timeout
	// Compared in milliseconds: a huge timeout_ms would overflow a Duration.
	if req.TimeoutMS > 0 && int64(req.TimeoutMS) < timeout.Milliseconds() {
		timeout = time.Duration(req.TimeoutMS) * time.Millisecond
	}
	return timeout
}

func (s *Server) retrieve(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	code, method, ixName := http.StatusOK, "?", "?" // "?" until known: labels stay bounded
	defer func() {
		s.metrics.requests.WithLabelValues(ixName, method, strconv.Itoa(code)).Inc()
	}()
	// The body is read before a slot is taken, within BodyTimeout: a client
	// that never finishes its body holds its connection until then, never
	// one of the MaxInFlight slots real requests need.
	body, err := s.readBody(w, r)
	if err != nil {
		code = http.StatusBadRequest
		var fe *FieldError
		if errors.As(err, &fe) && fe.Field == "timeout" {
			code, fe.Field = http.StatusRequestTimeout, ""
		}
		writeError(w, code, err)
		return
	}
	select { // admission: fail fast when full, never queue without bound
	case s.slots <- struct{}{}:
		defer func() { <-s.slots }()
	default:
		s.metrics.rejected.Inc()
		w.Header().Set("Retry-After", "1")
		code = http.StatusServiceUnavailable
		writeError(w, code, &FieldError{Msg: "server at max in flight; retry"})
		return
	}
	s.metrics.inFlight.Inc()
	defer s.metrics.inFlight.Dec()
	req, err := DecodeRequest(bytes.NewReader(body), s.cfg.Limits)
	if err != nil {
		code = http.StatusBadRequest
		writeError(w, code, err)
		return
	}
	if req.Method != "" && req.Method != retrieve.Auto && !slices.Contains(retrieve.Names(), req.Method) {
		code = http.StatusBadRequest
		writeError(w, code, &FieldError{"method", "unknown method " + clip(strconv.Quote(req.Method)) + " (GET /v1/methods lists them)"})
		return
	}
	if !mayUse(r.Context(), req.Index) { // the same answer whether the index exists or not
		code = http.StatusForbidden
		s.metrics.authRefused.WithLabelValues("index").Inc()
		writeError(w, code, &FieldError{"index", "this key may not use that index"})
		return
	}
	if c, err := s.waitSeq(r.Context(), req.Index, req.MinSeq, s.requestTimeout(req)); err != nil {
		code = c
		if c == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", "1")
		}
		writeError(w, code, err)
		return
	}
	set, release := s.acquire()
	if set == nil {
		code = http.StatusServiceUnavailable
		writeError(w, code, &FieldError{Msg: "shutting down"})
		return
	}
	defer release()
	e, ok := set.entries[req.Index]
	if !ok {
		code = http.StatusBadRequest
		writeError(w, code, &FieldError{"index", "unknown index " + clip(strconv.Quote(req.Index))})
		return
	}
	if d := e.damaged.Load(); d != nil {
		code = http.StatusServiceUnavailable
		writeError(w, code, &FieldError{"index", clip(strconv.Quote(req.Index)) + " changed on disk since it was opened and is not served; rebuild it and reload"})
		return
	}
	s.applyDefaults(req, e.ix)
	method, ixName = req.Method, req.Index
	cfg, err := s.config(req)
	if err != nil {
		code = http.StatusBadRequest
		writeError(w, code, err)
		return
	}
	allow, err := s.allowed(r.Context(), req, e.ix)
	annotate(r, req, allow != nil)
	if err != nil {
		code = statusOf(err)
		writeError(w, code, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.requestTimeout(req)) // a client that goes away cancels its work
	defer cancel()
	m, done, err := e.method(ctx, cfg)
	if err != nil {
		err = graphField(err, req)
		code = statusOf(err)
		writeError(w, code, err)
		return
	}
	defer done()
	code = s.answer(ctx, w, e.ix, m, req, allow, start)
	s.metrics.latency.WithLabelValues(ixName, method).Observe(time.Since(start).Seconds())
}

// allowed is the set of nodes the request may see: its filter ANDed with
// its key's ACL (Config.ACLField); nil when neither restricts it. A method
// that cannot honour a filter is refused here, before it runs.
func (s *Server) allowed(ctx context.Context, req *RetrieveRequest, ix *index.Index) (*filter.Set, error) {
	var f *filter.Filter
	if len(req.Filter) > 0 {
		var err error
		if f, err = filter.Parse(req.Filter); err != nil {
			return nil, &FieldError{"filter", clip(strings.TrimPrefix(err.Error(), "filter: "))}
		}
	}
	if s.cfg.ACLField != "" {
		var groups []string
		if k := KeyOf(ctx); k != nil {
			groups = k.Groups
		}
		f = filter.And(f, filter.ACL(s.cfg.ACLField, groups))
	}
	if f == nil {
		return nil, nil
	}
	if !retrieve.SupportsFilters(req.Method) {
		what := "filters"
		if len(req.Filter) == 0 {
			what = "the access control this server applies to every request"
		}
		return nil, &FieldError{"method", fmt.Sprintf("%s does not support %s yet; methods that do: %s",
			clip(strconv.Quote(req.Method)), what, strings.Join(filterMethods(), ", "))}
	}
	return filter.Eval(ix, f)
}

// filterMethods are the methods that honour filters.
func filterMethods() []string {
	var out []string
	for _, n := range retrieve.Names() {
		if retrieve.SupportsFilters(n) {
			out = append(out, n)
		}
	}
	return out
}

// readBody reads a request body of at most MaxBodyBytes that must arrive
// within BodyTimeout (a read deadline on the connection, cleared after).
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	return s.readLimited(w, r, s.cfg.Limits.MaxBodyBytes)
}

// readLimited reads a body of at most limit bytes within BodyTimeout.
func (s *Server) readLimited(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	rc := http.NewResponseController(w)
	deadline := rc.SetReadDeadline(time.Now().Add(s.cfg.BodyTimeout)) == nil // not every writer has a connection
	body, err := io.ReadAll(io.LimitReader(http.MaxBytesReader(w, r.Body, limit), limit+1))
	if err != nil {
		// The connection is done: net/http would otherwise read the rest
		// of the body before answering, waiting on the very client that
		// stalled.
		w.Header().Set("Connection", "close")
	} else if deadline {
		rc.SetReadDeadline(time.Time{})
	}
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		s.metrics.bodyTimeouts.Inc()
		return nil, &FieldError{Field: "timeout", Msg: fmt.Sprintf("the request body did not arrive within %v", s.cfg.BodyTimeout)}
	case err != nil:
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return nil, &FieldError{Msg: fmt.Sprintf("a body over %d bytes", limit)}
		}
		return nil, &FieldError{Msg: "reading the body: " + clip(err.Error())}
	}
	return body, nil
}

// applyDefaults fills what the request left to the server: the method
// ("auto": the profile's, else DefaultProfile of the index, whose graph
// kinds it walks unless the request names some) and, from the profile,
// the grouping.
func (s *Server) applyDefaults(req *RetrieveRequest, ix *index.Index) {
	p := s.cfg.Profile
	if req.Method == "" || req.Method == retrieve.Auto {
		if p == nil {
			d := retrieve.DefaultProfile(ix)
			req.Method = d.Method
			if kinds, ok := d.Settings["graph-kind"]; ok && req.GraphKinds == nil && req.Options["graph_kind"] == nil {
				req.GraphKinds = strings.Split(kinds, ",")
			}
			return
		}
		req.Method = p.Method
	}
	if req.GroupBy == "" && p != nil && req.Method == p.Method {
		req.GroupBy = p.GroupBy
	}
}

// answer runs the method and writes the response; it returns the status.
func (s *Server) answer(ctx context.Context, w http.ResponseWriter, ix *index.Index, m retrieve.Method, req *RetrieveRequest, allow *filter.Set, start time.Time) (code int) {
	q := retrieve.Query{Text: req.Query, Allow: allow}
	ctx, end := retrieve.StartSpan(ctx, "method "+m.Name())
	defer func() {
		var err error
		if code >= 500 {
			err = fmt.Errorf("status %d", code)
		}
		end(err)
	}()
	sm, streaming := m.(retrieve.StreamingMethod)
	grouped := req.GroupBy == retrieve.GroupDocument
	if !req.Stream || !streaming {
		var hits []retrieve.Hit
		var err error
		if grouped {
			hits, err = retrieve.RetrieveDocuments(ctx, m, ix, q, *req.K)
		} else {
			hits, err = m.Retrieve(ctx, q, *req.K)
		}
		if err != nil {
			code := statusOf(err)
			writeError(w, code, err)
			return code
		}
		writeJSON(w, http.StatusOK, s.response(ix, req, hits, start, 0, true))
		return http.StatusOK
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	flusher, _ := w.(http.Flusher)
	enc := newEncoder(w)
	round := 0
	var last []retrieve.Hit
	emit := func(hits []retrieve.Hit) bool {
		round++
		last = hits
		if enc.Encode(s.response(ix, req, hits, start, round, false)) != nil {
			return false // the client is gone
		}
		if flusher != nil {
			flusher.Flush()
		}
		return true
	}
	var err error
	if grouped {
		err = retrieve.RetrieveDocumentsStream(ctx, sm, ix, q, *req.K, emit)
	} else {
		err = sm.RetrieveStream(ctx, q, *req.K, emit)
	}
	s.metrics.rounds.Observe(float64(round))
	if err != nil { // headers are sent: the error is the last line
		enc.Encode(Error{Error: err.Error()})
		return statusOf(err)
	}
	enc.Encode(s.response(ix, req, last, start, round, true)) // the final ranking again, marked done
	return http.StatusOK
}

func (s *Server) response(ix *index.Index, req *RetrieveRequest, hits []retrieve.Hit, start time.Time, round int, done bool) RetrieveResponse {
	out := RetrieveResponse{Index: req.Index, Method: req.Method, Round: round, Done: done,
		TookMS: float64(time.Since(start).Microseconds()) / 1000, Hits: make([]Hit, len(hits))}
	for i, h := range hits {
		n := int(h.Index)
		out.Hits[i] = Hit{ID: ix.NodeID(n), Title: ix.Title(n), Document: ix.Document(n), Section: ix.HeadingPath(n), Score: h.Score}
		if req.GroupBy == retrieve.GroupDocument {
			out.Hits[i].ID, out.Hits[i].Title, out.Hits[i].Passage = ix.Document(n), ix.DocumentTitle(n), ix.NodeID(n)
		}
		if req.Text {
			out.Hits[i].Text = ix.Text(n)
		}
	}
	return out
}

// graphField names the request field behind a missing graph kind: the
// kinds it asked for, else the method that needs edges.
func graphField(err error, req *RetrieveRequest) error {
	if !errors.Is(err, retrieve.ErrNoGraph) {
		return err
	}
	field := "method"
	switch {
	case req.GraphKinds != nil:
		field = "graph_kinds"
	case req.Options["graph_kind"] != nil:
		field = "options.graph_kind"
	}
	return &FieldError{field, err.Error()}
}

// statusOf maps a method's error to an HTTP status: the caller's mistakes
// (a bad setting or query, a structure the index lacks) are 400.
func statusOf(err error) int {
	var fe *FieldError
	switch {
	case errors.As(err, &fe), errors.Is(err, retrieve.ErrInvalid), errors.Is(err, index.ErrNotBuilt):
		return http.StatusBadRequest
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout
	case errors.Is(err, context.Canceled):
		return 499 // the client closed the request
	}
	return http.StatusInternalServerError
}

// config is the request's method configuration: the method's defaults,
// the operator's settings, then the request's (first_stage, graph_kinds
// and options), each checked by the rules the method declares. Every
// option's name is checked before any value is read.
func (s *Server) config(req *RetrieveRequest) (*retrieve.Config, error) {
	cfg, err := s.cfg.methodConfig(req.Method)
	if err != nil {
		return nil, err
	}
	names := slices.Sorted(maps.Keys(req.Options)) // the same error for the same request
	params := make(map[string]*retrieve.Param, len(names))
	for _, n := range names {
		p := cfg.Param(strings.ReplaceAll(n, "_", "-"))
		if p == nil || strings.Contains(n, "-") {
			return nil, &FieldError{"options." + clip(n), fmt.Sprintf("method %s has no such setting (GET /v1/methods lists its settings)", req.Method)}
		}
		params[n] = p
	}
	for _, top := range []struct {
		field, option string
		given         bool
	}{{"first_stage", "first_stage", req.FirstStage != ""}, {"graph_kinds", "graph_kind", req.GraphKinds != nil}} {
		if _, both := params[top.option]; both && top.given {
			return nil, &FieldError{top.field, "given twice: as " + top.field + " and as options." + top.option + "; set one"}
		}
	}
	if req.FirstStage != "" {
		if err := setOption(cfg, "first_stage", "first-stage", json.RawMessage(strconv.Quote(req.FirstStage))); err != nil {
			return nil, err
		}
	}
	if req.GraphKinds != nil {
		raw, _ := json.Marshal(req.GraphKinds) // strings always marshal
		if err := setOption(cfg, "graph_kinds", "graph-kind", raw); err != nil {
			return nil, err
		}
	}
	for _, first := range []bool{true, false} { // presets before the settings they set
		for _, n := range names {
			if params[n].IsFirst() != first {
				continue
			}
			raw, err := json.Marshal(req.Options[n])
			if err != nil {
				return nil, &FieldError{"options." + n, err.Error()}
			}
			if err := setOption(cfg, "options."+n, params[n].Name(), raw); err != nil {
				return nil, err
			}
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, optionError(err)
	}
	return cfg, nil
}

// setOption sets one setting from a request's JSON; field names it.
func setOption(cfg *retrieve.Config, field, name string, raw json.RawMessage) error {
	p := cfg.Param(name)
	switch {
	case p == nil:
		return &FieldError{field, fmt.Sprintf("method %s has no such setting (GET /v1/methods lists its settings)", cfg.Name())}
	case p.IsLocal():
		return &FieldError{field, "a setting of the server's configuration; a request may not change it"}
	}
	if err := p.SetJSON(raw); err != nil {
		var pe *retrieve.ParamError
		if errors.As(err, &pe) {
			return &FieldError{field, pe.Value + ": " + pe.Msg}
		}
		return &FieldError{field, err.Error()}
	}
	return nil
}

// optionError names the request field of a setting that broke a rule.
func optionError(err error) error {
	var pe *retrieve.ParamError
	if errors.As(err, &pe) && pe.Name != "" {
		return &FieldError{"options." + strings.ReplaceAll(pe.Name, "-", "_"), pe.Value + ": " + pe.Msg}
	}
	return &FieldError{"options", err.Error()}
}
