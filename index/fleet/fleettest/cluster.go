// Package fleettest runs a NATS JetStream cluster inside a test process,
// on loopback, for the fleet's tests.
package fleettest

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Cluster is n NATS servers with JetStream, routed to each other.
type Cluster struct {
	opts    []*server.Options
	servers []*server.Server
}

// Start starts an n-node cluster (n = 1: a lone server) and waits until
// JetStream answers; it is shut down when the test ends.
func Start(t testing.TB, n int) *Cluster {
	t.Helper()
	c, err := New(t.TempDir(), n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Shutdown)
	return c
}

// StartTLS starts a lone server that speaks TLS with cfg (tls:// URLs).
func StartTLS(t testing.TB, cfg *tls.Config) *Cluster {
	t.Helper()
	ports, err := freePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	o := &server.Options{ServerName: "n1", Host: "127.0.0.1", Port: ports[0], JetStream: true, StoreDir: t.TempDir(),
		NoLog: true, NoSigs: true, JetStreamMaxStore: 1 << 30, JetStreamMaxMemory: 64 << 20, TLS: true, TLSConfig: cfg, TLSTimeout: 5}
	c := &Cluster{opts: []*server.Options{o}, servers: make([]*server.Server, 1)}
	if err := c.Restart(0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Shutdown)
	return c
}

// New starts an n-node cluster keeping its stores under dir, and waits
// until JetStream answers on every node; Shutdown stops it.
func New(dir string, n int) (*Cluster, error) {
	c := &Cluster{servers: make([]*server.Server, n)}
	ports, err := freePorts(2 * n) // one call: distinct ports
	if err != nil {
		return nil, err
	}
	clients, routes := ports[:n], ports[n:]
	for i := 0; i < n; i++ {
		o := &server.Options{ServerName: fmt.Sprintf("n%d", i+1), Host: "127.0.0.1", Port: clients[i],
			JetStream: true, StoreDir: filepath.Join(dir, fmt.Sprintf("n%d", i+1)), NoLog: true, NoSigs: true,
			JetStreamMaxStore: 8 << 30, JetStreamMaxMemory: 64 << 20}
		if n > 1 {
			o.Cluster = server.ClusterOpts{Name: "gleaner-test", Host: "127.0.0.1", Port: routes[i]}
			for j := 0; j < n; j++ {
				if j != i {
					o.Routes = append(o.Routes, &url.URL{Scheme: "nats-route", Host: fmt.Sprintf("127.0.0.1:%d", routes[j])})
				}
			}
		}
		c.opts = append(c.opts, o)
	}
	for i := range c.opts {
		if err := c.Restart(i); err != nil {
			c.Shutdown()
			return nil, err
		}
	}
	if err := c.WaitReady(); err != nil {
		c.Shutdown()
		return nil, err
	}
	return c, nil
}

func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// URLs are the client URLs of every node, comma-separated.
func (c *Cluster) URLs() string {
	var us []string
	for _, o := range c.opts {
		us = append(us, fmt.Sprintf("nats://127.0.0.1:%d", o.Port))
	}
	return strings.Join(us, ",")
}

// URL is node i's client URL.
func (c *Cluster) URL(i int) string { return fmt.Sprintf("nats://127.0.0.1:%d", c.opts[i].Port) }

// Kill shuts node i down (its store stays for Restart).
func (c *Cluster) Kill(i int) {
	if s := c.servers[i]; s != nil {
		s.Shutdown()
		s.WaitForShutdown()
		c.servers[i] = nil
	}
}

// Restart starts node i again on its store.
func (c *Cluster) Restart(i int) error {
	s, err := server.NewServer(c.opts[i])
	if err != nil {
		return err
	}
	go s.Start()
	if !s.ReadyForConnections(30 * time.Second) {
		s.Shutdown()
		return fmt.Errorf("NATS node %d did not start", i+1)
	}
	c.servers[i] = s
	return nil
}

// Leader is the node that leads stream (its replicas' Raft group), -1
// when none does now.
func (c *Cluster) Leader(stream string) int {
	for i, s := range c.servers {
		if s != nil && s.JetStreamIsStreamLeader("$G", stream) {
			return i
		}
	}
	return -1
}

// Shutdown stops every node.
func (c *Cluster) Shutdown() {
	for i := range c.servers {
		c.Kill(i)
	}
}

// WaitReady waits until JetStream answers on every running node (a
// meta leader is elected).
func (c *Cluster) WaitReady() error {
	deadline := time.Now().Add(60 * time.Second)
	for i, s := range c.servers {
		if s == nil {
			continue
		}
		for {
			err := c.ping(c.URL(i))
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("JetStream on NATS node %d not ready: %w", i+1, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

func (c *Cluster) ping(u string) error {
	nc, err := nats.Connect(u)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err = js.AccountInfo(ctx)
	return err
}

// Proxy forwards TCP connections to a node; Cut severs them and refuses
// new ones (a partition), Heal lets them through again on the same port.
type Proxy struct {
	t      testing.TB
	addr   string
	target string
	mu     sync.Mutex
	l      net.Listener
	conns  []net.Conn
}

// NewProxy forwards a new loopback port to target (host:port); it is
// closed when the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	ports, err := freePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{t: t, target: target, addr: fmt.Sprintf("127.0.0.1:%d", ports[0])}
	p.Heal()
	t.Cleanup(p.Cut)
	return p
}

// URL is the proxy's nats:// URL.
func (p *Proxy) URL() string { return "nats://" + p.addr }

// Heal accepts connections again.
func (p *Proxy) Heal() {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.l != nil {
		return
	}
	var l net.Listener
	var err error
	for i := 0; i < 50; i++ { // the port may linger a moment after Cut
		if l, err = net.Listen("tcp", p.addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		p.t.Fatal(err)
	}
	p.l = l
	go p.accept(l)
}

func (p *Proxy) accept(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		go pipe(c, up)
		go pipe(up, c)
	}
}

func pipe(dst, src net.Conn) {
	io.Copy(dst, src)
	dst.Close()
	src.Close()
}

// Cut closes every connection and stops accepting.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.l != nil {
		p.l.Close()
		p.l = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}
