package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gleaner-rag/gleaner/internal/testcert"
	"github.com/gleaner-rag/gleaner/server"
	"github.com/gleaner-rag/gleaner/server/client"
)

// writeCert writes a self-signed certificate for 127.0.0.1 (serial
// number serial) and its key, and returns a pool that trusts it.
func writeCert(t *testing.T, certFile, keyFile string, serial int64) *x509.CertPool {
	return testcert.Write(t, certFile, keyFile, serial)
}

// addKey runs `gleaner keys add` and returns the token it prints.
func addKey(t *testing.T, file string, args ...string) string {
	t.Helper()
	out, err := run(t, append([]string{"keys", "add", "--file", file}, args...)...)
	if err != nil {
		t.Fatalf("keys add: %v\n%s", err, out)
	}
	return strings.SplitN(out, "\n", 2)[0]
}

// serial is the serial number of the certificate a TLS server at base
// presents to a new connection.
func serial(t *testing.T, base string, pool *x509.CertPool) int64 {
	t.Helper()
	conn, err := tls.Dial("tcp", strings.TrimPrefix(base, "https://"), &tls.Config{RootCAs: pool, InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
}

// TestServeKeysTLSAndReload runs gleaner serve as a process with keys,
// TLS and an admin listener, talking to it with a real HTTPS client: a
// key is needed and checked, SIGHUP rereads a revoked key and a rotated
// certificate, admin actions reach the audit log, and SIGTERM exits 0.
func TestServeKeysTLSAndReload(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a server process")
	}
	dir := t.TempDir()
	_, idir := buildFullIndex(t, dir, 13)
	keys, audit := filepath.Join(dir, "keys.json"), filepath.Join(dir, "audit.jsonl")
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	pool := writeCert(t, certFile, keyFile, 1)
	app := addKey(t, keys, "--id", "app", "--scope", "read", "--index", "ix")
	ops := addKey(t, keys, "--id", "ops", "--scope", "admin", "--index", "*")
	cmd, urls, stderr := startServeN(t, 2, "--index", "ix="+idir, "--addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0",
		"--keys", keys, "--tls-cert", certFile, "--tls-key", keyFile, "--audit-log", audit)
	api, admin := urls[0], urls[1]
	if !strings.HasPrefix(api, "https://") || !strings.HasPrefix(admin, "https://") {
		t.Fatalf("not HTTPS: %v", urls)
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	c, _ := client.New(api, hc)
	ctx := context.Background()
	req := server.RetrieveRequest{Index: "ix", Query: "band city", K: ptr(3)}
	if _, err := c.Retrieve(ctx, req); status(err) != 401 {
		t.Fatalf("no key: %v", err)
	}
	if resp, err := c.WithToken(app).Retrieve(ctx, req); err != nil || len(resp.Hits) != 3 {
		t.Fatalf("with the key: %v %v", resp, err)
	}
	if _, err := c.WithToken(ops).Retrieve(ctx, req); status(err) != 403 {
		t.Fatalf("an admin key retrieving: %v", err)
	}
	adminReq, _ := http.NewRequest("POST", admin+"/v1/admin/reload", nil)
	adminReq.Header.Set("Authorization", "Bearer "+ops)
	if resp, err := hc.Do(adminReq); err != nil || resp.StatusCode != 200 {
		t.Fatalf("reload on the admin listener: %v %v", resp, err)
	}
	// Revoke the app key and rotate the certificate; SIGHUP applies both.
	if out, err := run(t, "keys", "revoke", "--file", keys, "--id", "app"); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	pool2 := writeCert(t, certFile, keyFile, 2)
	if got := serial(t, api, pool); got != 1 {
		t.Fatalf("serial %d before SIGHUP", got)
	}
	cmd.Process.Signal(syscall.SIGHUP)
	deadline := time.Now().Add(10 * time.Second)
	for serial(t, api, pool) != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the certificate was not reloaded\n%s", stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	hc = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool2}}}
	c, _ = client.New(api, hc)
	if _, err := c.WithToken(app).Retrieve(ctx, req); status(err) != 401 {
		t.Errorf("a revoked key after SIGHUP: %v", err)
	}
	// The admin endpoint rereads the keys as SIGHUP does; a broken file
	// keeps the keys in use and says so.
	app2 := addKey(t, keys, "--id", "app2", "--scope", "read", "--index", "ix")
	adminPost := func() (int, string) {
		r, _ := http.NewRequest("POST", admin+"/v1/admin/reload", nil)
		r.Header.Set("Authorization", "Bearer "+ops)
		resp, err := hc.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := adminPost(); code != 200 {
		t.Fatalf("reload: %d %s", code, body)
	}
	if _, err := c.WithToken(app2).Retrieve(ctx, req); err != nil {
		t.Errorf("a key added before POST /v1/admin/reload: %v", err)
	}
	if err := os.WriteFile(keys, []byte("{broken"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, body := adminPost(); code != 500 || !strings.Contains(body, "keys in use are kept") {
		t.Errorf("reload of a broken keys file: %d %s", code, body)
	}
	if _, err := c.WithToken(app2).Retrieve(ctx, req); err != nil {
		t.Errorf("the keys in use after a failed reload: %v", err)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v\n%s", err, stderr)
	}
	b, _ := os.ReadFile(audit)
	for _, want := range []string{`"key":"ops"`, `"action":"POST /v1/admin/reload"`, `"action":"keys reloaded"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("audit log lacks %s:\n%s", want, b)
		}
	}
	if strings.Contains(string(b), ops) || strings.Contains(stderr.String(), ops) {
		t.Error("a token reached a log")
	}
}

func ptr(k int) *int { return &k }

func status(err error) int {
	var ae *client.APIError
	if errors.As(err, &ae) {
		return ae.Status
	}
	return 0
}

// serve refuses to run open unless asked, and open only on loopback.
func TestServeRefusesOpenServing(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds an index")
	}
	dir := t.TempDir()
	_, idir := buildFullIndex(t, dir, 13)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{}, "needs API keys"},
		{[]string{"--insecure-no-auth", "--addr", "0.0.0.0:0"}, "only on a loopback address"},
		{[]string{"--insecure-no-auth", "--addr", "127.0.0.1:0", "--admin-addr", "0.0.0.0:0"}, "only on a loopback address"},
		{[]string{"--insecure-no-auth", "--keys", "k.json"}, "choose one"},
		{[]string{"--keys", filepath.Join(dir, "none.json")}, "keys file"},
		{[]string{"--insecure-no-auth", "--tls-cert", "c.pem"}, "go together"},
	} {
		out, err := run(t, append([]string{"serve", "--index", "ix=" + idir}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v\n%s", c.args, err, out)
		}
	}
}

// A config file sets any flag, the command line wins, and
// --print-config's output read back prints itself.
func TestServeConfigFileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "serve.json")
	os.WriteFile(cfg, []byte(`{"index": ["a=idx/a", "b=idx/b"], "max-in-flight": 7, "insecure-no-auth": true,
		"timeout": "3s", "addr": "127.0.0.1:9999", "bmax": 12}`), 0o644)
	first, err := run(t, "serve", "--config", cfg, "--addr", "127.0.0.1:7000", "--print-config")
	if err != nil {
		t.Fatalf("%v\n%s", err, first)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(first), &got); err != nil {
		t.Fatalf("%v\n%s", err, first)
	}
	want := map[string]any{"max-in-flight": 7.0, "insecure-no-auth": true, "timeout": "3s", "addr": "127.0.0.1:7000", "bmax": 12.0}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if ix, _ := got["index"].([]any); len(ix) != 2 || ix[1] != "b=idx/b" {
		t.Errorf("index = %v", got["index"])
	}
	again := filepath.Join(dir, "again.json")
	os.WriteFile(again, []byte(first), 0o644)
	second, err := run(t, "serve", "--config", again, "--print-config")
	if err != nil || second != first {
		t.Fatalf("round trip differs (%v):\n%s\nvs\n%s", err, first, second)
	}
	if out, err := run(t, "serve", "--apply-share", "NaN", "--print-config"); err == nil || !strings.Contains(err.Error(), "--apply-share NaN") {
		t.Errorf("--apply-share NaN --print-config: %v\n%s (want it refused: no config file could give it back)", err, out)
	}
	for body, want := range map[string]string{
		`{"no-such-flag": 1}`:        `"no-such-flag": no such flag`,
		`{"max-in-flight": "many"}`:  `"max-in-flight"`,
		`{"addr": ["a", "b"]}`:       "want text",
		`{"addr": {"x": 1}}`:         "want text",
		`{"max-k": "5"}`:             "want a number",
		`{"pprof": "true"}`:          "want true or false",
		`{"timeout": 3}`:             "want text",
		`{"index": "a=b"}`:           "want a list",
		`{"config": "other.json"}`:   "no such flag",
		`{"log-level": "debug"}`:     "a global flag",
		`{"addr": "a", "addr": "b"}`: "given twice",
	} {
		os.WriteFile(cfg, []byte(body), 0o644)
		if out, err := run(t, "serve", "--config", cfg, "--print-config"); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), cfg) {
			t.Errorf("%s: %v\n%s", body, err, out)
		}
	}
}

// serve --otlp-endpoint sends its spans to an OTLP/HTTP collector (here a
// stand-in that counts the exports); the queue is flushed at SIGTERM.
func TestServeExportsTraces(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a server process")
	}
	var exports, bytesIn atomic.Int64
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/v1/traces" && r.Header.Get("Content-Type") == "application/x-protobuf" {
			exports.Add(1)
			bytesIn.Add(int64(len(b)))
		}
	}))
	defer collector.Close()
	_, idir := buildFullIndex(t, t.TempDir(), 13)
	cmd, base, stderr := startServe(t, "--index", "ix="+idir, "--addr", "127.0.0.1:0", "--insecure-no-auth", "--otlp-endpoint", collector.URL)
	c, _ := client.New(base, http.DefaultClient)
	for range 3 {
		if _, err := c.Retrieve(context.Background(), server.RetrieveRequest{Index: "ix", Query: "band city", Method: "ppr"}); err != nil {
			t.Fatal(err)
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if exports.Load() == 0 || bytesIn.Load() < 100 {
		t.Fatalf("the collector got %d exports (%d bytes)\n%s", exports.Load(), bytesIn.Load(), stderr)
	}
	if out, err := run(t, "serve", "--index", "ix="+idir, "--insecure-no-auth", "--otlp-endpoint", "localhost:4318"); err == nil || !strings.Contains(err.Error(), "want http") {
		t.Errorf("a bad endpoint: %v\n%s", err, out)
	}
}

// Audit lines are written whatever --log-level says (the default, warn,
// would drop them: they are info lines).
func TestAuditLinesIgnoreTheLogLevel(t *testing.T) {
	g := &globals{log: slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	o := &serveFlags{insecure: true}
	cfg := server.DefaultConfig()
	if err := o.fillAuth(&cfg, g); err != nil {
		t.Fatal(err)
	}
	if !cfg.AuditLogger.Enabled(context.Background(), slog.LevelInfo) {
		t.Error("the audit logger drops info lines")
	}
	if _, err := newTracing("http://user:secret@127.0.0.1:4318", 1); err == nil || !strings.Contains(err.Error(), "credentials") {
		t.Errorf("credentials in the OTLP URL: %v", err)
	}
}
