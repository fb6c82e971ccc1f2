// Package client is a Go client of the mediagen API: typed requests and
// answers for every route, the error envelope as *APIError, retries of
// what may succeed when sent again (429 and 503, honouring Retry-After;
// a lost connection only when the request is safe to repeat), and Wait
// helpers that poll a generation or a long-form video until it is final.
//
//	c := client.New("http://127.0.0.1:8080", os.Getenv("MEDIAGEN_API_KEY"))
//	g, err := c.Generate(ctx, client.GenerateRequest{Model: "provider-a", ModelVersion: "theta-4-fast",
//		Input: map[string]any{"prompt": "a red fox in the snow"}})
//	if err != nil { ... }
//	st, err := c.WaitGeneration(ctx, g.UUID, client.WaitOptions{})
//	var apiErr *client.APIError
//	if errors.As(err, &apiErr) && apiErr.Code == "insufficient_credits" { ... }
//
// Every call takes a context; canceling it stops the request, a retry's
// wait and a Wait's polling at once. The package depends only on the
// standard library.
package client

import (
	"bytes"
	"cmp"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Defaults of New.
const (
	DefaultMaxRetries   = 4
	DefaultMaxRetryWait = 30 * time.Second
	DefaultRetryBase    = 500 * time.Millisecond
)

// Client calls one mediagen service. Make it with New; its fields may be
// changed before use, not while calls run.
type Client struct {
	// BaseURL is the service's root, such as http://127.0.0.1:8080 or the
	// ApiUrl output of the deployment.
	BaseURL string
	// StreamURL is where the event streams are (the StreamUrl output of a
	// deployment, whose HTTP API cannot stream); "" is BaseURL, as for the
	// local runtime.
	StreamURL string
	// APIKey is sent as Authorization: Bearer; identity-provider tokens
	// work on the status routes too.
	APIKey string
	HTTP   *http.Client
	// MaxRetries is how often a request is sent again after an answer
	// that may succeed later (see APIError.Temporary) or a failed
	// connection; 0 sends each request once. A 503 or a failed connection
	// is retried only for a request that is safe to repeat: a GET, or a
	// POST with its Idempotency-Key (the service may have done the work
	// before the answer was lost). Any other answer is final: a 500, and a
	// 502 whose failed record already exists, are not sent again.
	MaxRetries int
	// MaxRetryWait bounds one wait between tries. A Retry-After longer
	// than this is not waited for: the call returns the *APIError, whose
	// RetryAfter says when to come back.
	MaxRetryWait time.Duration
	// RetryBase is the first backoff when the answer names no
	// Retry-After; it doubles each try, with jitter.
	RetryBase time.Duration
	UserAgent string
	// Sleep waits d, or until ctx ends with its error: every wait of the
	// client (a retry's, a Wait's poll interval) goes through it. nil
	// waits on a timer; tests give one that moves a clock instead.
	Sleep func(ctx context.Context, d time.Duration) error
}

// New is a client of the service at baseURL with the given API key.
func New(baseURL, apiKey string) *Client {
	return &Client{
		BaseURL: strings.TrimRight(baseURL, "/"), APIKey: apiKey,
		HTTP:       &http.Client{Timeout: 60 * time.Second},
		MaxRetries: DefaultMaxRetries, MaxRetryWait: DefaultMaxRetryWait, RetryBase: DefaultRetryBase,
		UserAgent: "mediagen-go-client",
	}
}

// APIError is an answer other than 2xx. Code and Message come from the
// service's error envelope; an answer without one (a gateway's own error)
// gets Code "http_<status>" and its body, shortened, as Message.
type APIError struct {
	Status    int
	Code      string
	Message   string
	Details   []FieldError
	RequestID string
	// GenerationID (a generation's UUID) or VideoID names the record a
	// create wrote, and failed, before it answered this error (a 502 when
	// the provider refused or was unavailable): it is in the lists with
	// status failed, and nothing was charged.
	GenerationID, VideoID string
	// RetryAfter is the wait the service asked for (429), 0 if none.
	RetryAfter time.Duration
}

// FieldError is one bad field of a rejected request.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s: %s", e.Status, e.Code, e.Message)
	for i, d := range e.Details {
		sep := "; "
		if i == 0 {
			sep = " ("
		}
		fmt.Fprintf(&b, "%s%s: %s", sep, d.Field, d.Message)
		if i == len(e.Details)-1 {
			b.WriteString(")")
		}
	}
	return b.String()
}

// Temporary reports whether the same request may succeed later: a 429
// (over the rate limit), a 503 (the service or its gateway is busy) and a
// 409 idempotency_key_in_progress (the first request with the key is still
// running). Every other answer is the service's final word on the request:
// a 4xx about it, a 500, or a 502 whose failed record already exists.
func (e *APIError) Temporary() bool {
	switch e.Status {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		return true
	case http.StatusConflict:
		return e.Code == "idempotency_key_in_progress"
	}
	return false
}

type envelope struct {
	Error struct {
		Code         string       `json:"code"`
		Message      string       `json:"message"`
		Details      []FieldError `json:"details"`
		GenerationID string       `json:"generation_id"`
		VideoID      string       `json:"video_id"`
	} `json:"error"`
	RequestID string `json:"request_id"`
}

// unkeyedPaths are the POST routes that keep no Idempotency-Key: a key's
// creation answers its secret, which the service never stores.
var unkeyedPaths = []string{"/api/account/keys"}

// Do sends one API request and decodes a 2xx JSON answer into out (when
// out is not nil). body, when not nil, is sent as JSON. It is what the
// typed methods use, and serves routes this package has no method for yet.
// A POST carries an Idempotency-Key, made once per call and the same on
// every retry, so that the service can answer a retried POST without
// doing the work twice (except on the routes that keep none, which are
// then never sent again after a lost answer).
func (c *Client) Do(ctx context.Context, method, path string, body, out any) error {
	return c.doWith(ctx, method, path, body, out, nil)
}

// doWith is Do with extra request headers (nil: none).
func (c *Client) doWith(ctx context.Context, method, path string, body, out any, extra http.Header) error {
	var raw []byte
	if body != nil {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			return fmt.Errorf("%s %s: encode the body: %w", method, path, err)
		}
	}
	header := http.Header{}
	header.Set("Accept", "application/json")
	if c.APIKey != "" {
		header.Set("Authorization", "Bearer "+c.APIKey)
	}
	if raw != nil {
		header.Set("Content-Type", "application/json")
	}
	if method == http.MethodPost && !slices.Contains(unkeyedPaths, path) {
		header.Set("Idempotency-Key", newKey())
	}
	for k, vs := range extra {
		header[k] = vs
	}
	resp, err := c.send(ctx, method, c.BaseURL+path, header, raw)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s %s: decode the answer: %w", method, path, err)
	}
	return nil
}

// send sends a request, retrying what may succeed (see MaxRetries), and
// returns a 2xx answer for the caller to read and close; any other answer
// is an *APIError.
func (c *Client) send(ctx context.Context, method, rawURL string, header http.Header, body []byte) (*http.Response, error) {
	// Safe to repeat: a read, a PUT (an upload of the same bytes to the
	// same key), or a request whose repeat the service answers from its
	// first answer.
	repeatable := method == http.MethodGet || method == http.MethodPut || header.Get("Idempotency-Key") != ""
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, method, rawURL, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		if body == nil {
			req.Body, req.GetBody, req.ContentLength = nil, nil, 0
		}
		req.Header = header.Clone()
		if c.UserAgent != "" {
			req.Header.Set("User-Agent", c.UserAgent)
		}
		resp, err := c.httpClient().Do(req)
		var apiErr *APIError
		switch {
		case err != nil && ctx.Err() != nil:
			return nil, ctx.Err()
		case err != nil:
			// The connection failed, maybe after the request arrived.
			if !repeatable {
				return nil, err
			}
		case resp.StatusCode < 300:
			return resp, nil
		default:
			apiErr = readError(resp)
			resp.Body.Close()
			// A 503 may come from a gateway that gave up while the work
			// went on: only a request safe to repeat is sent again.
			if !apiErr.Temporary() || (apiErr.Status == http.StatusServiceUnavailable && !repeatable) {
				return nil, apiErr
			}
		}
		if attempt >= c.MaxRetries {
			if apiErr != nil {
				return nil, apiErr
			}
			return nil, err
		}
		wait := c.backoff(attempt)
		if apiErr != nil && apiErr.RetryAfter > 0 {
			if apiErr.RetryAfter > c.maxRetryWait() {
				return nil, apiErr // the caller decides whether to wait that long
			}
			wait = apiErr.RetryAfter
		}
		if err := c.wait(ctx, wait); err != nil {
			return nil, err
		}
	}
}

func (c *Client) httpClient() *http.Client { return cmp.Or(c.HTTP, http.DefaultClient) }

func (c *Client) maxRetryWait() time.Duration {
	return cmp.Or(max(c.MaxRetryWait, 0), DefaultMaxRetryWait)
}

// backoff is the wait before try attempt+1: RetryBase doubled per try,
// with up to 50 % jitter, at most MaxRetryWait.
func (c *Client) backoff(attempt int) time.Duration {
	d := cmp.Or(max(c.RetryBase, 0), DefaultRetryBase) << min(attempt, 16)
	d += time.Duration(rand.Int64N(int64(d)/2 + 1))
	return min(d, c.maxRetryWait())
}

func (c *Client) wait(ctx context.Context, d time.Duration) error {
	if c.Sleep != nil {
		return c.Sleep(ctx, d)
	}
	return sleep(ctx, d)
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

// readError turns an answer other than 2xx into an *APIError.
func readError(resp *http.Response) *APIError {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	e := &APIError{Status: resp.StatusCode, RetryAfter: retryAfter(resp.Header.Get("Retry-After"))}
	var env envelope
	if json.Unmarshal(raw, &env) == nil && env.Error.Code != "" {
		e.Code, e.Message, e.Details, e.RequestID = env.Error.Code, env.Error.Message, env.Error.Details, env.RequestID
		e.GenerationID, e.VideoID = env.Error.GenerationID, env.Error.VideoID
		return e
	}
	e.Code = "http_" + strconv.Itoa(resp.StatusCode)
	e.Message = strings.TrimSpace(string(raw))
	if len(e.Message) > 200 {
		e.Message = e.Message[:200] + "…"
	}
	if e.Message == "" {
		e.Message = http.StatusText(resp.StatusCode)
	}
	return e
}

// retryAfter reads Retry-After: seconds or an HTTP date; 0 if absent.
func retryAfter(v string) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}

func newKey() string {
	b := make([]byte, 16)
	_, _ = crand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// pathEscape escapes an id for a path segment.
func pathEscape(id string) string { return url.PathEscape(id) }

// errNoOutput is returned by downloads of a status without outputs.
var errNoOutput = errors.New("no output to download")

// do sends a request with Do and decodes the answer into a T.
func do[T any](ctx context.Context, c *Client, method, path string, body any) (T, error) {
	var out T
	err := c.Do(ctx, method, path, body, &out)
	return out, err
}
