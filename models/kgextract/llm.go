package kgextract

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// PromptVersion names the extraction prompt; it is part of the cache key,
// so a changed prompt never reuses replies to the old one.
const PromptVersion = "gleaner-kg-v1"

// extractionPrompt asks for the strict JSON format validate checks.
const extractionPrompt = `You extract a knowledge graph from a text for a retrieval index.
Return only one JSON object, no prose, of this form:
{"entities": [{"name": "...", "type": "...", "description": "..."}],
 "relationships": [{"source": "...", "target": "...", "description": "...", "weight": 1}]}
Rules:
- entities: every person, organization, place, event, work, date-bearing fact holder or other
  named thing in the text. name: as written in the text. type: one upper-case word such as
  PERSON, ORGANIZATION, GEO, EVENT, WORK. description: one or two sentences, from the text only,
  of what the text says about it.
- relationships: pairs of those entities the text clearly relates. source and target: names
  exactly as in "entities". description: one sentence saying how they are related, from the
  text only. weight: the strength of the relation, a number from 1 (weak) to 10 (strong).
- Use nothing but the text. If it names nothing, return {"entities": [], "relationships": []}.`

// LLMOptions configures an OpenAI-compatible chat-completions extractor.
// Start from DefaultLLMOptions and set BaseURL and Model.
type LLMOptions struct {
	BaseURL string // the API root, e.g. http://localhost:8000/v1 (POSTs to BaseURL/chat/completions)
	Model   string
	APIKey  string // sent as a bearer token when set; pass it in, never read here from the environment
	// Client sends the requests (nil: a plain http.Client; Timeout bounds each request).
	Client *http.Client
	// Timeout bounds one request, > 0.
	Timeout time.Duration
	// MaxRetries is how many times a request is retried after a 429, a 5xx,
	// a network error, a timeout or an invalid reply, ≥ 0.
	MaxRetries int
	// Backoff is the first wait before a retry, > 0; it doubles each time up
	// to MaxBackoff (a Retry-After header is honoured up to MaxBackoff).
	Backoff, MaxBackoff time.Duration
	// Concurrency bounds the requests in flight across all callers, ≥ 1.
	Concurrency int
	// MaxOutputTokens is the reply's max_tokens, ≥ 1.
	MaxOutputTokens int
	// CacheDir, when set, keeps every valid reply keyed by (model, prompt
	// version, text hash), so an interrupted build resumes without paying
	// twice. It is created if missing.
	CacheDir string
	// Count counts tokens when the server's reply has no usage (nil: 0).
	Count func(string) int
	// Logger receives retry warnings (nil: slog.Default()).
	Logger *slog.Logger
}

// DefaultLLMOptions: 2-minute requests, 5 retries from 1 s to 30 s, 4 in
// flight, 4,096 output tokens, no cache.
func DefaultLLMOptions() LLMOptions {
	return LLMOptions{Timeout: 2 * time.Minute, MaxRetries: 5, Backoff: time.Second, MaxBackoff: 30 * time.Second,
		Concurrency: 4, MaxOutputTokens: 4096}
}

// Validate checks the options without replacing any value.
func (o LLMOptions) Validate() error {
	u, err := url.Parse(o.BaseURL)
	switch {
	case o.BaseURL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return fmt.Errorf("kgextract: llm: base URL %q: want http(s)://host[:port]/path, e.g. http://localhost:8000/v1", o.BaseURL)
	case strings.TrimSpace(o.Model) == "":
		return errors.New("kgextract: llm: a model name is required")
	case o.Timeout <= 0:
		return fmt.Errorf("kgextract: llm: timeout must be > 0, got %v", o.Timeout)
	case o.MaxRetries < 0:
		return fmt.Errorf("kgextract: llm: retries must be ≥ 0, got %d", o.MaxRetries)
	case o.Backoff <= 0 || o.MaxBackoff < o.Backoff:
		return fmt.Errorf("kgextract: llm: backoff must be > 0 and ≤ max backoff, got %v and %v", o.Backoff, o.MaxBackoff)
	case o.Concurrency < 1:
		return fmt.Errorf("kgextract: llm: concurrency must be ≥ 1, got %d", o.Concurrency)
	case o.MaxOutputTokens < 1:
		return fmt.Errorf("kgextract: llm: max output tokens must be ≥ 1, got %d", o.MaxOutputTokens)
	}
	return nil
}

// LLM extracts with a chat-completions server. It is safe for concurrent
// use; at most Concurrency requests are in flight.
type LLM struct {
	o     LLMOptions
	sem   chan struct{}
	log   *slog.Logger
	cache *replyCache
}

// NewLLM validates o and prepares the cache folder.
func NewLLM(o LLMOptions) (*LLM, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Client == nil {
		o.Client = &http.Client{CheckRedirect: sameHostOnly}
	}
	l := &LLM{o: o, sem: make(chan struct{}, o.Concurrency), log: o.Logger}
	if l.log == nil {
		l.log = slog.Default()
	}
	if o.CacheDir != "" {
		c, err := openCache(o.CacheDir)
		if err != nil {
			return nil, err
		}
		l.cache = c
	}
	return l, nil
}

// Name implements Extractor.
func (l *LLM) Name() string { return "llm:" + l.o.Model + ":" + PromptVersion }

// PromptTokens is the extraction prompt's size in count's tokens, for cost
// estimates.
func PromptTokens(count func(string) int) int { return count(extractionPrompt) }

// Extract implements Extractor: one request per text (retried as the
// options say), or none when the cache holds a valid reply.
func (l *LLM) Extract(ctx context.Context, text string) (Graph, Usage, error) {
	key := cacheKey(l.o.Model, text)
	if l.cache != nil {
		if e, ok := l.cache.get(key, l.log); ok {
			g, _, err := parseReply(e.Content)
			if err == nil {
				return g, Usage{CacheHits: 1, CachedInput: e.Input, CachedOutput: e.Output}, nil
			}
			l.log.Warn("kgextract: ignoring an invalid cached reply", "key", key, "err", err)
		}
	}
	var u Usage
	var last error
	for attempt := 0; attempt <= l.o.MaxRetries; attempt++ {
		if attempt > 0 {
			u.Retries++
			if err := sleep(ctx, l.wait(attempt, last)); err != nil {
				return Graph{}, u, err
			}
		}
		content, in, out, err := l.complete(ctx, text)
		if err != nil {
			var fatal *fatalError
			if errors.As(err, &fatal) || ctx.Err() != nil {
				return Graph{}, u, err
			}
			last = err
			l.log.Warn("kgextract: llm request failed, retrying", "attempt", attempt+1, "of", l.o.MaxRetries+1, "err", err)
			continue
		}
		u.Calls++
		u.InputTokens += in
		u.OutputTokens += out
		g, repairs, err := parseReply(content)
		if err != nil {
			last = fmt.Errorf("invalid reply: %w", err)
			l.log.Warn("kgextract: llm reply invalid, retrying", "attempt", attempt+1, "err", err)
			continue
		}
		if repairs > 0 {
			l.log.Debug("kgextract: llm reply repaired", "records", repairs, "key", key[:12])
		}
		if l.cache != nil {
			if err := l.cache.put(key, cacheEntry{Model: l.o.Model, Prompt: PromptVersion, Content: content, Input: in, Output: out}); err != nil {
				return Graph{}, u, err
			}
		}
		return g, u, nil
	}
	return Graph{}, u, fmt.Errorf("kgextract: llm %s: gave up after %d attempts on text %s…: %w", l.o.BaseURL, l.o.MaxRetries+1, key[:12], last)
}

// fatalError is a reply no retry can mend (400, 401, 403, 404, …).
type fatalError struct{ error }

// retryAfter carries a server's Retry-After wait.
type retryAfter struct {
	error
	wait time.Duration
}

func (l *LLM) wait(attempt int, last error) time.Duration {
	d := l.o.Backoff << min(attempt-1, 30)
	var ra *retryAfter
	if errors.As(last, &ra) && ra.wait > d {
		d = ra.wait
	}
	return min(d, l.o.MaxBackoff)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatRequest struct {
	Model          string            `json:"model"`
	Messages       []chatMessage     `json:"messages"`
	Temperature    float64           `json:"temperature"`
	MaxTokens      int               `json:"max_tokens"`
	ResponseFormat map[string]string `json:"response_format"`
}

type chatResponse struct {
	Choices []struct {
		Message chatMessage `json:"message"`
	} `json:"choices"`
	Usage *struct {
		Prompt     int `json:"prompt_tokens"`
		Completion int `json:"completion_tokens"`
	} `json:"usage"`
}

// complete sends one chat-completions request and returns the reply's
// content and its input and output tokens.
func (l *LLM) complete(ctx context.Context, text string) (string, int, int, error) {
	select {
	case l.sem <- struct{}{}:
	case <-ctx.Done():
		return "", 0, 0, ctx.Err()
	}
	defer func() { <-l.sem }()
	body, _ := json.Marshal(chatRequest{Model: l.o.Model, Temperature: 0, MaxTokens: l.o.MaxOutputTokens,
		Messages:       []chatMessage{{"system", extractionPrompt}, {"user", text}},
		ResponseFormat: map[string]string{"type": "json_object"}})
	rctx, cancel := context.WithTimeout(ctx, l.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, strings.TrimSuffix(l.o.BaseURL, "/")+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return "", 0, 0, &fatalError{err}
	}
	req.Header.Set("Content-Type", "application/json")
	if l.o.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+l.o.APIKey)
	}
	resp, err := l.o.Client.Do(req)
	if err != nil {
		return "", 0, 0, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return "", 0, 0, err
	}
	if err := statusError(resp, raw); err != nil {
		return "", 0, 0, err
	}
	var cr chatResponse
	if err := json.Unmarshal(raw, &cr); err != nil || len(cr.Choices) == 0 {
		return "", 0, 0, fmt.Errorf("not a chat-completions reply: %s", snippet(raw))
	}
	content := cr.Choices[0].Message.Content
	in, out := 0, 0
	switch {
	case cr.Usage != nil && !validUsage(cr.Usage.Prompt, cr.Usage.Completion):
		return "", 0, 0, fmt.Errorf("the reply's usage is %d prompt and %d completion tokens: want 0 to %d each", cr.Usage.Prompt, cr.Usage.Completion, maxUsage)
	case cr.Usage != nil:
		in, out = cr.Usage.Prompt, cr.Usage.Completion
	case l.o.Count != nil:
		in, out = l.o.Count(extractionPrompt)+l.o.Count(text), l.o.Count(content)
	}
	return content, in, out, nil
}

// maxUsage bounds the tokens one reply may claim: a server's bug (or a
// hostile one) must not make the cost report negative or overflow it.
const maxUsage = 1 << 30

func validUsage(in, out int) bool { return in >= 0 && out >= 0 && in <= maxUsage && out <= maxUsage }

// sameHostOnly is the default client's redirect policy: a redirect to
// another host would send it the API key's request body (the user's text),
// so it is refused with an error naming both hosts.
func sameHostOnly(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if from := via[0].URL; req.URL.Host != from.Host || req.URL.Scheme != from.Scheme {
		return &fatalError{fmt.Errorf("the LLM server at %s redirected to %s://%s; gleaner follows redirects only within one host (set LLMOptions.Client to follow others)", from.Host, req.URL.Scheme, req.URL.Host)}
	}
	return nil
}

// statusError sorts a non-200 reply into retryable and fatal.
func statusError(resp *http.Response, raw []byte) error {
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	err := fmt.Errorf("%s from %s: %s", resp.Status, resp.Request.URL, snippet(raw))
	switch {
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		if s, e := strconv.Atoi(resp.Header.Get("Retry-After")); e == nil && s > 0 {
			return &retryAfter{err, time.Duration(s) * time.Second}
		}
		return err
	case resp.StatusCode == http.StatusRequestTimeout:
		return err
	}
	return &fatalError{err}
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return strings.ToValidUTF8(s, "?")
}

func cacheKey(model, text string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00", model, PromptVersion)
	h.Write([]byte(text))
	return hex.EncodeToString(h.Sum(nil))
}
