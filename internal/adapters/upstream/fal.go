package upstream

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// defaultFalJWKSURL is where fal publishes its webhook signing keys.
const defaultFalJWKSURL = "https://rest.alpha.fal.ai/.well-known/jwks.json"

// fal webhook headers and the clock skew a callback may have.
const (
	falHeaderRequestID = "X-Fal-Webhook-Request-Id"
	falHeaderUserID    = "X-Fal-Webhook-User-Id"
	falHeaderTimestamp = "X-Fal-Webhook-Timestamp"
	falHeaderSignature = "X-Fal-Webhook-Signature"
	falWebhookSkew     = 5 * time.Minute
	falJWKSFor         = 24 * time.Hour
)

// fal is a client of fal's queue API (as @fal-ai/client speaks it): submit
// to POST {base}/{app id}, then follow the status, response and cancel URLs
// the submit answered.
type fal struct {
	// BaseURL is the queue root, https://queue.fal.run.
	BaseURL string
	Token   string
	// JWKSURL is where the webhook keys are; default defaultFalJWKSURL.
	JWKSURL string
	Tuning

	mu     sync.Mutex
	keys   []ed25519.PublicKey
	keysAt time.Time
}

func (c *fal) header() http.Header {
	h := http.Header{}
	h.Set("Authorization", "Key "+c.Token)
	return h
}

// Submit queues a request: POST {base}/{app id}?fal_webhook=... with the
// input as the body.
func (c *fal) Submit(ctx context.Context, app string, input map[string]any, hook string) (domain.UpstreamJob, error) {
	u := strings.TrimRight(c.BaseURL, "/") + "/" + strings.Trim(app, "/")
	if hook != "" {
		u += "?" + url.Values{"fal_webhook": {hook}}.Encode()
	}
	a, err := c.do(ctx, request{op: "create", method: http.MethodPost, url: u, header: c.header(), body: input, create: true})
	if err != nil {
		return domain.UpstreamJob{}, err
	}
	var s struct {
		RequestID   string `json:"request_id"`
		StatusURL   string `json:"status_url"`
		ResponseURL string `json:"response_url"`
		CancelURL   string `json:"cancel_url"`
	}
	if err := json.Unmarshal(a.body, &s); err != nil || s.RequestID == "" {
		return domain.UpstreamJob{}, &UnknownOutcomeError{Cause: fmt.Errorf("upstream create: %w: no request_id", ErrMalformed)}
	}
	if s.StatusURL == "" || s.ResponseURL == "" || s.CancelURL == "" {
		// Older answers carry only the id: the queue's URLs are under the
		// app's owner/alias, without its sub-path (as the client builds them).
		base := strings.TrimRight(c.BaseURL, "/") + "/" + appRoot(app) + "/requests/" + url.PathEscape(s.RequestID)
		s.StatusURL, s.ResponseURL, s.CancelURL = base+"/status", base, base+"/cancel"
	}
	return domain.UpstreamJob{ID: s.RequestID, StatusURL: s.StatusURL, ResponseURL: s.ResponseURL, CancelURL: s.CancelURL}, nil
}

// appRoot is owner/alias of an app id with a sub-path.
func appRoot(app string) string {
	parts := strings.Split(strings.Trim(app, "/"), "/")
	if len(parts) > 2 {
		parts = parts[:2]
	}
	return strings.Join(parts, "/")
}

// Get reads the request's status, and its result once completed.
func (c *fal) Get(ctx context.Context, job domain.UpstreamJob) (Result, error) {
	if job.StatusURL == "" || job.ResponseURL == "" {
		return Result{}, fmt.Errorf("upstream get: %w: the job has no status URL", ErrMalformed)
	}
	// With logs=1 the queue status carries the app's logs, whose
	// progress lines are the job's own progress figure.
	a, err := c.do(ctx, request{op: "status", method: http.MethodGet, url: withQuery(job.StatusURL, "logs", "1"), header: c.header()})
	if err != nil {
		return Result{}, err
	}
	var st struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Logs   []struct {
			Message string `json:"message"`
		} `json:"logs"`
	}
	if err := json.Unmarshal(a.body, &st); err != nil {
		return Result{}, fmt.Errorf("upstream status: %w: %v", ErrMalformed, err)
	}
	switch st.Status {
	case "IN_QUEUE":
		return Result{ID: job.ID, Status: statusStarting}, nil
	case "IN_PROGRESS":
		var logs strings.Builder
		for _, l := range st.Logs {
			logs.WriteString(l.Message + "\n")
		}
		return Result{ID: job.ID, Status: StatusProcessing, Progress: progressOf(logs.String())}, nil
	case "COMPLETED":
	default:
		return Result{}, fmt.Errorf("upstream status: %w: unknown status %q", ErrMalformed, st.Status)
	}
	if st.Error != "" {
		return Result{ID: job.ID, Status: StatusFailed, Error: truncate(st.Error, 1000)}, nil
	}
	a, err = c.do(ctx, request{op: "result", method: http.MethodGet, url: job.ResponseURL, header: c.header()})
	var ue *Error
	if errors.As(err, &ue) && !ue.Temporary() {
		// The request completed with an error: its detail is the reason.
		return Result{ID: job.ID, Status: StatusFailed, Error: ue.Message}, nil
	}
	if err != nil {
		return Result{}, err
	}
	outs, err := outputURLs(a.body)
	if err != nil {
		return Result{}, err
	}
	return Result{ID: job.ID, Status: StatusSucceeded, Outputs: outs}, nil
}

// Cancel asks the queue to cancel: PUT on the cancel URL. A request that
// already completed cannot be canceled (400), which is no error here.
func (c *fal) Cancel(ctx context.Context, job domain.UpstreamJob) error {
	if job.CancelURL == "" {
		return fmt.Errorf("upstream cancel: %w: the job has no cancel URL", ErrMalformed)
	}
	_, err := c.do(ctx, request{op: "cancel", method: http.MethodPut, url: job.CancelURL, header: c.header()})
	var ue *Error
	if errors.As(err, &ue) && ue.StatusCode == http.StatusBadRequest {
		return nil
	}
	return err
}

// InputTypes: fal publishes no schema the service reads; routes give types.
func (c *fal) InputTypes(context.Context, string) (map[string]string, error) { return nil, nil }

// FindJob: the queue API cannot list requests.
func (c *fal) FindJob(context.Context, string, time.Time) (domain.UpstreamJob, bool, error) {
	return domain.UpstreamJob{}, false, nil
}

// VerifyWebhook checks fal's ED25519 signature over the request id, user
// id, timestamp and the body's SHA-256 (hex), one per line, with the keys
// of fal's JWKS (fetched, kept a day).
func (c *fal) VerifyWebhook(ctx context.Context, h http.Header, body []byte, now time.Time) error {
	reqID, user, ts, sig := h.Get(falHeaderRequestID), h.Get(falHeaderUserID), h.Get(falHeaderTimestamp), h.Get(falHeaderSignature)
	if reqID == "" || user == "" || ts == "" || sig == "" {
		return errors.New("fal webhook: signature headers missing")
	}
	secs, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return errors.New("fal webhook: bad timestamp")
	}
	if d := now.Sub(time.Unix(secs, 0)); d > falWebhookSkew || d < -falWebhookSkew {
		return errors.New("fal webhook: timestamp too far from now")
	}
	raw, err := hex.DecodeString(sig)
	if err != nil {
		return errors.New("fal webhook: signature is not hex")
	}
	keys, err := c.jwks(ctx, now)
	if err != nil {
		return err
	}
	msg := falSignedMessage(reqID, user, ts, body)
	for _, k := range keys {
		if ed25519.Verify(k, msg, raw) {
			return nil
		}
	}
	return errors.New("fal webhook: no key verifies the signature")
}

// falSignedMessage is what fal signs for a webhook.
func falSignedMessage(requestID, userID, timestamp string, body []byte) []byte {
	sum := sha256.Sum256(body)
	return []byte(strings.Join([]string{requestID, userID, timestamp, hex.EncodeToString(sum[:])}, "\n"))
}

func (c *fal) jwks(ctx context.Context, now time.Time) ([]ed25519.PublicKey, error) {
	c.mu.Lock()
	keys, at := c.keys, c.keysAt
	c.mu.Unlock()
	if len(keys) > 0 && now.Sub(at) < falJWKSFor {
		return keys, nil
	}
	u := c.JWKSURL
	if u == "" {
		u = defaultFalJWKSURL
	}
	a, err := c.do(ctx, request{op: "jwks", method: http.MethodGet, url: u})
	if err != nil {
		return nil, err
	}
	var set struct {
		Keys []struct {
			Kty string `json:"kty"`
			Crv string `json:"crv"`
			X   string `json:"x"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(a.body, &set); err != nil {
		return nil, fmt.Errorf("fal jwks: %w: %v", ErrMalformed, err)
	}
	keys = nil
	for _, k := range set.Keys {
		x, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(k.X, "="))
		if k.Kty == "OKP" && k.Crv == "Ed25519" && err == nil && len(x) == ed25519.PublicKeySize {
			keys = append(keys, ed25519.PublicKey(x))
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("fal jwks: %w: no Ed25519 key", ErrMalformed)
	}
	c.mu.Lock()
	c.keys, c.keysAt = keys, now
	c.mu.Unlock()
	return keys, nil
}

// DecodeWebhook reads fal's callback: {"request_id", "status": "OK" |
// "ERROR", "payload", "error"}.
func (c *fal) DecodeWebhook(body []byte) (Result, error) {
	var w struct {
		RequestID string          `json:"request_id"`
		Status    string          `json:"status"`
		Payload   json.RawMessage `json:"payload"`
		Error     string          `json:"error"`
	}
	if err := json.Unmarshal(body, &w); err != nil || w.RequestID == "" {
		return Result{}, fmt.Errorf("%w: not a fal webhook", ErrMalformed)
	}
	switch w.Status {
	case "OK":
		outs, err := outputURLs(w.Payload)
		if err != nil {
			return Result{}, err
		}
		return Result{ID: w.RequestID, Status: StatusSucceeded, Outputs: outs}, nil
	case "ERROR":
		reason := w.Error
		if msg := problemMessage(w.Payload); len(w.Payload) > 0 && string(w.Payload) != "null" && msg != "" {
			reason += ": " + msg
		}
		return Result{ID: w.RequestID, Status: StatusFailed, Error: truncate(reason, 1000)}, nil
	}
	return Result{}, fmt.Errorf("%w: fal webhook status %q", ErrMalformed, w.Status)
}

// withQuery is u with the query parameter name=value set.
func withQuery(u, name, value string) string {
	parsed, err := url.Parse(u)
	if err != nil {
		return u
	}
	q := parsed.Query()
	q.Set(name, value)
	parsed.RawQuery = q.Encode()
	return parsed.String()
}
