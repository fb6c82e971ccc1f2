package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/core/apikey"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/store"
)

// AuthStore is what authentication and rate limiting read, and where the
// authorizer notes a key's use.
type AuthStore interface {
	GetAPIKey(ctx context.Context, hash string) (domain.APIKey, error)
	GetAccount(ctx context.Context, userID string) (domain.Account, error)
	CountRequest(ctx context.Context, userID string, at time.Time) (int, error)
	TouchAPIKey(ctx context.Context, hash string, at, staleBefore time.Time) error
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
// until when it holds (zero: its verifier does not say); caller is who it
// makes the request's caller.
type credential struct {
	token  bool
	until  time.Time
	key    domain.APIKey // a key's stored form (empty for a token)
	caller domain.Caller
}

// Access is what a route asks of its caller: the scope an API key must
// hold, and whether identity-provider tokens (which hold every scope) are
// taken too. Each route declares one.
type Access struct {
	Scope  domain.Scope
	Tokens bool
}

// The routes' access: reading takes tokens (the GET routes); pricing reads
// but is a POST, which takes API keys only; starting or stopping paid work
// needs generate; managing the account's keys needs admin, or a token.
var (
	readAccess     = Access{Scope: domain.ScopeRead, Tokens: true}
	estimateAccess = Access{Scope: domain.ScopeRead}
	generateAccess = Access{Scope: domain.ScopeGenerate}
	adminAccess    = Access{Scope: domain.ScopeAdmin, Tokens: true}
)

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

	// authLogs throttles the lines of refused credentials: a flood of
	// them (guessed keys, a client retrying a revoked one) logs a line a
	// minute per key prefix, and one for tokens, with the count held back.
	// Made on first use (refusedLogs).
	authLogs *domain.LogThrottle
}

// authLogsInit guards the making of a gate's authLogs: a Gate is a struct
// literal in its wirings, and copies of it share the throttle once made.
var authLogsInit sync.Mutex

func (g *Gate) refusedLogs() *domain.LogThrottle {
	authLogsInit.Lock()
	defer authLogsInit.Unlock()
	if g.authLogs == nil {
		g.authLogs = &domain.LogThrottle{}
	}
	return g.authLogs
}

func (g *Gate) now() time.Time { return domain.Now(g.Now) }

// logRefused logs a refused credential at WARN, at most once a minute per
// throttle key, saying how many refusals of that key it held back.
func (g *Gate) logRefused(ctx context.Context, msg, throttleKey string, attrs ...any) {
	ok, held := g.refusedLogs().Allow(throttleKey, g.now())
	if !ok {
		return
	}
	if held > 0 {
		attrs = append(attrs, "suppressed", held)
	}
	g.log().WarnContext(ctx, msg, attrs...)
}

func (g *Gate) log() *slog.Logger { return domain.Logger(g.Log) }

// requestLog is the logger of a request (and its account and key, when
// known). It
// is made only for an answer that logs: a handler's With formats its
// attributes at once, which was a few percent of a status request.
func (g *Gate) requestLog(req Request, userID, keyPrefix string) *slog.Logger {
	log := g.log().With("request_id", requestID(req), "route", req.RouteKey)
	if userID != "" {
		log = log.With("user_id", userID)
	}
	if keyPrefix != "" {
		log = log.With("key_prefix", keyPrefix)
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
			g.logRefused(ctx, "unknown api key", "key:"+prefix, "key_prefix", prefix)
			return domain.Account{}, cred, unauthorized("invalid API key")
		}
		if err != nil {
			return domain.Account{}, cred, fmt.Errorf("authenticate: %w", err)
		}
		if k.Revoked() {
			g.logRefused(ctx, "revoked api key", "key:"+prefix, "key_prefix", prefix)
			return domain.Account{}, cred, unauthorized("invalid API key")
		}
		cred.key, cred.caller = k, k.Caller()
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
			g.logRefused(ctx, "token refused", "token", "reason", err.Error())
			return domain.Account{}, cred, unauthorized("invalid token")
		}
		userID, cred.caller = sub, domain.TokenCaller()
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
// the rate limit, or why the credentials failed; for a key, its prefix,
// scopes and daily limit, which the route checks and the holds record; and,
// for a token, that it was one and until when it holds. API Gateway takes
// only strings, numbers and booleans there: the scopes are one string.
const (
	authUserID     = "user_id"
	authPlan       = "plan"
	authRateLimit  = "rate_limit"
	authError      = "auth_error"
	authCredential = "credential"  // "token" for an identity-provider token; absent for an API key
	authTokenUntil = "token_until" // Unix seconds from which the token no longer holds
	authKeyPrefix  = "key_prefix"
	authScopes     = "scopes"             // "generate,read"
	authDailyLimit = "daily_credit_limit" // "10.00"; absent for none
	// authAncestors are the keys above the key with their limits, nearest
	// first ("mgk_a:10.00,mgk_b:", no limit after an empty colon); "" for
	// an owner's key.
	authAncestors = "key_ancestors"
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
// says a token was used and until when it holds, and for a key its scopes;
// the route (Gate.account, Gate.authed) refuses a token where its Access
// takes none and one past its expiry, and a key without its scope. Nothing
// is counted here: the rate limit is counted by the route, on every
// request, cached or not. A key's use is noted here, when its stored last
// use is older than domain.LastUsedGranularity: one conditional write per
// key and interval, never one per request.
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
	if !cred.token {
		c := cred.caller
		out[authKeyPrefix], out[authScopes] = c.KeyPrefix, domain.JoinScopes(c.Scopes, ",")
		if c.DailyCreditLimit.IsPositive() {
			out[authDailyLimit] = domain.FormatCredits(c.DailyCreditLimit)
		}
		out[authAncestors] = formatAncestors(c.Ancestors)
		g.noteUse(ctx, cred.key)
	}
	return AuthorizerResult{IsAuthorized: true, Context: out}, nil
}

// noteUse records a key's use when the stored time is stale. A failure is
// logged, not answered: the request is authenticated either way.
func (g *Gate) noteUse(ctx context.Context, k domain.APIKey) {
	now := g.now()
	staleBefore := now.Add(-domain.LastUsedGranularity)
	if !k.LastUsedAt.Before(staleBefore) {
		return
	}
	if err := g.Store.TouchAPIKey(ctx, k.Hash, now, staleBefore); err != nil {
		g.log().WarnContext(ctx, "could not note the key's use", "key_prefix", k.Prefix, "error", err)
	}
}

// callerOf reads the caller from the authorizer's answer; false when the
// answer is a key's without its scopes (an authorizer from before scopes,
// still cached during a deploy), which the route then checks afresh rather
// than guess.
func callerOf(auth map[string]any) (domain.Caller, bool) {
	if kind, _ := auth[authCredential].(string); kind == credentialToken {
		return domain.TokenCaller(), true
	}
	prefix, _ := auth[authKeyPrefix].(string)
	scopes, ok := auth[authScopes].(string)
	if prefix == "" || !ok {
		return domain.Caller{}, false
	}
	c := domain.Caller{KeyPrefix: prefix}
	for _, name := range strings.Split(scopes, ",") {
		if sc, err := domain.ParseScope(name); err == nil {
			c.Scopes = append(c.Scopes, sc)
		}
	}
	if limit, ok := auth[authDailyLimit].(string); ok {
		d, err := decimal.NewFromString(limit)
		if err != nil {
			return domain.Caller{}, false
		}
		c.DailyCreditLimit = d
	}
	// Absent: an answer cached before keys had ancestors, for a key made
	// before then, which has none.
	var err error
	if c.Ancestors, err = parseAncestors(stringOf(auth[authAncestors])); err != nil {
		return domain.Caller{}, false
	}
	return c, true
}

func stringOf(v any) string {
	s, _ := v.(string)
	return s
}

// formatAncestors is the authorizer context's form of a key's ancestors.
func formatAncestors(ancestors []domain.KeyLimit) string {
	parts := make([]string, len(ancestors))
	for i, a := range ancestors {
		parts[i] = a.Prefix + ":"
		if a.DailyCreditLimit.IsPositive() {
			parts[i] += domain.FormatCredits(a.DailyCreditLimit)
		}
	}
	return strings.Join(parts, ",")
}

// parseAncestors reads formatAncestors.
func parseAncestors(s string) ([]domain.KeyLimit, error) {
	if s == "" {
		return nil, nil
	}
	var out []domain.KeyLimit
	for _, part := range strings.Split(s, ",") {
		prefix, limit, ok := strings.Cut(part, ":")
		if !ok || prefix == "" {
			return nil, fmt.Errorf("ancestor %q is not prefix:limit", part)
		}
		a := domain.KeyLimit{Prefix: prefix}
		if limit != "" {
			d, err := decimal.NewFromString(limit)
			if err != nil {
				return nil, fmt.Errorf("ancestor %q: %w", part, err)
			}
			a.DailyCreditLimit = d
		}
		out = append(out, a)
	}
	return out, nil
}

// account finds the caller's account and what authenticated it (who the
// caller is; the key's stored form when it was read here): from the
// authorizer's context when the gateway ran it, else by authenticating
// here (sam local invoke, direct calls, or an answer that does not say
// enough). With userOnly, and the authorizer's plan and limit at hand, the
// account is not read again: the result then has only UserID, Plan and the
// limit. The context may be the gateway's cached answer for this
// Authorization header, given first on another route and up to the TTL
// ago: a token is refused here on a route that does not take tokens, and
// once it expired.
func (g *Gate) account(ctx context.Context, req Request, allowToken, userOnly bool) (domain.Account, credential, error) {
	if auth := req.Authorizer; auth != nil {
		kind, _ := auth[authCredential].(string)
		if kind == credentialToken {
			if !allowToken {
				return domain.Account{}, credential{}, unauthorized("invalid API key")
			}
			if until, ok := contextInt(auth[authTokenUntil]); ok && !g.now().Before(time.Unix(int64(until), 0)) {
				return domain.Account{}, credential{}, unauthorized("invalid token")
			}
		}
		if msg, ok := auth[authError].(string); ok {
			return domain.Account{}, credential{}, unauthorized(msg)
		}
		caller, known := callerOf(auth)
		cred := credential{token: kind == credentialToken, caller: caller}
		if userID, ok := auth[authUserID].(string); ok && userID != "" && known {
			plan, hasPlan := auth[authPlan].(string)
			limit, hasLimit := contextInt(auth[authRateLimit])
			// CustomRateLimit set to the authorizer's limit gives that limit
			// back from RateLimit: the enterprise plan's own, the other
			// plans' fixed one.
			if a := (domain.Account{UserID: userID, Plan: domain.Plan(plan), CustomRateLimit: limit}); userOnly && hasPlan && hasLimit && a.RateLimit() == limit {
				return a, cred, nil
			}
			a, err := g.accountOf(ctx, userID, !userOnly)
			return a, cred, err
		}
	}
	return g.authenticate(ctx, header(req, "Authorization"), allowToken, !userOnly)
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

// withoutIdempotency is the gate for a POST whose answer must never be
// kept (it carries a secret).
func (g *Gate) withoutIdempotency() *Gate {
	c := *g
	c.Idempotency = nil
	return &c
}

// Authed wraps a route with authentication, the rate limit, the scope
// check and the error envelope; access says who may call it. The route
// gets the whole account, read for this request, and finds its caller in
// ctx (domain.CallerFrom).
func (g *Gate) Authed(access Access, h AuthedHandler) Handler {
	return g.authed(access, false, h)
}

// AuthedUser is Authed for a route that needs only the caller's user id:
// behind the gateway's authorizer, which read the key and the account, it
// reads neither again.
func (g *Gate) AuthedUser(access Access, h UserHandler) Handler {
	return g.authed(access, true, func(ctx context.Context, req Request, a domain.Account) (Response, error) {
		return h(ctx, req, a.UserID)
	})
}

func (g *Gate) authed(access Access, userOnly bool, h AuthedHandler) Handler {
	return func(ctx context.Context, req Request) (Response, error) {
		ctx, a, cred, limits, err := g.admit(ctx, req, access, userOnly)
		var resp Response
		if err == nil {
			if g.Idempotency != nil {
				resp, err = g.Idempotency.wrap(ctx, req, a, h)
			} else {
				resp, err = h(ctx, req, a)
			}
		}
		if err != nil {
			resp = errorResponse(ctx, g.requestLog(req, a.UserID, cred.caller.KeyPrefix), req, err)
		}
		for k, v := range limits {
			resp.Headers[k] = v
		}
		return resp, nil
	}
}

// admit is what every authenticated route asks first: the account and
// what authenticated it (from the authorizer's context, or by
// authenticating here, as the stream function behind a function URL does:
// then with the key's stored form), the request counted
// against the rate limit (limits are the headers every answer carries,
// nil when the request was refused before it was counted), and the
// scope. ctx then names the caller (domain.CallerFrom).
func (g *Gate) admit(ctx context.Context, req Request, access Access, userOnly bool) (context.Context, domain.Account, credential, map[string]string, error) {
	a, cred, err := g.account(ctx, req, access.Tokens, userOnly)
	if err != nil {
		return ctx, domain.Account{}, credential{}, nil, err
	}
	caller := cred.caller
	limits, err := g.rateLimit(ctx, a)
	if err != nil {
		return ctx, a, cred, nil, err
	}
	// After the count, as any other refusal of an authenticated request;
	// before the idempotency claim and the route, so a refused request
	// leaves nothing behind.
	if !caller.Has(access.Scope) {
		return ctx, a, cred, limits, &domain.InsufficientScopeError{Reason: fmt.Sprintf(
			"this API key lacks the %s scope, which %s needs (it holds: %s)",
			access.Scope, req.RouteKey, domain.JoinScopes(caller.Scopes, ", "))}
	}
	return domain.WithCaller(ctx, caller), a, cred, limits, nil
}
