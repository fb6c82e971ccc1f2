package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/apikey"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// keyStore is countingStore with API keys.
type keyStore struct {
	countingStore
	keys map[string]domain.APIKey // by hash
}

func (s *keyStore) GetAPIKey(_ context.Context, hash string) (domain.APIKey, error) {
	if k, ok := s.keys[hash]; ok {
		return k, nil
	}
	return domain.APIKey{}, domain.ErrNotFound
}

// fakeTokens verifies "a.b.c"-shaped tokens of the form "<sub>.ok.<unix
// expiry>" and refuses the rest.
type fakeTokens struct{}

func (fakeTokens) Verify(ctx context.Context, token string) (string, error) {
	sub, _, err := fakeTokens{}.VerifyUntil(ctx, token)
	return sub, err
}

func (fakeTokens) VerifyUntil(_ context.Context, token string) (string, time.Time, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 || parts[1] != "ok" {
		return "", time.Time{}, errors.New("bad token")
	}
	exp, err := time.Parse(time.RFC3339, strings.ReplaceAll(parts[2], "_", ":"))
	if err != nil {
		return "", time.Time{}, err
	}
	return parts[0], exp, nil
}

func fakeToken(sub string, until time.Time) string {
	return sub + ".ok." + strings.ReplaceAll(until.UTC().Format(time.RFC3339), ":", "_")
}

// asGateway is the authorizer's context as API Gateway hands it to a
// route: JSON (numbers become float64).
func asGateway(t *testing.T, c map[string]any) map[string]any {
	t.Helper()
	raw, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// API Gateway caches the authorizer's answer by the Authorization header
// alone and hands it to every route: the answer must be the same whichever
// route asked first, for keys, tokens and refusals alike.
func TestTheAuthorizersAnswerDoesNotDependOnTheRoute(t *testing.T) {
	key, _ := apikey.New()
	revoked, _ := apikey.New()
	st := &keyStore{countingStore: countingStore{account: domain.Account{UserID: "u1", Plan: domain.PlanPro}},
		keys: map[string]domain.APIKey{
			key.Hash:     {Hash: key.Hash, Prefix: key.Prefix, UserID: "u1"},
			revoked.Hash: {Hash: revoked.Hash, Prefix: revoked.Prefix, UserID: "u1", RevokedAt: time.Now()},
		}}
	g := &Gate{Store: st, Tokens: fakeTokens{}, Log: quiet}
	for name, authorization := range map[string]string{
		"key":          "Bearer " + key.Plain,
		"revoked key":  "Bearer " + revoked.Plain,
		"token":        "Bearer " + fakeToken("u1", time.Now().Add(time.Hour)),
		"bad token":    "Bearer u1.no.x",
		"not a bearer": "Basic x",
	} {
		var answers []AuthorizerResult
		for _, route := range []string{"GET /api/generations/status/{id}", "POST /api/generations/generate"} {
			res, err := g.Authorize(context.Background(), AuthorizerRequest{RouteKey: route, Headers: map[string]string{"authorization": authorization}})
			if err != nil || !res.IsAuthorized {
				t.Fatalf("%s on %s: %+v, %v", name, route, res, err)
			}
			answers = append(answers, res)
		}
		if !reflect.DeepEqual(answers[0], answers[1]) {
			t.Errorf("%s: the GET route got %v, the POST route %v", name, answers[0].Context, answers[1].Context)
		}
	}
}

// A token's answer, cached and handed to a route that takes no tokens (a
// POST) or used after the token expired, is refused by the route, as
// authenticating afresh would refuse it.
func TestRoutesRefuseACachedTokenWhereTokensAreNotTakenAndOnceItExpired(t *testing.T) {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	st := &keyStore{countingStore: countingStore{account: domain.Account{UserID: "u1", Plan: domain.PlanPro}}}
	g := &Gate{Store: st, Tokens: fakeTokens{}, Now: func() time.Time { return now }}
	res, err := g.Authorize(context.Background(), AuthorizerRequest{RouteKey: "GET /api/generations/status/{id}",
		Headers: map[string]string{"authorization": "Bearer " + fakeToken("u1", now.Add(time.Minute))}})
	if err != nil {
		t.Fatal(err)
	}
	cached := asGateway(t, res.Context)
	ok := func(context.Context, Request, string) (Response, error) {
		return jsonResponse(http.StatusOK, map[string]string{}), nil
	}
	status := func(allowToken bool) (int, string) {
		resp, _ := g.AuthedUser(Access{Scope: domain.ScopeRead, Tokens: allowToken}, ok)(context.Background(), Request{RouteKey: "X /x", Authorizer: cached})
		var env struct {
			Error struct{ Message string } `json:"error"`
		}
		_ = json.Unmarshal([]byte(resp.Body), &env)
		return resp.StatusCode, env.Error.Message
	}
	if code, msg := status(true); code != http.StatusOK {
		t.Errorf("a GET route with the token: HTTP %d %s, want 200", code, msg)
	}
	if code, msg := status(false); code != http.StatusUnauthorized || msg != "invalid API key" {
		t.Errorf("a POST route with the token: HTTP %d %q, want 401 invalid API key", code, msg)
	}
	now = now.Add(time.Minute)
	if code, msg := status(true); code != http.StatusUnauthorized || msg != "invalid token" {
		t.Errorf("a GET route with the token once it expired: HTTP %d %q, want 401 invalid token", code, msg)
	}
}

// The rate limit is counted by the route, not the authorizer: every
// request with the same cached answer counts, and the plan's limit holds.
func TestRequestsOnACachedAnswerAreCountedAndLimited(t *testing.T) {
	key, _ := apikey.New()
	st := &keyStore{countingStore: countingStore{account: domain.Account{UserID: "u1", Plan: domain.PlanFree}},
		keys: map[string]domain.APIKey{key.Hash: {Hash: key.Hash, Prefix: key.Prefix, UserID: "u1"}}}
	g := &Gate{Store: st}
	res, err := g.Authorize(context.Background(), AuthorizerRequest{RouteKey: "GET /x",
		Headers: map[string]string{"authorization": "Bearer " + key.Plain}})
	if err != nil {
		t.Fatal(err)
	}
	if st.counted != 0 {
		t.Fatalf("the authorizer counted %d requests; counting is the route's", st.counted)
	}
	st.accountReads = 0
	cached := asGateway(t, res.Context)
	h := g.AuthedUser(generateAccess, func(context.Context, Request, string) (Response, error) {
		return jsonResponse(http.StatusOK, map[string]string{}), nil
	})
	limit := domain.Account{Plan: domain.PlanFree}.RateLimit()
	for i := 1; i <= limit+1; i++ {
		resp, err := h(context.Background(), Request{RouteKey: "GET /x", Authorizer: cached})
		if err != nil {
			t.Fatal(err)
		}
		want := http.StatusOK
		if i > limit {
			want = http.StatusTooManyRequests
		}
		if resp.StatusCode != want {
			t.Fatalf("request %d on the cached answer: HTTP %d, want %d", i, resp.StatusCode, want)
		}
	}
	if st.counted != limit+1 || st.accountReads != 0 {
		t.Errorf("%d requests counted and %d account reads by the route, want %d and 0 (the context says plan and limit)", st.counted, st.accountReads, limit+1)
	}
}
