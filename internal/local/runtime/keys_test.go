package runtime_test

// Keys managed by their holder, through HTTP on the local runtime: the key
// routes, scopes, daily budgets, revocation and last use. Every request
// and answer goes through the contract transport.

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/store"
	"github.com/mediagen-dev/mediagen/internal/local/runtime"
	"github.com/mediagen-dev/mediagen/internal/local/simulator"
	"github.com/mediagen-dev/mediagen/internal/testkit/jwttest"
)

// createKey makes a key through the API with the admin key and returns the
// answer, which must be a 201.
func createKey(t *testing.T, rt *runtime.Runtime, admin string, body map[string]any) answer {
	t.Helper()
	a := call(t, rt, http.MethodPost, "/api/account/keys", admin, body)
	if a.status != http.StatusCreated || !strings.HasPrefix(a.str("api_key"), a.str("prefix")+"_") {
		t.Fatalf("POST /api/account/keys %v: HTTP %d %s", body, a.status, a.body)
	}
	return a
}

// listedKey is the key with this prefix in GET /api/account/keys.
func listedKey(t *testing.T, rt *runtime.Runtime, admin, prefix string) map[string]any {
	t.Helper()
	a := call(t, rt, http.MethodGet, "/api/account/keys", admin, nil)
	if a.status != http.StatusOK {
		t.Fatalf("GET /api/account/keys: HTTP %d %s", a.status, a.body)
	}
	list, _ := a.decoded["data"].([]any)
	for _, v := range list {
		if k, _ := v.(map[string]any); k["prefix"] == prefix {
			return k
		}
	}
	t.Fatalf("key %s is not listed: %s", prefix, a.body)
	return nil
}

// lastJournalSeq is the account's newest journal entry's number.
func lastJournalSeq(t *testing.T, rt *runtime.Runtime, userID string) int64 {
	t.Helper()
	page, err := rt.Store.JournalEntries(context.Background(), store.JournalQuery{UserID: userID, Limit: 1})
	if err != nil || len(page.Items) == 0 {
		t.Fatalf("journal of %s: %+v, %v", userID, page, err)
	}
	return page.Items[0].Seq
}

// A key's daily credit limit holds across its generations: what a failed
// one held is given back, and the generation that would pass the limit is
// a 402 key_budget_exceeded that changes nothing. The list shows the
// spend; another key of the account is not bound by it.
func TestAKeysDailyLimitRefusesTheGenerationThatWouldPassIt(t *testing.T) {
	rt := start(t, runtimeConfig())
	owner := newAccount(t, rt, domain.PlanEnterprise, 1000)
	limited := createKey(t, rt, owner.APIKey, map[string]any{"name": "ci", "daily_credit_limit": 10})
	key, prefix := limited.str("api_key"), limited.str("prefix")
	if limited.str("daily_credit_limit") != "10.00" || !slices.Equal(limited.decoded["scopes"].([]any), []any{"generate", "read"}) {
		t.Errorf("created %s; want the default scopes and the limit 10.00", limited.body)
	}
	image := func(prompt string) map[string]any { return gen("zeta", map[string]any{"prompt": prompt}) } // 5.07 each

	failed := call(t, rt, http.MethodPost, "/api/generations/generate", key, image("a storm "+simulator.MarkerFail))
	if failed.status != http.StatusOK {
		t.Fatalf("the first generation: HTTP %d %s", failed.status, failed.body)
	}
	if a, _ := waitFinal(t, rt, key, failed.str("uuid"), time.Minute); a.str("status") != "failed" {
		t.Fatalf("the failing generation ended %s", a.body)
	}
	if spent := listedKey(t, rt, owner.APIKey, prefix)["spent_today"]; spent != "0.00" {
		t.Errorf("spent_today %v after the failure released its hold, want 0.00", spent)
	}
	ok := call(t, rt, http.MethodPost, "/api/generations/generate", key, image("a lighthouse"))
	if ok.status != http.StatusOK {
		t.Fatalf("the second generation (5.07 of 10.00): HTTP %d %s", ok.status, ok.body)
	}
	// Held or captured, the generation counts.
	if spent := listedKey(t, rt, owner.APIKey, prefix)["spent_today"]; spent != "5.07" {
		t.Errorf("spent_today %v after a generation of 5.07, want 5.07", spent)
	}

	before, seq := account(t, rt, owner.UserID), lastJournalSeq(t, rt, owner.UserID)
	over := call(t, rt, http.MethodPost, "/api/generations/generate", key, image("one too many"))
	if code := checkEnvelope(t, over, http.StatusPaymentRequired); code != "key_budget_exceeded" {
		t.Errorf("the generation past the limit: code %q", code)
	}
	msg := over.decoded["error"].(map[string]any)["message"].(string)
	reset := time.Now().UTC().Truncate(24 * time.Hour).Add(24 * time.Hour).Format(time.RFC3339)
	for _, part := range []string{"10.00", "5.07", reset} {
		if !strings.Contains(msg, part) {
			t.Errorf("the 402's message %q does not name %s", msg, part)
		}
	}
	unchanged(t, rt, before, 2)
	if after := lastJournalSeq(t, rt, owner.UserID); after != seq {
		t.Errorf("the refused generation wrote to the journal: seq %d → %d", seq, after)
	}
	story := call(t, rt, http.MethodPost, "/api/long-story/videos", key, storyBody("a walk", "en", false, "auto", []storyScene{{1, "a path"}}))
	if code := checkEnvelope(t, story, http.StatusPaymentRequired); code != "key_budget_exceeded" {
		t.Errorf("a long-form video past the limit: code %q", code)
	}
	unchanged(t, rt, before, 2)
	if spent := listedKey(t, rt, owner.APIKey, prefix)["spent_today"]; spent != "5.07" {
		t.Errorf("spent_today %v after the refusals, want 5.07", spent)
	}
	// The account's own key has no limit.
	if a := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, image("the owner's")); a.status != http.StatusOK {
		t.Errorf("the unlimited key: HTTP %d %s", a.status, a.body)
	}
}

// Scopes: a read key reads and prices but cannot generate, cancel or
// manage keys; a key cannot hand out a scope it lacks; nothing a refused
// request asked for happens.
func TestScopesLimitWhatAKeyDoes(t *testing.T) {
	cfg := runtimeConfig()
	cfg.SimulatorLatency = time.Minute // the generation stays processing, so its credits stay put while the refusals run
	rt := start(t, cfg)
	owner := newAccount(t, rt, domain.PlanEnterprise, 1000)
	g := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, gen("theta-4-fast", map[string]any{"prompt": "a fox"}))
	if g.status != http.StatusOK {
		t.Fatalf("generate: HTTP %d %s", g.status, g.body)
	}
	reader := createKey(t, rt, owner.APIKey, map[string]any{"name": "dashboard", "scopes": []string{"read"}}).str("api_key")
	generator := createKey(t, rt, owner.APIKey, map[string]any{"name": "worker", "scopes": []string{"generate"}}).str("api_key")
	keyAdmin := createKey(t, rt, owner.APIKey, map[string]any{"name": "ops", "scopes": []string{"read", "admin"}}).str("api_key")
	before := account(t, rt, owner.UserID)
	keysBefore, _ := rt.Store.ListAPIKeys(context.Background(), owner.UserID)

	tests := []struct {
		name, key, method, path string
		body                    any
		status                  int
		scope                   string // named in the 403
	}{
		{"read key: status", reader, http.MethodGet, "/api/generations/status/" + g.str("uuid"), nil, http.StatusOK, ""},
		{"read key: list", reader, http.MethodGet, "/api/generations", nil, http.StatusOK, ""},
		{"read key: account", reader, http.MethodGet, "/api/account", nil, http.StatusOK, ""},
		{"read key: estimate", reader, http.MethodPost, "/api/generations/estimate", gen("zeta", map[string]any{"prompt": "x"}), http.StatusOK, ""},
		{"read key: generate", reader, http.MethodPost, "/api/generations/generate", gen("zeta", map[string]any{"prompt": "x"}), http.StatusForbidden, "generate"},
		{"read key: long-form create", reader, http.MethodPost, "/api/long-story/videos", storyBody("x", "en", false, "auto", []storyScene{{1, "x"}}), http.StatusForbidden, "generate"},
		{"read key: cancel", reader, http.MethodPost, "/api/generations/" + g.str("uuid") + "/cancel", nil, http.StatusForbidden, "generate"},
		{"read key: list keys", reader, http.MethodGet, "/api/account/keys", nil, http.StatusForbidden, "admin"},
		{"read key: create a key", reader, http.MethodPost, "/api/account/keys", map[string]any{"name": "x"}, http.StatusForbidden, "admin"},
		{"generate key: status", generator, http.MethodGet, "/api/generations/status/" + g.str("uuid"), nil, http.StatusForbidden, "read"},
		{"generate key: revoke a key", generator, http.MethodDelete, "/api/account/keys/mgk_aaaaaaaaaa", nil, http.StatusForbidden, "admin"},
		{"admin without generate: a generate key", keyAdmin, http.MethodPost, "/api/account/keys", map[string]any{"name": "x", "scopes": []string{"generate"}}, http.StatusForbidden, "generate"},
		{"admin without generate: the default scopes", keyAdmin, http.MethodPost, "/api/account/keys", map[string]any{"name": "x"}, http.StatusForbidden, "generate"},
		{"admin key: lists keys", keyAdmin, http.MethodGet, "/api/account/keys", nil, http.StatusOK, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := call(t, rt, tt.method, tt.path, tt.key, tt.body)
			if tt.status == http.StatusOK {
				if a.status != http.StatusOK {
					t.Errorf("HTTP %d %s, want 200", a.status, a.body)
				}
				return
			}
			if code := checkEnvelope(t, a, tt.status); code != "insufficient_scope" {
				t.Errorf("code %q, want insufficient_scope", code)
			}
			if msg, _ := a.decoded["error"].(map[string]any)["message"].(string); !strings.Contains(msg, tt.scope) {
				t.Errorf("message %q does not name the %s scope", msg, tt.scope)
			}
			if a.header.Get("X-RateLimit-Limit") == "" {
				t.Error("a 403 is an authenticated answer: it carries the rate-limit headers")
			}
		})
	}
	unchanged(t, rt, before, 1)
	if keys, _ := rt.Store.ListAPIKeys(context.Background(), owner.UserID); len(keys) != len(keysBefore) {
		t.Errorf("%d keys after the refusals, want %d", len(keys), len(keysBefore))
	}
	if s := call(t, rt, http.MethodGet, "/api/generations/status/"+g.str("uuid"), owner.APIKey, nil); s.str("status") != "processing" {
		t.Errorf("the generation the read key tried to cancel is %s, want still processing", s.body)
	}
}

// The key routes end to end: the secret only in the create answer, the
// list newest first with last use, revocation (401 from the next request,
// the first time kept, another account's prefix a 404), and bad bodies a
// 400 that makes no key.
func TestKeysAreCreatedListedAndRevokedByTheirHolder(t *testing.T) {
	rt := start(t, runtimeConfig())
	owner := newAccount(t, rt, domain.PlanPro, 100)
	stranger := newAccount(t, rt, domain.PlanPro, 100)
	created := createKey(t, rt, owner.APIKey, map[string]any{"name": "laptop", "scopes": []string{"read", "generate"}, "daily_credit_limit": "2.50"})
	secret, prefix := created.str("api_key"), created.str("prefix")
	if created.str("name") != "laptop" || created.str("daily_credit_limit") != "2.50" || created.str("created_at") == "" {
		t.Errorf("created %s", created.body)
	}
	if a := call(t, rt, http.MethodGet, "/api/account", secret, nil); a.status != http.StatusOK {
		t.Fatalf("the new key: HTTP %d %s", a.status, a.body)
	}

	list := call(t, rt, http.MethodGet, "/api/account/keys", owner.APIKey, nil)
	data, _ := list.decoded["data"].([]any)
	if list.status != http.StatusOK || len(data) != 2 {
		t.Fatalf("GET /api/account/keys: HTTP %d %s; want the account's 2 keys", list.status, list.body)
	}
	if strings.Contains(string(list.body), secret) || strings.Contains(string(list.body), "api_key") {
		t.Errorf("the list shows a secret: %s", list.body)
	}
	newest, first := data[0].(map[string]any), data[1].(map[string]any)
	ownerPrefix, _, _ := strings.Cut(strings.TrimPrefix(owner.APIKey, "mgk_"), "_")
	if newest["prefix"] != prefix || first["prefix"] != "mgk_"+ownerPrefix || first["name"] != "default" ||
		!slices.Equal(first["scopes"].([]any), []any{"generate", "read", "admin"}) || first["daily_credit_limit"] != nil {
		t.Errorf("list %s; want the new key first, then the account's first key with every scope and no limit", list.body)
	}
	if newest["last_used_at"] == nil || newest["revoked_at"] != nil || newest["spent_today"] != "0.00" {
		t.Errorf("the new key, used once, lists %v", newest)
	}

	// Bad bodies: 400 naming every field, no key made.
	bad := call(t, rt, http.MethodPost, "/api/account/keys", owner.APIKey, malformed(map[string]any{"name": "  ", "scopes": []string{"read", "write"}}))
	if code := checkEnvelope(t, bad, http.StatusBadRequest); code != "invalid_request" || !strings.Contains(string(bad.body), "scopes[1]") || !strings.Contains(string(bad.body), `"name"`) {
		t.Errorf("a bad body: %s", bad.body)
	}
	if keys, _ := rt.Store.ListAPIKeys(context.Background(), owner.UserID); len(keys) != 2 {
		t.Errorf("%d keys after a refused create, want 2", len(keys))
	}
	checkEnvelope(t, call(t, rt, http.MethodDelete, "/api/account/keys/not-a-prefix", owner.APIKey, nil), http.StatusBadRequest)

	// Another account's prefix is not found, and its key still works.
	if code := checkEnvelope(t, call(t, rt, http.MethodDelete, "/api/account/keys/"+prefix, stranger.APIKey, nil), http.StatusNotFound); code != "not_found" {
		t.Errorf("another account's prefix: code %q", code)
	}
	if a := call(t, rt, http.MethodGet, "/api/account", secret, nil); a.status != http.StatusOK {
		t.Fatalf("the key after a stranger's revoke: HTTP %d %s", a.status, a.body)
	}

	revoked := call(t, rt, http.MethodDelete, "/api/account/keys/"+prefix, owner.APIKey, nil)
	if revoked.status != http.StatusOK || revoked.str("prefix") != prefix || revoked.str("revoked_at") == "" || strings.Contains(string(revoked.body), secret) {
		t.Fatalf("DELETE: HTTP %d %s", revoked.status, revoked.body)
	}
	if code := checkEnvelope(t, call(t, rt, http.MethodGet, "/api/account", secret, nil), http.StatusUnauthorized); code != "unauthorized" {
		t.Errorf("the revoked key: code %q", code)
	}
	again := call(t, rt, http.MethodDelete, "/api/account/keys/"+prefix, owner.APIKey, nil)
	if again.status != http.StatusOK || again.str("revoked_at") != revoked.str("revoked_at") {
		t.Errorf("revoking again: HTTP %d %s; want the first time %s", again.status, again.body, revoked.str("revoked_at"))
	}
	if k := listedKey(t, rt, owner.APIKey, prefix); k["revoked_at"] != revoked.str("revoked_at") {
		t.Errorf("the list shows %v, want it revoked at %s", k, revoked.str("revoked_at"))
	}
}

// An identity-provider token holds every scope: it manages the account's
// keys and may give them any scope.
func TestATokenManagesTheAccountsKeys(t *testing.T) {
	is, err := jwttest.New()
	if err != nil {
		t.Fatal(err)
	}
	defer is.Close()
	rt := start(t, runtime.Config{JWTIssuer: is.Issuer, JWTAudience: is.Audience, JWKSURL: is.JWKSURL()})
	owner := newAccount(t, rt, domain.PlanPro, 100)
	tok := is.Token(owner.UserID)
	created := createKey(t, rt, tok, map[string]any{"name": "from the dashboard", "scopes": []string{"admin", "read", "generate"}})
	if !slices.Equal(created.decoded["scopes"].([]any), []any{"generate", "read", "admin"}) {
		t.Errorf("created %s; want every scope, in order", created.body)
	}
	if a := call(t, rt, http.MethodGet, "/api/account/keys", tok, nil); a.status != http.StatusOK {
		t.Errorf("list with a token: HTTP %d %s", a.status, a.body)
	}
	if a := call(t, rt, http.MethodDelete, "/api/account/keys/"+created.str("prefix"), tok, nil); a.status != http.StatusOK {
		t.Errorf("revoke with a token: HTTP %d %s", a.status, a.body)
	}
}
