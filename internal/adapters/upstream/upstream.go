// Package upstream speaks to the hosted generation providers: the Replicate
// predictions protocol (replicate.go) and fal's queue protocol (fal.go),
// behind one Provider interface, and the Router that holds one provider
// per upstream of the routing file.
//
// A create (submit) is never sent twice once it may have reached the
// provider: each duplicate is a paid job. It is retried only when it
// certainly started nothing (the connection was refused, 429, 503); any
// other failure after the body may have been sent is an
// *UnknownOutcomeError, which the caller resolves (FindJob, Cancel).
package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/clock"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// Job states, in the Replicate protocol's words (fal's are mapped onto them).
const (
	statusStarting   = "starting"
	StatusProcessing = "processing"
	StatusSucceeded  = "succeeded"
	StatusFailed     = "failed"
	StatusCanceled   = "canceled"
	// StatusAborted is a prediction stopped before it started (Replicate).
	StatusAborted = "aborted"
)

// Result is a job's state as the provider reports it.
type Result struct {
	ID     string
	Status string
	// Outputs are the output URLs in order.
	Outputs []string
	Error   string
	// Progress is the provider's own figure of the work done, 0-100, read
	// from its logs (progressOf); 0 when it reported none.
	Progress int
}

// progressBar is a progress line as models print it (tqdm, which
// Replicate's and fal's logs carry): "  45%|████▌     | 45/100 [00:10<00:12]".
var progressBar = regexp.MustCompile(`(?m)(\d{1,3})%\|`)

// progressOf is the last progress figure in a job's logs, 0-100; 0 when
// the logs hold none.
func progressOf(logs string) int {
	all := progressBar.FindAllStringSubmatch(logs, -1)
	if len(all) == 0 {
		return 0
	}
	n, err := strconv.Atoi(all[len(all)-1][1])
	if err != nil {
		return 0
	}
	return min(n, 100)
}

// Final reports whether the job will not change any more.
func (r Result) Final() bool {
	switch r.Status {
	case StatusSucceeded, StatusFailed, StatusCanceled, StatusAborted:
		return true
	}
	return false
}

// Provider is one upstream's protocol client.
type Provider interface {
	// Submit starts a job; webhook ("" for none) is called when it ends.
	Submit(ctx context.Context, model string, input map[string]any, webhook string) (domain.UpstreamJob, error)
	Get(ctx context.Context, job domain.UpstreamJob) (Result, error)
	Cancel(ctx context.Context, job domain.UpstreamJob) error
	// InputTypes are the model's published input field types (nil when
	// the protocol publishes none).
	InputTypes(ctx context.Context, model string) (map[string]string, error)
	// FindJob looks among recent jobs for one created since since whose
	// callback URL contains marker; false when there is none or the
	// protocol cannot list jobs.
	FindJob(ctx context.Context, marker string, since time.Time) (domain.UpstreamJob, bool, error)
	// VerifyWebhook checks a callback's signature.
	VerifyWebhook(ctx context.Context, h http.Header, body []byte, now time.Time) error
	// DecodeWebhook reads a callback's body.
	DecodeWebhook(body []byte) (Result, error)
}

// Error is an answer of the provider that is not a success.
type Error struct {
	Op         string
	StatusCode int
	Message    string
	// RetryAfter is the wait the provider asked for on 429, if any.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	return fmt.Sprintf("upstream %s: HTTP %d: %s", e.Op, e.StatusCode, e.Message)
}

// Temporary reports whether trying again later may succeed.
func (e *Error) Temporary() bool {
	return e.StatusCode == http.StatusTooManyRequests || e.StatusCode >= 500
}

// ErrMalformed is an answer that does not follow the protocol.
var ErrMalformed = errors.New("malformed upstream answer")

// ErrNotStarted is a create that certainly started nothing: the provider
// was unreachable, or answered 429 or 503 to every try. Another route may
// take the job.
var ErrNotStarted = errors.New("the upstream started nothing")

// UnknownOutcomeError is a create that may have started a job: it timed
// out or failed after the body was sent, was answered with another 5xx, or
// its answer could not be read.
type UnknownOutcomeError struct{ Cause error }

func (e *UnknownOutcomeError) Error() string {
	return "upstream create, outcome unknown: " + e.Cause.Error()
}

func (e *UnknownOutcomeError) Unwrap() error { return e.Cause }

// Tuning is shared by both protocols' clients; zero values take defaults.
type Tuning struct {
	HTTP *http.Client
	// Attempts bounds the tries of one call.
	Attempts int
	// BaseBackoff is the first wait between tries; it doubles each time.
	BaseBackoff time.Duration
	// MaxRetryAfter caps a provider's Retry-After, so a call never hangs.
	MaxRetryAfter time.Duration
	// MaxAnswer bounds an answer read; default maxAnswerBytes.
	MaxAnswer int
	// Clock times the waits between tries (a backoff, a provider's
	// Retry-After); default the wall clock.
	Clock clock.Clock
}

// maxAnswerBytes bounds an answer read. It is far above any answer to an
// accepted request (a create echoes its input, which the service bounds at
// a few MB), so a larger one is a broken provider.
const maxAnswerBytes = 32 << 20

func (t Tuning) client() *http.Client {
	if t.HTTP != nil {
		return t.HTTP
	}
	return &http.Client{Timeout: 30 * time.Second}
}

func (t Tuning) attempts() int {
	if t.Attempts <= 0 {
		return 4
	}
	return t.Attempts
}

func (t Tuning) backoff(attempt int) time.Duration {
	b := t.BaseBackoff
	if b <= 0 {
		b = 200 * time.Millisecond
	}
	return b << (attempt - 1)
}

func (t Tuning) maxRetryAfter() time.Duration {
	if t.MaxRetryAfter > 0 {
		return t.MaxRetryAfter
	}
	return 10 * time.Second
}

// WorstCase is the longest one call may take: every try timed out by the
// HTTP client, with the longest wait between tries (a capped Retry-After
// or the backoff). A caller's own deadline (a Lambda's timeout) must be
// well beyond it, or a slow create ends with the caller killed rather than
// with the call's error.
func (t Tuning) WorstCase() time.Duration {
	total := time.Duration(t.attempts()) * t.client().Timeout
	for attempt := 1; attempt < t.attempts(); attempt++ {
		total += max(t.backoff(attempt), t.maxRetryAfter())
	}
	return total
}

// request is one HTTP call of a protocol.
type request struct {
	op, method, url string
	header          http.Header
	body            any
	// create marks a call that may start a paid job.
	create bool
}

// answer is a provider's successful answer.
type answer struct {
	status int
	body   []byte
}

// do runs a call with bounded retries. A read (create false) is retried on
// transport errors, 429 and 5xx. A create is retried only when it certainly
// started nothing, and its other failures are *UnknownOutcomeError.
func (t Tuning) do(ctx context.Context, r request) (answer, error) {
	var payload []byte
	if r.body != nil {
		var err error
		if payload, err = json.Marshal(r.body); err != nil {
			return answer{}, fmt.Errorf("upstream %s: encode: %w", r.op, err)
		}
	}
	var lastErr error
	for attempt := 1; ; attempt++ {
		a, retry, wait, err := t.once(ctx, r, payload)
		if err == nil {
			return a, nil
		}
		lastErr = err
		if !retry || attempt >= t.attempts() {
			break
		}
		if wait == 0 {
			wait = t.backoff(attempt)
		}
		if !clock.Sleep(ctx, clock.Or(t.Clock), wait) {
			err := fmt.Errorf("upstream %s: %w (last error: %v)", r.op, ctx.Err(), lastErr)
			if r.create {
				// Every try so far certainly started nothing.
				return answer{}, fmt.Errorf("%w: %v", ErrNotStarted, err)
			}
			return answer{}, err
		}
	}
	return answer{}, lastErr
}

// once makes one request and says whether another try is allowed.
func (t Tuning) once(ctx context.Context, r request, payload []byte) (a answer, retry bool, wait time.Duration, err error) {
	var body io.Reader
	if payload != nil {
		body = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, r.url, body)
	if err != nil {
		return answer{}, false, 0, fmt.Errorf("upstream %s: %w", r.op, err)
	}
	for k, v := range r.header {
		req.Header[k] = v
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "mediagen")
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := t.client().Do(req)
	if err != nil {
		err = fmt.Errorf("upstream %s: %w", r.op, redact(err))
		switch {
		case r.create && notSent(err):
			return answer{}, true, 0, fmt.Errorf("%w: %v", ErrNotStarted, err)
		case r.create:
			return answer{}, false, 0, &UnknownOutcomeError{Cause: err}
		case ctx.Err() != nil:
			return answer{}, false, 0, err
		}
		return answer{}, true, 0, err
	}
	defer resp.Body.Close()
	limit := t.MaxAnswer
	if limit <= 0 {
		limit = maxAnswerBytes
	}
	// An answer that declares more than the cap is refused unread.
	var raw []byte
	var rerr error
	if resp.ContentLength > int64(limit) {
		rerr = fmt.Errorf("%w: answer over %d bytes (%d declared)", ErrMalformed, limit, resp.ContentLength)
	} else {
		raw, rerr = io.ReadAll(io.LimitReader(resp.Body, int64(limit)+1))
	}
	if rerr == nil && len(raw) > limit {
		rerr = fmt.Errorf("%w: answer over %d bytes", ErrMalformed, limit)
	}
	if resp.StatusCode >= 300 {
		e := &Error{Op: r.op, StatusCode: resp.StatusCode, Message: problemMessage(raw)}
		if resp.StatusCode == http.StatusTooManyRequests {
			e.RetryAfter = min(retryAfter(resp.Header.Get("Retry-After"), clock.Or(t.Clock).Now()), t.maxRetryAfter())
		}
		switch {
		case r.create && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable):
			return answer{}, true, e.RetryAfter, fmt.Errorf("%w: %w", ErrNotStarted, e)
		case r.create && resp.StatusCode >= 500:
			return answer{}, false, 0, &UnknownOutcomeError{Cause: e}
		case r.create, !e.Temporary():
			return answer{}, false, 0, e
		}
		return answer{}, true, e.RetryAfter, e
	}
	if rerr != nil {
		err := fmt.Errorf("upstream %s: read answer: %w", r.op, rerr)
		if r.create {
			return answer{}, false, 0, &UnknownOutcomeError{Cause: err}
		}
		return answer{}, true, 0, err
	}
	return answer{status: resp.StatusCode, body: raw}, false, 0, nil
}

// notSent reports whether a transport error happened before the request
// could reach the provider: the connection was never made.
func notSent(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns)
}

// redact drops the URL from transport errors to keep logs short.
func redact(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}

func retryAfter(h string, now time.Time) time.Duration {
	if h == "" {
		return 0
	}
	if secs, err := strconv.Atoi(strings.TrimSpace(h)); err == nil && secs >= 0 {
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// problemMessage reads a provider's error body: problem+json (title,
// detail, invalid_fields), FastAPI's detail list, or {"error": ...}.
func problemMessage(raw []byte) string {
	var p struct {
		Title         string          `json:"title"`
		Detail        json.RawMessage `json:"detail"`
		Error         string          `json:"error"`
		Message       string          `json:"message"`
		InvalidFields []struct {
			Field       string `json:"field"`
			Description string `json:"description"`
		} `json:"invalid_fields"`
	}
	if json.Unmarshal(raw, &p) != nil {
		return truncate(strings.TrimSpace(string(raw)), 300)
	}
	var parts []string
	var detail string
	if json.Unmarshal(p.Detail, &detail) != nil {
		var list []struct {
			Loc []any  `json:"loc"`
			Msg string `json:"msg"`
		}
		if json.Unmarshal(p.Detail, &list) == nil {
			for _, d := range list {
				loc := make([]string, 0, len(d.Loc))
				for _, l := range d.Loc {
					loc = append(loc, fmt.Sprint(l))
				}
				parts = append(parts, strings.Join(loc, ".")+": "+d.Msg)
			}
		}
	}
	for _, s := range []string{detail, p.Error, p.Message} {
		if s != "" {
			parts = append([]string{s}, parts...)
			break
		}
	}
	if len(parts) == 0 && p.Title != "" {
		parts = append(parts, p.Title)
	}
	for _, f := range p.InvalidFields {
		// Replicate's detail often lists the invalid fields already: each
		// is said once.
		if part := f.Field + ": " + f.Description; !strings.Contains(detail, part) {
			parts = append(parts, part)
		}
	}
	if len(parts) == 0 {
		return truncate(strings.TrimSpace(string(raw)), 300)
	}
	return truncate(strings.Join(parts, "; "), 300)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// outputURLs takes the output URLs from a result in document order: a
// string or a list of strings is the outputs themselves; under an object,
// the values of "url" keys and strings that are http(s) or data URLs are.
// Other values (seeds, sizes, content types) are skipped.
func outputURLs(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	var out []string
	if err := walkURLs(dec, "", &out); err != nil {
		return nil, fmt.Errorf("%w: output: %v", ErrMalformed, err)
	}
	return out, nil
}

func walkURLs(dec *json.Decoder, key string, out *[]string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch v := tok.(type) {
	case json.Delim:
		switch v {
		case '{':
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				ks, _ := k.(string)
				if err := walkURLs(dec, ks, out); err != nil {
					return err
				}
			}
		case '[':
			for dec.More() {
				if err := walkURLs(dec, key, out); err != nil {
					return err
				}
			}
		}
		_, err := dec.Token() // the closing delimiter
		return err
	case string:
		if key == "" || key == "url" || isURL(v) {
			*out = append(*out, v)
		}
	}
	return nil
}

func isURL(s string) bool {
	return strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "data:")
}
