package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mediagen-dev/mediagen/shared/apikey"
	"github.com/mediagen-dev/mediagen/shared/domain"
	"github.com/mediagen-dev/mediagen/shared/store"
)

// AuthStore is what authentication and rate limiting read.
type AuthStore interface {
	GetAPIKey(ctx context.Context, hash string) (domain.APIKey, error)
	GetAccount(ctx context.Context, userID string) (domain.Account, error)
	CountRequest(ctx context.Context, userID string, at time.Time) (int, error)
}

// headerReader is a store that can read an account without its usage, all
// that authentication needs (the embedded store then reads one row, not the
// usage rows too). Other stores are read whole: one item.
type headerReader interface {
	GetAccountHeader(ctx context.Context, userID string) (domain.Account, error)
}

// keyAccountReader is a store that reads a key and its account's header in
// one request (the embedded store: one statement, where a key and then its
// account were two on the status path's every request).
type keyAccountReader interface {
	GetAPIKeyAccount(ctx context.Context, hash string) (domain.APIKey, domain.Account, error)
}

// TokenVerifier checks identity-provider tokens and names their subject.
type TokenVerifier interface {
	Verify(ctx context.Context, token string) (string, error)
}

// expiringVerifier is a TokenVerifier that also says until when a token
// holds (jwtauth.Verifier). The authorizer hands that instant to the route,
// which refuses the token from then on even when API Gateway answers from
// its authorizer cache instead of asking again.
type expiringVerifier interface {
	VerifyUntil(ctx context.Context, token string) (string, time.Time, error)
}

// credential is what authenticated a request: an API key, or a token and
// until when it holds (zero: its verifier does not say).
type credential struct {
	token bool
	until time.Time
}

// Gate authenticates a request and counts it against its account's limit.
type Gate struct {
	Store AuthStore
	// Tokens, when set, accepts identity-provider tokens on the routes that
	// allow them.
	Tokens TokenVerifier
	// Idempotency, when set, honours Idempotency-Key on POST routes. It is
	// an interface so that a function serving only GET routes, whose gate
	// has none, does not link the idempotency table's calls at all (the
	// deploy tests derive each function's permissions from its calls).
	Idempotency IdempotencyGuard
	Now         func() time.Time
	Log         *slog.Logger
}

func (g *Gate) now() time.Time { return domain.Now(g.Now) }

func (g *Gate) log() *slog.Logger { return domain.Logger(g.Log) }

// requestLog is the logger of a request (and its account, when known). It
// is made only for an answer that logs: a handler's With formats its
// attributes at once, which was a few percent of a status request.
func (g *Gate) requestLog(req Request, userID string) *slog.Logger {
	log := g.log().With("request_id", requestID(req), "route", req.RouteKey)
	if userID != "" {
		log = log.With("user_id", userID)
	}
	return log
}

func unauthorized(msg string) *Error {
	return &Error{Status: http.StatusUnauthorized, Code: "unauthorized", Message: msg,
		Headers: map[string]string{"WWW-Authenticate": `Bearer realm="mediagen"`}}
}

// authenticate finds the account behind the Authorization header, whole or
// (header) without holds and usage, and says what authenticated it (a key
// or a token: the latter also on failure, once the credential was taken for
// a token). Every failure is the same 401 to the caller; the log says which
// it was (by key prefix, never the key).
func (g *Gate) authenticate(ctx context.Context, authorization string, allowToken, whole bool) (domain.Account, credential, error) {
	scheme, secret, ok := strings.Cut(strings.TrimSpace(authorization), " ")
	secret = strings.TrimSpace(secret)
	if !ok || !strings.EqualFold(scheme, "Bearer") || secret == "" {
		return domain.Account{}, credential{}, unauthorized("send Authorization: Bearer <API key>")
	}
	var userID string
	var cred credential
	if strings.HasPrefix(secret, "mgk_") {
		prefix, hash, err := apikey.Parse(secret)
		if err != nil {
			return domain.Account{}, cred, unauthorized("invalid API key")
		}
		var k domain.APIKey
		var a domain.Account
		r, joined := g.Store.(keyAccountReader)
		if joined && !whole {
			k, a, err = r.GetAPIKeyAccount(ctx, hash)
		} else {
			k, err = g.Store.GetAPIKey(ctx, hash)
		}
		if errors.Is(err, domain.ErrNotFound) {
			g.log().InfoContext(ctx, "unknown api key", "key_prefix", prefix)
			return domain.Account{}, cred, unauthorized("invalid API key")
		}
		if err != nil {
			return domain.Account{}, cred, fmt.Errorf("authenticate: %w", err)
		}
		if k.Revoked() {
			g.log().InfoContext(ctx, "revoked api key", "key_prefix", prefix)
			return domain.Account{}, cred, unauthorized("invalid API key")
		}
		if joined && !whole {
			return a, cred, nil
		}
		userID = k.UserID
	} else if allowToken && g.Tokens != nil && strings.Count(secret, ".") == 2 {
		cred.token = true
		var sub string
		var err error
		if v, ok := g.Tokens.(expiringVerifier); ok {
			sub, cred.until, err = v.VerifyUntil(ctx, secret)
		} else {
			sub, err = g.Tokens.Verify(ctx, secret)
		}
		if err != nil {
			g.log().InfoContext(ctx, "token refused", "reason", err.Error())
			return domain.Account{}, cred, unauthorized("invalid token")
		}
		userID = sub
	} else {
		return domain.Account{}, cred, unauthorized("invalid API key")
	}
	a, err := g.accountOf(ctx, userID, whole)
	return a, cred, err
}

// accountOf reads the authenticated account, whole or its header; a key or
// token whose account is gone is invalid.
func (g *Gate) accountOf(ctx context.Context, userID string, whole bool) (domain.Account, error) {
	read := g.Store.GetAccount
	if h, ok := g.Store.(headerReader); ok && !whole {
		read = h.GetAccountHeader
	}
	a, err := read(ctx, userID)
	if errors.Is(err, domain.ErrNotFound) {
		return domain.Account{}, unauthorized("invalid credentials")
	}
	if err != nil {
		return domain.Account{}, fmt.Errorf("authenticate: %w", err)
	}
	return a, nil
}

// rateLimit counts the request in the account's current minute and returns
// the headers every authenticated answer carries, or a 429.
func (g *Gate) rateLimit(ctx context.Context, a domain.Account) (map[string]string, error) {
	now := g.now()
	count, err := g.Store.CountRequest(ctx, a.UserID, now)
	if err != nil {
		return nil, fmt.Errorf("rate limit: %w", err)
	}
	limit := a.RateLimit()
	reset := store.MinuteWindow(now).Add(time.Minute)
	remaining := limit - count
	if remaining < 0 {
		remaining = 0
	}
	headers := map[string]string{
		"X-RateLimit-Limit":     strconv.Itoa(limit),
		"X-RateLimit-Remaining": strconv.Itoa(remaining),
		"X-RateLimit-Reset":     strconv.FormatInt(reset.Unix(), 10),
	}
	if count > limit {
		retry := int(reset.Sub(now).Seconds() + 0.999)
		if retry < 1 {
			retry = 1
		}
		headers["Retry-After"] = strconv.Itoa(retry)
		return nil, &Error{Status: http.StatusTooManyRequests, Code: "rate_limited",
			Message: fmt.Sprintf("the %s plan allows %d requests per minute; retry after %d s", a.Plan, limit, retry),
			Headers: headers}
	}
	return headers, nil
}

// AuthedHandler is a route handler that runs for an authenticated account.
type AuthedHandler func(ctx context.Context, req Request, a domain.Account) (Response, error)

// UserHandler is a route handler that needs only who the caller is.
type UserHandler func(ctx context.Context, req Request, userID string) (Response, error)

// Authorizer context keys the Lambda authorizer hands to the routes: the
// account and its plan and per-minute limit, which is all a route needs for
// the rate limit, or why the credentials failed; and, for a token, that it
// was one and until when it holds.
const (
	authUserID     = "user_id"
	authPlan       = "plan"
	authRateLimit  = "rate_limit"
	authError      = "auth_error"
	authCredential = "credential"  // "token" for an identity-provider token; absent for an API key
	authTokenUntil = "token_until" // Unix seconds from which the token no longer holds
)

const credentialToken = "token"

// Authorize is the HTTP API's Lambda authorizer (payload 2.0, simple
// responses). It lets every request through and tells the route either the
// account or why the credentials failed: an HTTP API can only answer 403 to
// a denial and cannot give it a body, while the spec wants 401 with the
// error envelope, which the route then answers.
//
// API Gateway caches the answer for the authorizer's TTL, keyed by the
// Authorization header alone, and hands it to every route of the API (the
// template's identity source; docs/deploy.md). So the answer must not
// depend on the route: tokens are checked on every route, and the context
// says a token was used and until when it holds; the route (Gate.account)
// refuses a token where tokens are not accepted (the POST routes) and one
// past its expiry. Nothing is counted here: the rate limit is counted by
// the route, on every request, cached or not.
func (g *Gate) Authorize(ctx context.Context, req AuthorizerRequest) (AuthorizerResult, error) {
	authorization := req.Headers["authorization"]
	for k, v := range req.Headers {
		if strings.EqualFold(k, "Authorization") {
			authorization = v
		}
	}
	a, cred, err := g.authenticate(ctx, authorization, true, false)
	out := map[string]any{}
	if cred.token {
		out[authCredential] = credentialToken
		if !cred.until.IsZero() {
			out[authTokenUntil] = cred.until.Unix()
		}
	}
	var refused *Error
	switch {
	case errors.As(err, &refused):
		out[authError] = refused.Message
		return AuthorizerResult{IsAuthorized: true, Context: out}, nil
	case err != nil:
		// A store outage: the gateway answers 500 and nothing runs.
		return AuthorizerResult{}, err
	}
	out[authUserID], out[authPlan], out[authRateLimit] = a.UserID, string(a.Plan), a.RateLimit()
	return AuthorizerResult{IsAuthorized: true, Context: out}, nil
}

// account finds the caller: from the authorizer's context when the gateway
// ran it, else by authenticating here (sam local invoke, direct calls).
// With userOnly, and the authorizer's plan and limit at hand, the account
// is not read again: the result then has only UserID, Plan and the limit.
// The context may be the gateway's cached answer for this Authorization
// header, given first on another route and up to the TTL ago: a token is
// refused here on a route that does not take tokens, and once it expired.
func (g *Gate) account(ctx context.Context, req Request, allowToken, userOnly bool) (domain.Account, error) {
	if auth := req.Authorizer; auth != nil {
		if kind, _ := auth[authCredential].(string); kind == credentialToken {
			if !allowToken {
				return domain.Account{}, unauthorized("invalid API key")
			}
			if until, ok := contextInt(auth[authTokenUntil]); ok && !g.now().Before(time.Unix(int64(until), 0)) {
				return domain.Account{}, unauthorized("invalid token")
			}
		}
		if msg, ok := auth[authError].(string); ok {
			return domain.Account{}, unauthorized(msg)
		}
		if userID, ok := auth[authUserID].(string); ok && userID != "" {
			plan, hasPlan := auth[authPlan].(string)
			limit, hasLimit := contextInt(auth[authRateLimit])
			// CustomRateLimit set to the authorizer's limit gives that limit
			// back from RateLimit: the enterprise plan's own, the other
			// plans' fixed one.
			if a := (domain.Account{UserID: userID, Plan: domain.Plan(plan), CustomRateLimit: limit}); userOnly && hasPlan && hasLimit && a.RateLimit() == limit {
				return a, nil
			}
			return g.accountOf(ctx, userID, !userOnly)
		}
	}
	a, _, err := g.authenticate(ctx, header(req, "Authorization"), allowToken, !userOnly)
	return a, err
}

// contextInt reads a number of the authorizer's context: an int in process,
// a JSON number (float64) or a string through API Gateway.
func contextInt(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int64:
		return int(n), true
	case float64:
		return int(n), n == float64(int(n))
	case string:
		i, err := strconv.Atoi(n)
		return i, err == nil
	}
	return 0, false
}

// Authed wraps a route with authentication, the rate limit and the error
// envelope. allowToken admits identity-provider tokens besides API keys.
// The route gets the whole account, read for this request.
func (g *Gate) Authed(allowToken bool, h AuthedHandler) Handler {
	return g.authed(allowToken, false, h)
}

// AuthedUser is Authed for a route that needs only the caller's user id:
// behind the gateway's authorizer, which read the key and the account, it
// reads neither again.
func (g *Gate) AuthedUser(allowToken bool, h UserHandler) Handler {
	return g.authed(allowToken, true, func(ctx context.Context, req Request, a domain.Account) (Response, error) {
		return h(ctx, req, a.UserID)
	})
}

func (g *Gate) authed(allowToken, userOnly bool, h AuthedHandler) Handler {
	return func(ctx context.Context, req Request) (Response, error) {
		a, err := g.account(ctx, req, allowToken, userOnly)
		if err != nil {
			return errorResponse(ctx, g.requestLog(req, ""), req, err), nil
		}
		limits, err := g.rateLimit(ctx, a)
		if err != nil {
			return errorResponse(ctx, g.requestLog(req, a.UserID), req, err), nil
		}
		var resp Response
		if g.Idempotency != nil {
			resp, err = g.Idempotency.wrap(ctx, req, a, h)
		} else {
			resp, err = h(ctx, req, a)
		}
		if err != nil {
			resp = errorResponse(ctx, g.requestLog(req, a.UserID), req, err)
		}
		for k, v := range limits {
			resp.Headers[k] = v
		}
		return resp, nil
	}
}
