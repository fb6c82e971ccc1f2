package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/core/apikey"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// scopedStore is a keyStore with one key of the given scopes and limit.
func scopedStore(t *testing.T, scopes []domain.Scope, limit string, lastUsed time.Time) (*keyStore, apikey.Key) {
	t.Helper()
	key, err := apikey.New()
	if err != nil {
		t.Fatal(err)
	}
	st := &keyStore{countingStore: countingStore{account: domain.Account{UserID: "u1", Plan: domain.PlanPro}},
		keys: map[string]domain.APIKey{key.Hash: {Hash: key.Hash, Prefix: key.Prefix, UserID: "u1", Scopes: scopes,
			DailyCreditLimit: decimal.RequireFromString(limit), LastUsedAt: lastUsed}}}
	return st, key
}

// envelopeOf reads an error answer's code and message.
func envelopeOf(t *testing.T, resp Response) (string, string) {
	t.Helper()
	var env envelope
	if err := json.Unmarshal([]byte(resp.Body), &env); err != nil {
		t.Fatalf("body %s: %v", resp.Body, err)
	}
	return env.Error.Code, env.Error.Message
}

// Each route's scope is checked whether the gateway's authorizer answered
// (its context, as API Gateway hands it on) or the route authenticates by
// itself; a refused request is answered 403 insufficient_scope naming the
// scope, after being counted, and the route does not run. The route that
// runs finds the caller (key, scopes, limit) in its context.
func TestRoutesAnswerInsufficientScopeForAKeyWithoutTheirScope(t *testing.T) {
	tests := []struct {
		name    string
		scopes  []domain.Scope
		access  Access
		allowed bool
	}{
		{"read key on a read route", []domain.Scope{domain.ScopeRead}, readAccess, true},
		{"read key on a generate route", []domain.Scope{domain.ScopeRead}, generateAccess, false},
		{"read key on an estimate", []domain.Scope{domain.ScopeRead}, estimateAccess, true},
		{"generate key on a read route", []domain.Scope{domain.ScopeGenerate}, readAccess, false},
		{"generate and read key on the keys", []domain.Scope{domain.ScopeGenerate, domain.ScopeRead}, adminAccess, false},
		{"admin key on the keys", []domain.Scope{domain.ScopeAdmin}, adminAccess, true},
		{"a key stored before scopes: everything", nil, adminAccess, true},
	}
	for _, tt := range tests {
		for _, viaAuthorizer := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s, authorizer %v", tt.name, viaAuthorizer), func(t *testing.T) {
				st, key := scopedStore(t, tt.scopes, "12.50", time.Time{})
				g := &Gate{Store: st, Log: quiet}
				req := Request{RouteKey: "POST /x", Headers: map[string]string{"authorization": "Bearer " + key.Plain}}
				if viaAuthorizer {
					res, err := g.Authorize(context.Background(), AuthorizerRequest{Headers: req.Headers})
					if err != nil {
						t.Fatal(err)
					}
					req.Authorizer = asGateway(t, res.Context)
				}
				var seen *domain.Caller
				h := g.AuthedUser(tt.access, func(ctx context.Context, _ Request, _ string) (Response, error) {
					c, _ := domain.CallerFrom(ctx)
					seen = &c
					return jsonResponse(http.StatusOK, map[string]string{}), nil
				})
				resp, err := h(context.Background(), req)
				if err != nil {
					t.Fatal(err)
				}
				if st.counted != 1 || resp.Headers["X-RateLimit-Limit"] == "" {
					t.Errorf("%d counts, limit header %q; every authenticated answer is counted and says its limit", st.counted, resp.Headers["X-RateLimit-Limit"])
				}
				if !tt.allowed {
					code, msg := envelopeOf(t, resp)
					if resp.StatusCode != http.StatusForbidden || code != "insufficient_scope" || !strings.Contains(msg, string(tt.access.Scope)) || seen != nil {
						t.Errorf("HTTP %d %s %q, route ran: %v; want 403 insufficient_scope naming %s", resp.StatusCode, code, msg, seen != nil, tt.access.Scope)
					}
					return
				}
				want := domain.Caller{KeyPrefix: key.Prefix, Scopes: domain.KeyScopes(tt.scopes), DailyCreditLimit: decimal.RequireFromString("12.50")}
				if resp.StatusCode != http.StatusOK || seen == nil || seen.KeyPrefix != want.KeyPrefix ||
					!reflect.DeepEqual(seen.Scopes, want.Scopes) || !seen.DailyCreditLimit.Equal(want.DailyCreditLimit) {
					t.Errorf("HTTP %d %s, caller %+v; want 200 and %+v", resp.StatusCode, resp.Body, seen, want)
				}
			})
		}
	}
}

// A token holds every scope and names no key, so its holds carry no key
// budget; it is taken where the route takes tokens.
func TestATokenHoldsEveryScope(t *testing.T) {
	st := &keyStore{countingStore: countingStore{account: domain.Account{UserID: "u1", Plan: domain.PlanPro}}}
	g := &Gate{Store: st, Tokens: fakeTokens{}, Log: quiet}
	var seen domain.Caller
	h := g.AuthedUser(adminAccess, func(ctx context.Context, _ Request, _ string) (Response, error) {
		seen, _ = domain.CallerFrom(ctx)
		return jsonResponse(http.StatusOK, map[string]string{}), nil
	})
	resp, _ := h(context.Background(), Request{RouteKey: "POST /api/account/keys",
		Headers: map[string]string{"authorization": "Bearer " + fakeToken("u1", time.Now().Add(time.Hour))}})
	if resp.StatusCode != http.StatusOK || seen.KeyPrefix != "" || !reflect.DeepEqual(seen.Scopes, domain.AllScopes) || !seen.DailyCreditLimit.IsZero() {
		t.Errorf("HTTP %d %s, caller %+v; want 200 with every scope and no key", resp.StatusCode, resp.Body, seen)
	}
}

// An answer of an authorizer from before scopes (user and plan, no
// scopes), still cached while a deploy goes on, is not taken as every
// scope: the route authenticates the key itself.
func TestAnAnswerWithoutScopesIsCheckedAfresh(t *testing.T) {
	st, key := scopedStore(t, []domain.Scope{domain.ScopeRead}, "0", time.Time{})
	g := &Gate{Store: st, Log: quiet}
	h := g.AuthedUser(generateAccess, func(context.Context, Request, string) (Response, error) {
		return jsonResponse(http.StatusOK, map[string]string{}), nil
	})
	resp, _ := h(context.Background(), Request{RouteKey: "POST /api/generations/generate",
		Headers:    map[string]string{"authorization": "Bearer " + key.Plain},
		Authorizer: map[string]any{"user_id": "u1", "plan": "pro", "rate_limit": float64(100)}})
	if code, _ := envelopeOf(t, resp); resp.StatusCode != http.StatusForbidden || code != "insufficient_scope" {
		t.Errorf("HTTP %d %s, want 403 insufficient_scope", resp.StatusCode, resp.Body)
	}
}

// The authorizer says the key's prefix, scopes and limit, and notes its
// use only when the stored one is older than the granularity: a key in use
// costs a write per interval, not per request.
func TestTheAuthorizerNotesAKeysUseOnlyWhenTheStoredOneIsStale(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		lastUsed time.Time
		touched  bool
	}{
		{"never used", time.Time{}, true},
		{"a minute ago", now.Add(-time.Minute), false},
		{"just within the granularity", now.Add(-domain.LastUsedGranularity + time.Second), false},
		{"past it", now.Add(-domain.LastUsedGranularity - time.Second), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, key := scopedStore(t, []domain.Scope{domain.ScopeGenerate, domain.ScopeRead}, "10", tt.lastUsed)
			g := &Gate{Store: st, Now: func() time.Time { return now }, Log: quiet}
			res, err := g.Authorize(context.Background(), AuthorizerRequest{Headers: map[string]string{"authorization": "Bearer " + key.Plain}})
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]any{"user_id": "u1", "plan": "pro", "rate_limit": 100, "key_prefix": key.Prefix,
				"scopes": "generate,read", "daily_credit_limit": "10.00", "key_ancestors": ""}
			if !reflect.DeepEqual(res.Context, want) {
				t.Errorf("context %v, want %v", res.Context, want)
			}
			if got := len(st.touched) == 1 && st.touched[0] == key.Hash; got != tt.touched || len(st.touched) > 1 {
				t.Errorf("touched %v, want a touch: %v", st.touched, tt.touched)
			}
		})
	}
}

// A hold refused for the key's budget answers 402 key_budget_exceeded
// saying the limit, the spend and when it resets, however deep the error
// is wrapped.
func TestAKeyBudgetRefusalIs402WithTheLimitSpendAndReset(t *testing.T) {
	budget := &domain.KeyBudgetExceededError{KeyPrefix: "mgk_a", Limit: decimal.NewFromInt(10), Spent: decimal.RequireFromString("7.4"),
		Required: decimal.RequireFromString("5.2"), ResetAt: time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)}
	for _, err := range []error{budget, fmt.Errorf("create generation: %w", fmt.Errorf("hold w: %w", budget))} {
		e := classify(err)
		for _, part := range []string{"10.00", "7.40", "5.20", "2026-11-25T00:00:00Z"} {
			if !strings.Contains(e.Message, part) {
				t.Errorf("%q lacks %s", e.Message, part)
			}
		}
		if e.Status != http.StatusPaymentRequired || e.Code != "key_budget_exceeded" {
			t.Errorf("%v: HTTP %d %s, want 402 key_budget_exceeded", err, e.Status, e.Code)
		}
	}
	var scopeErr error = &domain.InsufficientScopeError{Reason: "no"}
	if e := classify(fmt.Errorf("create key: %w", scopeErr)); e.Status != http.StatusForbidden || e.Code != "insufficient_scope" || e.Message != "no" {
		t.Errorf("scope: %+v", e)
	}
}
