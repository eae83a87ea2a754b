// Package client calls a `gleaner serve` server from Go. It imports only
// the standard library and server/api, so a service links it without the
// engine. A Client is safe for concurrent use.
package client

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/gleaner-rag/gleaner/server/api"
)

// Client talks to one server (or a load balancer in front of replicas).
type Client struct {
	base  string
	hc    *http.Client
	token string
}

// New returns a client for the server at base (e.g. "http://127.0.0.1:8080").
// hc is the HTTP client to use; it must not be nil (http.DefaultClient is
// fine).
func New(base string, hc *http.Client) (*Client, error) {
	if hc == nil {
		return nil, errors.New("client: nil http.Client")
	}
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		return nil, fmt.Errorf("client: base %q: want http:// or https://", base)
	}
	return &Client{base: strings.TrimSuffix(base, "/"), hc: hc}, nil
}

// WithToken returns a client that presents token (an API key from
// gleaner keys add) as "Authorization: Bearer <token>" on every request.
func (c *Client) WithToken(token string) *Client {
	out := *c
	out.token = token
	return &out
}

// APIError is a non-2xx answer: the HTTP status, the server's message and
// field, and for 503 and 429 the Retry-After the server asked for.
type APIError struct {
	Status     int
	RetryAfter string
	Body       api.Error
}

func (e *APIError) Error() string {
	if e.Body.Field != "" {
		return fmt.Sprintf("gleaner server: %d: %s: %s", e.Status, e.Body.Field, e.Body.Error)
	}
	return fmt.Sprintf("gleaner server: %d: %s", e.Status, e.Body.Error)
}

// Retrieve runs one query and returns its final ranking.
func (c *Client) Retrieve(ctx context.Context, req api.RetrieveRequest) (*api.RetrieveResponse, error) {
	req.Stream = false
	resp, err := c.post(ctx, "/v1/retrieve", req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out api.RetrieveResponse
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("client: decoding the response: %w", err)
	}
	return &out, nil
}

// Stream runs one query on a streaming method and calls fn with each round
// as the server sends it; the last call has Done set and repeats the final
// ranking. fn returning false closes the request, which cancels the
// server's work. A method that does not stream answers in one call, with
// Done set.
func (c *Client) Stream(ctx context.Context, req api.RetrieveRequest, fn func(*api.RetrieveResponse) bool) error {
	req.Stream = true
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	resp, err := c.post(ctx, "/v1/retrieve", req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for sc.Scan() {
		var line struct {
			api.RetrieveResponse
			Error string `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return fmt.Errorf("client: decoding a streamed line: %w", err)
		}
		if line.Error != "" {
			return &APIError{Status: http.StatusInternalServerError, Body: api.Error{Error: line.Error}}
		}
		if !fn(&line.RetrieveResponse) || line.Done {
			return nil
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return errors.New("client: the stream ended without its last line")
}

func (c *Client) post(ctx context.Context, path string, body any) (*http.Response, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	r.Header.Set("Content-Type", "application/json")
	// Retrieval only reads: marking it idempotent lets net/http resend it on
	// a fresh connection when a kept-alive one was closed under it (a server
	// draining or reloading its listener), instead of failing with EOF.
	r.Header.Set("Idempotency-Key", idempotencyKey())
	return c.do(r)
}

// do sends r and turns a non-2xx answer into an *APIError.
func (c *Client) do(r *http.Request) (*http.Response, error) {
	if c.token != "" {
		r.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(r)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		e := &APIError{Status: resp.StatusCode, RetryAfter: resp.Header.Get("Retry-After")}
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		if json.Unmarshal(raw, &e.Body) != nil {
			e.Body.Error = strings.TrimSpace(string(raw))
		}
		return nil, e
	}
	return resp, nil
}

func idempotencyKey() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Methods lists the server's methods and their settings.
func (c *Client) Methods(ctx context.Context) (*api.Methods, error) {
	var out api.Methods
	return &out, c.get(ctx, "/v1/methods", &out)
}

// Indexes lists the served indexes.
func (c *Client) Indexes(ctx context.Context) ([]api.Index, error) {
	var out []api.Index
	return out, c.get(ctx, "/v1/indexes", &out)
}

func (c *Client) get(ctx context.Context, path string, v any) error {
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return err
	}
	resp, err := c.do(r)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("client: decoding %s: %w", path, err)
	}
	return nil
}

// PutDocument adds document id to the index, or replaces it. When it
// returns without error the change is durable and every later request
// sees it.
func (c *Client) PutDocument(ctx context.Context, index, id string, d api.Document) (*api.WriteResponse, error) {
	return c.write(ctx, http.MethodPut, documentPath(index, id), d)
}

// DeleteDocument deletes document id (every passage cut from it).
func (c *Client) DeleteDocument(ctx context.Context, index, id string) (*api.WriteResponse, error) {
	return c.write(ctx, http.MethodDelete, documentPath(index, id), nil)
}

// CommitDocuments commits changes together, all or none.
func (c *Client) CommitDocuments(ctx context.Context, index string, changes []api.DocumentChange) (*api.WriteResponse, error) {
	return c.write(ctx, http.MethodPost, "/v1/indexes/"+url.PathEscape(index)+"/documents", api.DocumentsRequest{Changes: changes})
}

// Refit fits the index's LSA basis again and remakes its vectors (an
// admin key; the index's writes wait meanwhile).
func (c *Client) Refit(ctx context.Context, index string) (*api.RefitResponse, error) {
	resp, err := c.post(ctx, "/v1/indexes/"+url.PathEscape(index)+"/refit", nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out api.RefitResponse
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("client: decoding the refit's answer: %w", err)
	}
	return &out, nil
}

func documentPath(index, id string) string {
	return "/v1/indexes/" + url.PathEscape(index) + "/documents/" + url.PathEscape(id)
}

// write sends a write request (never resent: an add is not idempotent).
func (c *Client) write(ctx context.Context, method, path string, body any) (*api.WriteResponse, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	r, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		r.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.do(r)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out api.WriteResponse
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("client: decoding %s: %w", path, err)
	}
	return &out, nil
}
