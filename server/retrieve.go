package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/kernels"
	"github.com/gleaner-rag/gleaner/retrieve"
)

// retrieve serves POST /v1/retrieve.
func (s *Server) retrieve(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	code, method := http.StatusOK, "?"
	defer func() {
		s.metrics.requests.WithLabelValues(method, strconv.Itoa(code)).Inc()
	}()
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
	req, err := DecodeRequest(http.MaxBytesReader(w, r.Body, s.cfg.Limits.MaxBodyBytes), s.cfg.Limits)
	if err != nil {
		code = http.StatusBadRequest
		writeError(w, code, err)
		return
	}
	method = req.Method
	if !slices.Contains(retrieve.Names(), method) {
		method, code = "?", http.StatusBadRequest
		writeError(w, code, &FieldError{"method", "unknown method " + strconv.Quote(req.Method)})
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
		writeError(w, code, &FieldError{"index", "unknown index " + strconv.Quote(req.Index)})
		return
	}
	o, err := s.options(req)
	if err != nil {
		code = http.StatusBadRequest
		writeError(w, code, err)
		return
	}
	m, err := e.method(req.Method, o)
	if err != nil {
		code = statusOf(err)
		writeError(w, code, err)
		return
	}
	timeout := s.cfg.Timeout
	// Compared in milliseconds: a huge timeout_ms would overflow a Duration.
	if req.TimeoutMS > 0 && int64(req.TimeoutMS) < timeout.Milliseconds() {
		timeout = time.Duration(req.TimeoutMS) * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout) // a client that goes away cancels its work
	defer cancel()
	code = s.answer(ctx, w, e.ix, m, req, start)
	s.metrics.latency.WithLabelValues(method).Observe(time.Since(start).Seconds())
}

// answer runs the method and writes the response; it returns the status.
func (s *Server) answer(ctx context.Context, w http.ResponseWriter, ix *index.Index, m retrieve.Method, req *RetrieveRequest, start time.Time) int {
	q := retrieve.Query{Text: req.Query}
	sm, streaming := m.(retrieve.StreamingMethod)
	if !req.Stream || !streaming {
		hits, err := m.Retrieve(ctx, q, *req.K)
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
	enc := json.NewEncoder(w)
	round := 0
	err := sm.RetrieveStream(ctx, q, *req.K, func(hits []kernels.Hit) bool {
		round++
		if enc.Encode(s.response(ix, req, hits, start, round, false)) != nil {
			return false // the client is gone
		}
		if flusher != nil {
			flusher.Flush()
		}
		return true
	})
	s.metrics.rounds.Observe(float64(round))
	if err != nil { // headers are sent: the error is the last line
		enc.Encode(Error{Error: err.Error()})
		return statusOf(err)
	}
	enc.Encode(RetrieveResponse{Index: req.Index, Method: req.Method, Round: round, Done: true,
		TookMS: float64(time.Since(start).Microseconds()) / 1000, Hits: []Hit{}})
	return http.StatusOK
}

func (s *Server) response(ix *index.Index, req *RetrieveRequest, hits []kernels.Hit, start time.Time, round int, done bool) RetrieveResponse {
	out := RetrieveResponse{Index: req.Index, Method: req.Method, Round: round, Done: done,
		TookMS: float64(time.Since(start).Microseconds()) / 1000, Hits: make([]Hit, len(hits))}
	for i, h := range hits {
		n := int(h.Index)
		out.Hits[i] = Hit{ID: ix.NodeID(n), Title: ix.Title(n), Score: h.Score}
		if req.Text {
			out.Hits[i].Text = ix.Text(n)
		}
	}
	return out
}

// statusOf maps a method's error to an HTTP status.
func statusOf(err error) int {
	var fe *FieldError
	switch {
	case errors.As(err, &fe), errors.Is(err, retrieve.ErrEmptyQuery), errors.Is(err, retrieve.ErrNoGraph), errors.Is(err, retrieve.ErrNoTriGraph), errors.Is(err, retrieve.ErrNoKETRAG), errors.Is(err, retrieve.ErrNoSeeder), errors.Is(err, index.ErrNoHead):
		return http.StatusBadRequest
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout
	case errors.Is(err, context.Canceled):
		return 499 // the client closed the request
	}
	return http.StatusInternalServerError
}

// options applies a request's settings to the server's.
func (s *Server) options(req *RetrieveRequest) (retrieve.Options, error) {
	o := s.cfg.Options
	if req.FirstStage != "" {
		o.FirstStage = req.FirstStage
	}
	if req.GraphKinds != nil {
		o.GraphKinds = req.GraphKinds
	}
	if p := req.Options; p != nil {
		set(&o.FastInsight.BMax, p.BMax)
		set(&o.FastInsight.Batch, p.Batch)
		set(&o.FastInsight.Alpha, p.Alpha)
		set(&o.FastInsight.Beta, p.Beta)
		set(&o.PPR.Seeds, p.PPRSeeds)
		set(&o.PPR.Reset, p.PPRReset)
		set(&o.PPR.SeedWeight, p.PPRSeedWeight)
		set(&o.PPR.Damping, p.Damping)
		set(&o.Hybrid.Weight, p.HybridWeight)
		set(&o.Hybrid.Fusion, p.HybridFusion)
		o.GAR = retrieve.GAROptions{Budget: o.FastInsight.BMax, Batch: o.FastInsight.Batch, NoBackfill: o.GAR.NoBackfill}
		o.RerankDepth = o.FastInsight.BMax
	}
	if err := o.Validate(); err != nil {
		return o, &FieldError{Field: "options", Msg: err.Error()}
	}
	return o, nil
}

func set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}
