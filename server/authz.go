package server

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/time/rate"

	"github.com/gleaner-rag/gleaner/server/auth"
)

// keyCtx carries a request's authenticated key in its context.
type keyCtx struct{}

// KeyOf is the key a request was authenticated with; nil when the server
// runs without keys (Config.InsecureNoAuth).
func KeyOf(ctx context.Context) *auth.Key {
	k, _ := ctx.Value(keyCtx{}).(*auth.Key)
	return k
}

// mayUse reports whether the request's key may use the index named name
// (every index without keys).
func mayUse(ctx context.Context, name string) bool {
	k := KeyOf(ctx)
	return k == nil || k.MayUse(name)
}

// SetKeys replaces the keys the server accepts (a reloaded keys file);
// requests already admitted finish under the key they came with. nil is
// refused unless the server runs with InsecureNoAuth.
func (s *Server) SetKeys(k *auth.Keyring) error {
	if k == nil && !s.cfg.InsecureNoAuth {
		return errors.New("server: nil keyring (the server was started with keys)")
	}
	if k != nil && s.cfg.InsecureNoAuth {
		return errors.New("server: started with InsecureNoAuth; restart it with keys to require them")
	}
	if s.cfg.ACLField == "" && k.HasGroups() {
		return errors.New("server: the keys carry ACL groups but the server has no ACL field: they would see every node")
	}
	s.keys.Store(k)
	s.limits.reset()
	s.cfg.AuditLogger.Info("audit", "action", "keys reloaded", "keys", k.Len())
	return nil
}

// ReloadKeys replaces the keys with what load returns (a reread keys
// file), writing an audit line either way: a failed reload keeps the keys
// in use.
func (s *Server) ReloadKeys(load func() (*auth.Keyring, error)) error {
	k, err := load()
	if err == nil {
		err = s.SetKeys(k)
	}
	if err != nil {
		s.metrics.keysStale.Set(1)
		err = fmt.Errorf("keys reload failed, so the keys in use are kept, including any this edit revoked: fix the file and reload again (gleaner keys revoke rewrites it safely): %w", err)
		s.cfg.AuditLogger.Error("audit", "action", "keys reload failed", "err", err)
		return err
	}
	s.metrics.keysStale.Set(0)
	return nil
}

// methodNotAllowed answers 405 for a route's path under another method.
func methodNotAllowed(allow string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Allow", allow)
		writeError(w, http.StatusMethodNotAllowed, &FieldError{Msg: "method not allowed; use " + allow})
	})
}

// requireKey admits a request to a route that needs scope: an unknown or
// missing key gets 401, a key without the scope 403, a key over its rate
// 429 with Retry-After; nothing in the answers says which keys, scopes or
// indexes exist. Admin routes log an audit line per request, answered or
// refused.
func (s *Server) requireKey(scope auth.Scope, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ring := s.keys.Load()
		if ring == nil { // InsecureNoAuth: validate refuses a nil ring otherwise
			s.serveAudited(scope, nil, next, w, r)
			return
		}
		key, reason := s.authenticate(ring, r, scope)
		switch reason {
		case "":
		case "missing", "invalid":
			s.deny(w, r, scope, key, reason, http.StatusUnauthorized)
			return
		case "rate":
			s.deny(w, r, scope, key, reason, http.StatusTooManyRequests)
			return
		default:
			s.deny(w, r, scope, key, reason, http.StatusForbidden)
			return
		}
		s.serveAudited(scope, key, next, w, r.WithContext(context.WithValue(r.Context(), keyCtx{}, key)))
	})
}

// authenticate finds the request's key and checks its scope and rate; a
// non-empty reason says why it is refused.
func (s *Server) authenticate(ring *auth.Keyring, r *http.Request, scope auth.Scope) (*auth.Key, string) {
	tok, ok := bearer(r)
	if !ok {
		return nil, "missing"
	}
	key := ring.Authenticate(tok)
	switch {
	case key == nil:
		return nil, "invalid"
	case !key.Has(scope):
		return key, "scope"
	case !s.limits.allow(key):
		return key, "rate"
	}
	return key, ""
}

// bearer is the token of an "Authorization: Bearer <token>" header.
func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// deny answers a refused request with no detail beyond its status.
func (s *Server) deny(w http.ResponseWriter, r *http.Request, scope auth.Scope, key *auth.Key, reason string, code int) {
	s.metrics.authRefused.WithLabelValues(reason).Inc()
	msg := map[int]string{http.StatusUnauthorized: "unauthorized", http.StatusForbidden: "forbidden",
		http.StatusTooManyRequests: "rate limit exceeded; retry"}[code]
	switch code {
	case http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", `Bearer realm="gleaner"`)
	case http.StatusTooManyRequests:
		w.Header().Set("Retry-After", strconv.Itoa(s.limits.retryAfter(key)))
	}
	if r.Body != nil { // the body is not read: the connection cannot carry another request
		w.Header().Set("Connection", "close")
	}
	writeError(w, code, &FieldError{Msg: msg})
	if scope == auth.Admin {
		s.audit(w, r, key, code, reason)
	}
}

// serveAudited serves the request, with an audit line for admin routes.
func (s *Server) serveAudited(scope auth.Scope, key *auth.Key, next http.Handler, w http.ResponseWriter, r *http.Request) {
	if scope != auth.Admin {
		next.ServeHTTP(w, r)
		return
	}
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	next.ServeHTTP(rec, r)
	s.audit(w, r, key, rec.status, "")
}

// audit logs one admin action: who, what, from where, and how it ended.
func (s *Server) audit(w http.ResponseWriter, r *http.Request, key *auth.Key, code int, refused string) {
	id := "-"
	if key != nil {
		id = key.ID
	} else if s.keys.Load() == nil {
		id = "(no auth)"
	}
	attrs := []any{"action", r.Method + " " + r.URL.Path, "key", id, "remote", r.RemoteAddr, "status", code,
		"request_id", w.Header().Get("X-Request-Id")}
	if refused != "" {
		attrs = append(attrs, "refused", refused)
	}
	s.cfg.AuditLogger.Info("audit", attrs...)
}

// limiters hold each key's token bucket; a reload of the keys starts them
// afresh, so a changed rate applies at once.
type limiters struct {
	mu sync.Mutex
	by map[string]*rate.Limiter
}

func (l *limiters) allow(k *auth.Key) bool {
	if k.Rate == 0 {
		return true
	}
	l.mu.Lock()
	lim, ok := l.by[k.ID]
	if !ok {
		if l.by == nil {
			l.by = map[string]*rate.Limiter{}
		}
		lim = rate.NewLimiter(rate.Limit(k.Rate), k.BurstOrDefault())
		l.by[k.ID] = lim
	}
	l.mu.Unlock()
	return lim.Allow()
}

// retryAfter is the whole seconds until the key's bucket has a token.
func (l *limiters) retryAfter(k *auth.Key) int {
	if k == nil || k.Rate == 0 {
		return 1
	}
	return int(min(math.Ceil(1/k.Rate), 3600)) // auth refuses rates under 1/1000 s; clamp all the same
}

func (l *limiters) reset() {
	l.mu.Lock()
	l.by = nil
	l.mu.Unlock()
}
