package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/generation"
)

// IdempotencyStore remembers the answers to POSTs with an Idempotency-Key.
type IdempotencyStore interface {
	ClaimIdempotencyKey(ctx context.Context, r domain.IdempotencyRecord) (domain.IdempotencyRecord, bool, error)
	FinishIdempotencyKey(ctx context.Context, userID, key string, status int, body []byte) error
	ReleaseIdempotencyKey(ctx context.Context, userID, key string) error
}

// Idempotency keys.
const (
	idempotencyHeader   = "Idempotency-Key"
	replayedHeader      = "Idempotent-Replayed"
	maxIdempotencyKey   = 255
	idempotencyLifetime = 24 * time.Hour
	// defaultIdempotencyWait is how long a request waits for the first one
	// with its key to finish before answering 409.
	defaultIdempotencyWait = 10 * time.Second
)

// IdempotencyGuard runs a route under its Idempotency-Key: *Idempotency.
type IdempotencyGuard interface {
	wrap(ctx context.Context, req Request, a domain.Account, h AuthedHandler) (Response, error)
}

var _ IdempotencyGuard = (*Idempotency)(nil)

// Idempotency makes POSTs safe to retry: the first request with a key runs;
// a repeat with the same route and body within 24 h gets the first answer
// again (and pays nothing); the same key with another body is a 422. A
// repeat that arrives while the first still runs waits for its answer.
type Idempotency struct {
	Store IdempotencyStore
	// Wait bounds the wait for a request still running; default
	// defaultIdempotencyWait.
	Wait time.Duration
	Now  func() time.Time
	Log  *slog.Logger
}

// wrap runs h under the request's Idempotency-Key, if it has one.
func (i *Idempotency) wrap(ctx context.Context, req Request, a domain.Account, h AuthedHandler) (Response, error) {
	if i == nil || req.Method != http.MethodPost {
		return h(ctx, req, a)
	}
	key := header(req, idempotencyHeader)
	if key == "" {
		return h(ctx, req, a)
	}
	if len(key) > maxIdempotencyKey || !printableASCII(key) {
		return Response{}, &Error{Status: http.StatusBadRequest, Code: "invalid_request",
			Message: fmt.Sprintf("Idempotency-Key must be 1 to %d printable ASCII characters", maxIdempotencyKey)}
	}
	now := domain.Now(i.Now)
	rec := domain.IdempotencyRecord{UserID: a.UserID, Key: key, Fingerprint: fingerprint(req),
		CreatedAt: now, ExpiresAt: now.Add(idempotencyLifetime)}
	wait := i.Wait
	if wait <= 0 {
		wait = defaultIdempotencyWait
	}
	deadline := time.Now().Add(wait)
	for delay := 10 * time.Millisecond; ; delay = min(delay*2, 250*time.Millisecond) {
		existing, claimed, err := i.Store.ClaimIdempotencyKey(ctx, rec)
		switch {
		case errors.Is(err, domain.ErrConflict):
			// Released between the claim and the read: wait, then claim again.
			existing = domain.IdempotencyRecord{Fingerprint: rec.Fingerprint}
		case err != nil:
			return Response{}, err
		case claimed:
			return i.run(ctx, req, a, key, h)
		}
		if existing.Fingerprint != rec.Fingerprint {
			return Response{}, &Error{Status: http.StatusUnprocessableEntity, Code: "idempotency_key_reused",
				Message: "this Idempotency-Key was used with another request; use a new key for a new request"}
		}
		if existing.StatusCode != 0 {
			resp := jsonResponse(existing.StatusCode, nil)
			resp.Body = string(existing.Body)
			resp.Headers[replayedHeader] = "true"
			return resp, nil
		}
		if time.Now().Add(delay).After(deadline) {
			return Response{}, &Error{Status: http.StatusConflict, Code: "idempotency_key_in_progress",
				Message: "a request with this Idempotency-Key is still running; retry shortly",
				Headers: map[string]string{"Retry-After": "1"}}
		}
		select {
		case <-ctx.Done():
			return Response{}, ctx.Err()
		case <-time.After(delay):
		}
	}
}

// run handles the request that claimed the key and keeps its answer. A
// server error is not kept, so that a retry runs again, except a provider's
// refusal: its record is failed and the provider's word is final, so a
// retry gets the same answer rather than a second refused job. No answer
// over domain.MaxIdempotentAnswer is kept: an error over it changed
// nothing and is forgotten (a repeat runs again and gets it anew); a
// success over it is kept as a small 409 that says the work was done.
func (i *Idempotency) run(ctx context.Context, req Request, a domain.Account, key string, h AuthedHandler) (Response, error) {
	resp, err := h(ctx, req, a)
	if err != nil {
		resp = errorResponse(ctx, domain.Logger(i.Log), req, err)
	}
	tooLarge := len(resp.Body) > domain.MaxIdempotentAnswer
	if (resp.StatusCode >= 500 && !errors.Is(err, generation.ErrUpstreamRefused)) || (tooLarge && resp.StatusCode >= 300) {
		if rerr := i.Store.ReleaseIdempotencyKey(context.WithoutCancel(ctx), a.UserID, key); rerr != nil {
			return resp, errors.Join(err, rerr)
		}
		return resp, nil
	}
	kept := resp
	if tooLarge {
		kept = errorResponse(ctx, domain.Logger(i.Log), req, &Error{Status: http.StatusConflict, Code: "idempotency_answer_not_kept",
			Message: fmt.Sprintf("the first request with this Idempotency-Key succeeded (HTTP %d) and its work was done once, but its answer "+
				"was over the %d bytes kept for repeats; find the work in the list of your generations or videos", resp.StatusCode, domain.MaxIdempotentAnswer)})
	}
	// If the answer cannot be kept, the work is still done and answered: a
	// retry then waits and gets 409 until the key expires, rather than run
	// the work twice (releasing the key would allow that).
	if err := i.Store.FinishIdempotencyKey(context.WithoutCancel(ctx), a.UserID, key, kept.StatusCode, []byte(kept.Body)); err != nil {
		domain.Logger(i.Log).WarnContext(ctx, "could not keep the answer of an idempotency key", "user_id", a.UserID, "error", err)
	}
	return resp, nil
}

// fingerprint identifies a request by its route, path parameters and body.
func fingerprint(req Request) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n", req.RouteKey)
	keys := make([]string, 0, len(req.PathParameters))
	for k := range req.PathParameters {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(h, "%s=%s\n", k, req.PathParameters[k])
	}
	h.Write([]byte(req.Body))
	return hex.EncodeToString(h.Sum(nil))
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
