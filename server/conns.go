package server

import (
	"crypto/tls"
	"net"
	"net/http"
	"sync"
	"time"
)

// HTTPServer is an http.Server for s with its connection defences: a
// header deadline (HeaderTimeout), an idle keep-alive deadline
// (IdleTimeout), bounded header bytes, and the connection tracking the
// cap needs. Serve it on Listener(ln).
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: s.cfg.HeaderTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ConnState:         s.guard.track,
	}
}

// Listener caps ln at MaxConns open connections. At the cap, a new
// connection closes the connection that has been idle or silent (no request
// yet) the longest, so a flood of idle keep-alive or half-open connections
// cannot lock out real clients; when every connection is busy with a
// request, the new one is closed instead.
func (s *Server) Listener(ln net.Listener) net.Listener {
	return &cappedListener{Listener: ln, g: s.guard}
}

// connGuard tracks connections and their http states.
type connGuard struct {
	mu    sync.Mutex
	max   int
	conns map[net.Conn]*connInfo
	m     *metrics
}

type connInfo struct {
	state http.ConnState
	since time.Time
}

func newConnGuard(max int, m *metrics) *connGuard {
	return &connGuard{max: max, conns: map[net.Conn]*connInfo{}, m: m}
}

// track is http.Server's ConnState hook.
func (g *connGuard) track(c net.Conn, st http.ConnState) {
	if tc, ok := c.(*tls.Conn); ok { // admit saw the connection under TLS
		c = tc.NetConn()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	switch st {
	case http.StateClosed, http.StateHijacked:
		if _, ok := g.conns[c]; ok {
			delete(g.conns, c)
			g.m.conns.Dec()
		}
	default:
		if ci, ok := g.conns[c]; ok {
			ci.state, ci.since = st, time.Now()
		}
	}
}

// admit registers a new connection, making room at the cap; it reports
// false when every tracked connection is busy.
func (g *connGuard) admit(c net.Conn) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.conns) >= g.max {
		victim := g.oldestQuiet()
		if victim == nil {
			return false
		}
		delete(g.conns, victim)
		g.m.conns.Dec()
		g.m.shed.Inc()
		victim.Close() // its goroutine sees the close and ends
	}
	g.conns[c] = &connInfo{state: http.StateNew, since: time.Now()}
	g.m.conns.Inc()
	return true
}

// oldestQuiet is the idle or not-yet-speaking connection quiet the longest.
func (g *connGuard) oldestQuiet() net.Conn {
	var victim net.Conn
	var at time.Time
	for c, ci := range g.conns {
		if ci.state == http.StateActive {
			continue
		}
		if victim == nil || ci.since.Before(at) {
			victim, at = c, ci.since
		}
	}
	return victim
}

type cappedListener struct {
	net.Listener
	g *connGuard
}

func (l *cappedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.g.admit(c) {
			return c, nil
		}
		l.g.m.rejectedConns.Inc()
		c.Close()
	}
}
