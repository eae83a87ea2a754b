package server

import (
	"crypto/tls"
	"fmt"
	"net"
	"slices"
	"sync/atomic"

	"github.com/gleaner-rag/gleaner/internal/safefile"
)

// maxPEMBytes bounds a certificate or key file.
const maxPEMBytes = 1 << 20

// Certificate is a TLS certificate and key read from files, reloadable
// while serving: connections made after Reload get the new pair. It is
// safe for concurrent use.
type Certificate struct {
	certFile, keyFile string
	cur               atomic.Pointer[tls.Certificate]
}

// LoadCertificate reads a PEM certificate (chain) and its key.
func LoadCertificate(certFile, keyFile string) (*Certificate, error) {
	c := &Certificate{certFile: certFile, keyFile: keyFile}
	return c, c.Reload()
}

// Reload rereads the files; on an error the pair in use is kept.
func (c *Certificate) Reload() error {
	cert, err := safefile.Read(c.certFile, maxPEMBytes)
	if err != nil {
		return fmt.Errorf("tls certificate: %w", err)
	}
	key, err := safefile.Read(c.keyFile, maxPEMBytes)
	if err != nil {
		return fmt.Errorf("tls key: %w", err)
	}
	pair, err := tls.X509KeyPair(cert, key)
	if err != nil {
		return fmt.Errorf("tls: %s and %s: %w", c.certFile, c.keyFile, err)
	}
	c.cur.Store(&pair)
	return nil
}

// Config is a TLS configuration (TLS 1.2 or later, HTTP/1.1) that serves
// the certificate in use at each handshake.
func (c *Certificate) Config() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"},
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return c.cur.Load(), nil }}
}

// TLSListener is Listener(ln) with TLS on top: the connection cap counts
// connections before their handshake, and net/http bounds the handshake
// by HeaderTimeout.
// ReloadAll rereads c.
func (s *Server) TLSListener(ln net.Listener, c *Certificate) net.Listener {
	s.certMu.Lock()
	if !slices.Contains(s.certs, c) {
		s.certs = append(s.certs, c)
	}
	s.certMu.Unlock()
	return tls.NewListener(s.Listener(ln), c.Config())
}
