package runtime_test

// Requests for the routes and answers the other tests of this package do not
// reach, so that the contract test sees every operation of openapi.yaml and
// the answers users depend on: each goes through the contract transport.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/api"
	"github.com/mediagen-dev/mediagen/api/contracttest"
	"github.com/mediagen-dev/mediagen/internal/api/httpapi"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/webhook"
	"github.com/mediagen-dev/mediagen/internal/local/simulator"
)

func TestOpenAPIDocumentIsServedWithoutCredentials(t *testing.T) {
	rt := start(t, runtimeConfig())
	a := call(t, rt, http.MethodGet, "/api/openapi.json", "", nil)
	if a.status != http.StatusOK || a.str("openapi") != "3.1.0" {
		t.Fatalf("GET /api/openapi.json: HTTP %d, openapi %q", a.status, a.str("openapi"))
	}
	want, err := api.OpenAPIJSON()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.body, want) {
		t.Errorf("the served document is not openapi.yaml as JSON")
	}
}

func TestAccountListsEstimateAndCancelAnswerAsDocumented(t *testing.T) {
	cfg := storyConfig()
	cfg.SimulatorLatency = 30 * time.Second // jobs stay in flight until canceled
	rt := start(t, cfg)
	owner := newAccount(t, rt, domain.PlanEnterprise, 1000)
	key := owner.APIKey

	acct := call(t, rt, http.MethodGet, "/api/account", key, nil)
	if acct.status != http.StatusOK || acct.str("plan") != "enterprise" || acct.str("balance") != "1000.00" {
		t.Errorf("GET /api/account: HTTP %d %s", acct.status, acct.body)
	}
	checkEnvelope(t, call(t, rt, http.MethodGet, "/api/account", "mgk_short", nil), http.StatusUnauthorized)

	body := gen("zeta", map[string]any{"prompt": "a fox"})
	est := call(t, rt, http.MethodPost, "/api/generations/estimate", key, body)
	if est.status != http.StatusOK || est.str("credits") == "" || est.str("kind") != "image" {
		t.Errorf("estimate: HTTP %d %s", est.status, est.body)
	}

	created := call(t, rt, http.MethodPost, "/api/generations/generate", key, body)
	if created.status != http.StatusOK {
		t.Fatalf("generate: HTTP %d %s", created.status, created.body)
	}
	id := created.str("uuid")
	page := call(t, rt, http.MethodGet, "/api/generations?limit=1&status=processing&model=provider-a", key, nil)
	if data, _ := page.decoded["data"].([]any); page.status != http.StatusOK || len(data) != 1 {
		t.Errorf("list generations: HTTP %d %s", page.status, page.body)
	}
	checkEnvelope(t, call(t, rt, http.MethodGet, "/api/generations?limit=0", key, malformed(nil)), http.StatusBadRequest)

	canceled := call(t, rt, http.MethodPost, "/api/generations/"+id+"/cancel", key, nil)
	if canceled.status != http.StatusOK || canceled.str("status") != "canceled" {
		t.Errorf("cancel: HTTP %d %s", canceled.status, canceled.body)
	}
	if code := checkEnvelope(t, call(t, rt, http.MethodPost, "/api/generations/"+id+"/cancel", key, nil), http.StatusConflict); code != "conflict" {
		t.Errorf("cancel of a canceled generation: code %q, want conflict", code)
	}
	checkEnvelope(t, call(t, rt, http.MethodPost, "/api/generations/00000000-0000-4000-8000-000000000000/cancel", key, nil), http.StatusNotFound)

	video := call(t, rt, http.MethodPost, "/api/long-story/videos", key,
		storyBody("A walk", "en", false, "auto", []storyScene{{1, "a path"}, {2, "a gate"}}))
	if video.status != http.StatusOK {
		t.Fatalf("create video: HTTP %d %s", video.status, video.body)
	}
	videos := call(t, rt, http.MethodGet, "/api/long-story/videos?limit=5", key, nil)
	if data, _ := videos.decoded["data"].([]any); videos.status != http.StatusOK || len(data) != 1 || videos.decoded["next_cursor"] != nil {
		t.Errorf("list videos: HTTP %d %s", videos.status, videos.body)
	}
	stopped := call(t, rt, http.MethodPost, "/api/long-story/videos/"+video.str("video_id")+"/cancel", key, nil)
	if stopped.status != http.StatusOK || stopped.str("status") != "canceled" {
		t.Errorf("cancel video: HTTP %d %s", stopped.status, stopped.body)
	}
	if code := checkEnvelope(t, call(t, rt, http.MethodPost, "/api/long-story/videos/"+video.str("video_id")+"/cancel", key, nil), http.StatusConflict); code != "conflict" {
		t.Errorf("cancel of a canceled video: code %q, want conflict", code)
	}
}

func TestIdempotencyAndBodyErrorsAnswerAsDocumented(t *testing.T) {
	rt := start(t, runtimeConfig())
	owner := newAccount(t, rt, domain.PlanEnterprise, 1000)
	post := func(body, contentType, idemKey string, isMalformed bool) answer {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, rt.BaseURL+"/api/long-story/videos/estimate", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+owner.APIKey)
		req.Header.Set("Content-Type", contentType)
		if idemKey != "" {
			req.Header.Set("Idempotency-Key", idemKey)
		}
		return send(t, req, isMalformed)
	}
	first := post(`{"model":"beta-2","scene_count":2}`, "application/json", "estimate-1", false)
	again := post(`{"model":"beta-2","scene_count":2}`, "application/json", "estimate-1", false)
	if first.status != http.StatusOK || again.status != http.StatusOK || !bytes.Equal(first.body, again.body) ||
		again.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("replay: HTTP %d %s, then HTTP %d %v %s", first.status, first.body, again.status, again.header, again.body)
	}
	if code := checkEnvelope(t, post(`{"model":"beta-2","scene_count":3}`, "application/json", "estimate-1", false), http.StatusUnprocessableEntity); code != "idempotency_key_reused" {
		t.Errorf("reused key: code %q", code)
	}
	if code := checkEnvelope(t, post(`model=beta-2`, "text/plain", "", true), http.StatusUnsupportedMediaType); code != "unsupported_media_type" {
		t.Errorf("text body: code %q", code)
	}
	// Just over the service's limit, the event still fits Lambda's: the
	// service answers. At 7 MB the gateway refuses the event itself.
	over := `{"model":"beta-2","scene_count":2,"pad":"` + strings.Repeat("x", httpapi.MaxBodyBytes) + `"}`
	if code := checkEnvelope(t, post(over, "application/json", "", true), http.StatusRequestEntityTooLarge); code != "body_too_large" {
		t.Errorf("a body over the limit: code %q", code)
	}
	huge := `{"model":"beta-2","scene_count":2,"pad":"` + strings.Repeat("x", 7<<20) + `"}`
	if a := post(huge, "application/json", "", true); a.status != http.StatusRequestEntityTooLarge || !strings.Contains(string(a.body), `"message"`) {
		t.Errorf("a 7 MB body: HTTP %d %.200s, want the gateway's 413", a.status, a.body)
	}
}

func TestUpstreamWebhookRefusesABadSignature(t *testing.T) {
	rt := start(t, runtimeConfig())
	body := []byte(`{"id":"job-1","status":"succeeded","output":"http://127.0.0.1/x.png"}`)
	for name, secret := range map[string]string{"another secret": webhook.NewSecret(), "unsigned": ""} {
		t.Run(name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, rt.BaseURL+"/api/upstream/webhook?generation=00000000-0000-4000-8000-000000000000", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			if secret != "" {
				if err := webhook.SetHeaders(req.Header, secret, "msg_1", time.Now(), body); err != nil {
					t.Fatal(err)
				}
			}
			checkEnvelope(t, send(t, req, secret == ""), http.StatusUnauthorized)
		})
	}
}

// TestWebhooksMatchTheDocument receives a generation's webhook (completed)
// and a long-form video's (canceled) and checks each against the document's
// webhooks section and the account's signing secret.
func TestWebhooksMatchTheDocument(t *testing.T) {
	type delivery struct {
		r    *http.Request
		body []byte
	}
	got := make(chan delivery, 16)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- delivery{r, body}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()
	cfg := storyConfig()
	cfg.WebhookBackoff = []time.Duration{10 * time.Millisecond}
	cfg.WebhookAllow = []string{hostPort(t, receiver.URL)}
	rt := start(t, cfg)
	owner := newAccount(t, rt, domain.PlanEnterprise, 1000)

	body := gen("zeta", map[string]any{"prompt": "a fox"})
	body["webhook_url"] = receiver.URL + "/generationEvent"
	if a := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, body); a.status != http.StatusOK {
		t.Fatalf("generate: HTTP %d %s", a.status, a.body)
	}
	story := storyBody("A walk", "en", false, "auto", []storyScene{{1, "a path " + simulator.MarkerSlow}})
	story["webhook_url"] = receiver.URL + "/longVideoEvent"
	story["webhook_events"] = []string{"long_video.canceled"}
	video := call(t, rt, http.MethodPost, "/api/long-story/videos", owner.APIKey, story)
	if video.status != http.StatusOK {
		t.Fatalf("create video: HTTP %d %s", video.status, video.body)
	}
	if a := call(t, rt, http.MethodPost, "/api/long-story/videos/"+video.str("video_id")+"/cancel", owner.APIKey, nil); a.status != http.StatusOK {
		t.Fatalf("cancel video: HTTP %d %s", a.status, a.body)
	}

	secret := call(t, rt, http.MethodGet, "/api/account", owner.APIKey, nil).str("webhooks", "signing_secret")
	want := map[string]string{"generationEvent": "generation.completed", "longVideoEvent": "long_video.canceled"}
	for len(want) > 0 {
		var d delivery
		select {
		case d = <-got:
		case <-time.After(2 * time.Minute):
			t.Fatalf("webhooks %v did not arrive", want)
		}
		name := strings.TrimPrefix(d.r.URL.Path, "/")
		var payload struct{ Type string }
		_ = json.Unmarshal(d.body, &payload)
		if want[name] != payload.Type {
			t.Errorf("webhook %s: type %q, want %q", name, payload.Type, want[name])
		}
		delete(want, name)
		if err := webhook.Verify(secret, d.r.Header, d.body, time.Now()); err != nil {
			t.Errorf("webhook %s does not verify with the account's secret: %v", name, err)
		}
		if err := contracttest.Installed.ValidateWebhook(context.Background(), name, d.r, d.body); err != nil {
			t.Errorf("webhook %s does not match openapi.yaml: %v\nbody: %s", name, err, d.body)
		}
	}
}
