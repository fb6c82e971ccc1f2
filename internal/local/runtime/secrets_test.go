package runtime_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/webhook"
	"github.com/mediagen-dev/mediagen/internal/local/runtime"
	"github.com/mediagen-dev/mediagen/internal/testkit/jwttest"
)

// The webhook signing secret goes only to the scope that manages it: an
// API key with admin sees it in GET /api/account, a read key and an
// identity-provider token get null (whoever holds it can forge events the
// receiver trusts). Rotating it is a route of its own, for admin keys only,
// that answers the new secret once; webhooks are signed with it from then
// on.
func TestTheWebhookSecretIsShownOnlyToAdminKeysAndRotatedByItsOwnRoute(t *testing.T) {
	is, err := jwttest.New()
	if err != nil {
		t.Fatal(err)
	}
	defer is.Close()
	recv := newHookReceiver(t, 0)
	rt := start(t, runtime.Config{JWTIssuer: is.Issuer, JWTAudience: is.Audience, JWKSURL: is.JWKSURL(), SimulatorLatency: 100 * time.Millisecond,
		WebhookAllow: []string{hostPort(t, recv.srv.URL)}})
	owner := newAccount(t, rt, domain.PlanEnterprise, 100)
	reader := createKey(t, rt, owner.APIKey, map[string]any{"name": "dashboard", "scopes": []string{"read"}}).str("api_key")
	worker := createKey(t, rt, owner.APIKey, map[string]any{"name": "worker"}).str("api_key") // generate and read
	keyAdmin := createKey(t, rt, owner.APIKey, map[string]any{"name": "ops", "scopes": []string{"read", "admin"}}).str("api_key")
	token := is.Token(owner.UserID)

	secretOf := func(key string) (string, bool) {
		t.Helper()
		a := call(t, rt, http.MethodGet, "/api/account", key, nil)
		if a.status != http.StatusOK {
			t.Fatalf("GET /api/account: HTTP %d %s", a.status, a.body)
		}
		hooks, _ := a.decoded["webhooks"].(map[string]any)
		s, shown := hooks["signing_secret"].(string)
		if !shown && hooks["signing_secret"] != nil {
			t.Errorf("signing_secret %v, want a string or null", hooks["signing_secret"])
		}
		return s, shown
	}
	first, shown := secretOf(owner.APIKey)
	if !shown || !strings.HasPrefix(first, webhook.SecretPrefix) {
		t.Fatalf("the owner's admin key sees signing_secret %q", first)
	}
	if again, _ := secretOf(keyAdmin); again != first {
		t.Errorf("another admin key sees %q, want the account's %q", again, first)
	}
	for name, key := range map[string]string{"a read key": reader, "a generate and read key": worker, "a token": token} {
		if s, shown := secretOf(key); shown {
			t.Errorf("%s sees the signing secret %q, want null", name, s)
		}
	}

	// Only an admin key rotates it; the others change nothing.
	if code := checkEnvelope(t, call(t, rt, http.MethodPost, "/api/account/webhook-secret/rotate", reader, nil), http.StatusForbidden); code != "insufficient_scope" {
		t.Errorf("a read key rotating: code %q", code)
	}
	if code := checkEnvelope(t, call(t, rt, http.MethodPost, "/api/account/webhook-secret/rotate", token, malformed(nil)), http.StatusUnauthorized); code != "unauthorized" {
		t.Errorf("a token rotating: code %q", code)
	}
	if s, _ := secretOf(owner.APIKey); s != first {
		t.Fatalf("the secret changed after refused rotations: %q", s)
	}
	rotated := call(t, rt, http.MethodPost, "/api/account/webhook-secret/rotate", keyAdmin, nil)
	next := rotated.str("signing_secret")
	if rotated.status != http.StatusOK || !strings.HasPrefix(next, webhook.SecretPrefix) || next == first || rotated.str("rotated_at") == "" {
		t.Fatalf("rotate: HTTP %d %s; want a new secret", rotated.status, rotated.body)
	}
	if s, _ := secretOf(owner.APIKey); s != next {
		t.Errorf("GET /api/account shows %q after the rotation, want the new %q", s, next)
	}

	// The next webhook is signed with the new secret, not the old one.
	body := imageBody("a kite after the rotation")
	body["webhook_url"] = recv.srv.URL + "/hooks"
	if a := call(t, rt, http.MethodPost, "/api/generations/generate", worker, body); a.status != http.StatusOK {
		t.Fatalf("generate: HTTP %d %s", a.status, a.body)
	}
	hook := recv.wait(t, 1)[0]
	if err := webhook.Verify(next, hook.header, hook.body, time.Now()); err != nil {
		t.Errorf("the webhook does not verify with the new secret: %v", err)
	}
	if err := webhook.Verify(first, hook.header, hook.body, time.Now()); err == nil {
		t.Error("the webhook still verifies with the old secret")
	}
}
