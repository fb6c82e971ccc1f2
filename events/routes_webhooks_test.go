package events_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/api"
	"github.com/mediagen-dev/mediagen/internal/core/apikey"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/webhook"
)

// The records the cancel, callback and webhook events name.
const (
	cancelGeneration   = "9b2e4c1d-5a6f-4e3b-8c7d-1f0a2b3c4d5e"
	callbackGeneration = "5e0c7a9b-2d4f-4a61-b3c8-7f9e1d2a6b40"
	cancelVideo        = "c4d5e6f7-1a2b-4c3d-9e8f-0a1b2c3d4e5f"
	imageModel         = "provider-a/theta-4-fast"
)

// heldFor says whether the account still holds credits for the work.
func (e *env) heldFor(t *testing.T, workID string) bool {
	t.Helper()
	holds, err := e.store.AccountHolds(context.Background(), e.userID)
	if err != nil {
		t.Fatal(err)
	}
	return slices.ContainsFunc(holds, func(h domain.Hold) bool { return h.WorkID == workID })
}

// newGeneration records a processing image generation with its hold, as
// generate leaves it.
func (e *env) newGeneration(t *testing.T, id, upstreamID string, hook domain.Webhook) {
	t.Helper()
	ctx, now := context.Background(), time.Now().UTC()
	g := &domain.Generation{UUID: id, UserID: e.userID, UpstreamID: upstreamID, Model: "provider-a", ModelVersion: "theta-4-fast",
		Kind: domain.MediaImage, Input: json.RawMessage(`{"prompt":"sample"}`), ImageCount: 1, Status: domain.StatusProcessing,
		CreditsUsed: decimal.NewFromInt(4), CreatedAt: now, UpdatedAt: now, Deadline: now.Add(time.Hour), Webhook: hook}
	if err := e.store.Hold(ctx, e.userID, domain.Hold{WorkID: id, Kind: domain.WorkGeneration, Amount: g.CreditsUsed, CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if err := e.store.CreateGeneration(ctx, g); err != nil {
		t.Fatal(err)
	}
}

// respHeader reads a header of a route's answer.
func respHeader(resp map[string]any, name string) string {
	h, _ := resp["headers"].(map[string]any)
	v, _ := h[name].(string)
	return v
}

// ids lists the "id" of each item of a list page.
func ids(t *testing.T, resp map[string]any) []string {
	t.Helper()
	data, _ := body(t, resp)["data"].([]any)
	var out []string
	for _, d := range data {
		m, _ := d.(map[string]any)
		id, _ := m["id"].(string)
		out = append(out, id)
	}
	return out
}

// routesAndWebhooks runs the functions of issue #7 on their sample events:
// lists, estimate, account, open-api, both cancels, the provider's callback
// and the webhook deliverer. Each answers from the real wiring against the
// local servers; the records they name are made here.
func routesAndWebhooks(t *testing.T, e *env) {
	ctx := context.Background()
	now := time.Now().UTC()
	// A receiver on loopback: the deliverer must refuse it (SSRF guard).
	var received atomic.Int32
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { received.Add(1) }))
	t.Cleanup(receiver.Close)

	up, err := e.upstream.Create(ctx, imageModel, map[string]any{"prompt": "cancel me", "num_outputs": 1}, "")
	if err != nil {
		t.Fatal(err)
	}
	e.newGeneration(t, cancelGeneration, up.ID, domain.Webhook{URL: receiver.URL + "/hooks"})

	v := domain.LongVideo{ID: cancelVideo, UserID: e.userID, Prompt: "A day at the seaside", Model: "beta-2", LanguageCode: "en",
		Scenes: []domain.Scene{{SceneNumber: 1, Prompt: "waves"}}, Status: domain.StatusProcessing, CreditsHeld: decimal.NewFromInt(65),
		CreatedAt: now, UpdatedAt: now, Deadline: now.Add(time.Hour), Webhook: domain.Webhook{URL: "https://hooks.example.com/mediagen"}}
	if err := e.store.Hold(ctx, e.userID, domain.Hold{WorkID: v.ID, Kind: domain.WorkLongVideo, Amount: v.CreditsHeld, CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if err := e.store.CreateLongVideo(ctx, v); err != nil {
		t.Fatal(err)
	}
	sceneJob, err := e.upstream.Create(ctx, imageModel, map[string]any{"prompt": "a scene", "num_outputs": 1}, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.store.SetSceneStatus(ctx, v.ID, 1, domain.SceneState{Status: domain.StatusProcessing, UpstreamJob: domain.UpstreamJob{ID: sceneJob.ID}}, now); err != nil {
		t.Fatal(err)
	}

	t.Run("generations-list", func(t *testing.T) {
		got := invoke(t, "generations-list", e.event(t, "generations-list"))
		if list := ids(t, got); got["statusCode"] != 200.0 || !slices.Contains(list, sampleGeneration) || !slices.Contains(list, cancelGeneration) {
			t.Errorf("answered %v, want the account's generations", got)
		}
	})
	t.Run("long-story-list", func(t *testing.T) {
		got := invoke(t, "long-story-list", e.event(t, "long-story-list"))
		if list := ids(t, got); got["statusCode"] != 200.0 || !slices.Contains(list, cancelVideo) {
			t.Errorf("answered %v, want the processing videos", got)
		}
	})
	t.Run("generation-estimate", func(t *testing.T) {
		first := invoke(t, "generation-estimate", e.event(t, "generation-estimate"))
		if b := body(t, first); first["statusCode"] != 200.0 || b["credits"] != "52.00" || b["kind"] != "video" {
			t.Errorf("answered %v", first)
		}
		// The event carries an Idempotency-Key: the same request again is
		// answered from the idempotency table.
		again := invoke(t, "generation-estimate", e.event(t, "generation-estimate"))
		if again["body"] != first["body"] || respHeader(again, "Idempotent-Replayed") != "true" {
			t.Errorf("the repeat answered %v, want the first answer replayed", again)
		}
	})
	t.Run("account", func(t *testing.T) {
		got := invoke(t, "account", e.event(t, "account"))
		b := body(t, got)
		hooks, _ := b["webhooks"].(map[string]any)
		secret, _ := hooks["signing_secret"].(string)
		if got["statusCode"] != 200.0 || b["user_id"] != e.userID || !strings.HasPrefix(secret, webhook.SecretPrefix) {
			t.Errorf("answered %v", got)
		}
		if a, _ := e.store.GetAccount(ctx, e.userID); a.WebhookSecret != secret {
			t.Errorf("the signing secret shown is not the account's")
		}
	})
	// The key routes, in the order a holder uses them: create (the secret
	// answered once), list (no secret), revoke the new key.
	var created map[string]any
	t.Run("account-key-create", func(t *testing.T) {
		got := invoke(t, "account-key-create", e.event(t, "account-key-create"))
		created = body(t, got)
		prefix, _ := created["prefix"].(string)
		secret, _ := created["api_key"].(string)
		if got["statusCode"] != 201.0 || !strings.HasPrefix(secret, prefix+"_") || created["daily_credit_limit"] != "250.00" {
			t.Fatalf("answered %v", got)
		}
		k, err := e.store.GetAPIKey(ctx, apikey.Hash(secret))
		if err != nil || k.UserID != e.userID || k.Name != "ci" || !slices.Equal(k.Scopes, []domain.Scope{domain.ScopeGenerate, domain.ScopeRead}) {
			t.Errorf("stored %+v, %v", k, err)
		}
	})
	t.Run("account-keys-list", func(t *testing.T) {
		got := invoke(t, "account-keys-list", e.event(t, "account-keys-list"))
		raw, _ := got["body"].(string)
		if got["statusCode"] != 200.0 || !strings.Contains(raw, `"prefix":"`+created["prefix"].(string)+`"`) ||
			strings.Contains(raw, created["api_key"].(string)) || strings.Contains(raw, "api_key") {
			t.Errorf("answered %v, want the new key listed without its secret", got)
		}
	})
	t.Run("account-key-revoke", func(t *testing.T) {
		prefix := created["prefix"].(string)
		got := invoke(t, "account-key-revoke", e.event(t, "account-key-revoke", "mgk_bbbbbbbbbb", prefix))
		if b := body(t, got); got["statusCode"] != 200.0 || b["prefix"] != prefix || b["revoked_at"] == nil {
			t.Errorf("answered %v", got)
		}
		if k, err := e.store.GetAPIKey(ctx, apikey.Hash(created["api_key"].(string))); err != nil || !k.Revoked() {
			t.Errorf("the key reads %+v, %v; want it revoked", k, err)
		}
	})
	t.Run("account-webhook-secret-rotate", func(t *testing.T) {
		before, err := e.store.GetAccount(ctx, e.userID)
		if err != nil {
			t.Fatal(err)
		}
		got := invoke(t, "account-webhook-secret-rotate", e.event(t, "account-webhook-secret-rotate"))
		b := body(t, got)
		secret, _ := b["signing_secret"].(string)
		if got["statusCode"] != 200.0 || !strings.HasPrefix(secret, webhook.SecretPrefix) || secret == before.WebhookSecret {
			t.Errorf("answered %v, want a new secret", got)
		}
		if a, _ := e.store.GetAccount(ctx, e.userID); a.WebhookSecret != secret {
			t.Errorf("the account's secret is not the one answered")
		}
	})
	t.Run("open-api", func(t *testing.T) {
		got := invoke(t, "open-api", e.event(t, "open-api"))
		doc, err := api.OpenAPIJSON()
		if err != nil {
			t.Fatal(err)
		}
		if b := body(t, got); got["statusCode"] != 200.0 || got["body"] != string(doc) || b["openapi"] == nil {
			t.Errorf("answered HTTP %v, want the embedded OpenAPI document", got["statusCode"])
		}
	})
	t.Run("generation-cancel", func(t *testing.T) {
		got := invoke(t, "generation-cancel", e.event(t, "generation-cancel"))
		if b := body(t, got); got["statusCode"] != 200.0 || b["status"] != "canceled" {
			t.Errorf("answered %v", got)
		}
		if e.heldFor(t, cancelGeneration) {
			t.Error("the canceled generation's hold is still open")
		}
		if p, err := e.upstream.Get(ctx, up.ID); err != nil || p.Status != "canceled" && p.Status != "succeeded" {
			t.Errorf("the job upstream is %q (%v), want canceled (or succeeded just before)", p.Status, err)
		}
		if msgs := e.aws.webhookMessages(cancelGeneration); len(msgs) != 1 || msgs[0].Event != "generation.canceled" {
			t.Errorf("webhook queue got %+v, want one generation.canceled", msgs)
		}
	})
	t.Run("webhooks", func(t *testing.T) {
		// The sample message is the cancel's event; the record's receiver is
		// on loopback, which the deliverer refuses to call.
		got := invoke(t, "webhooks", e.event(t, "webhooks"))
		if failures, _ := got["batchItemFailures"].([]any); len(failures) != 0 {
			t.Errorf("answered %v, want no failures", got)
		}
		if received.Load() != 0 {
			t.Error("the deliverer called a loopback address")
		}
		g, err := e.store.GetGeneration(ctx, cancelGeneration)
		if err != nil {
			t.Fatal(err)
		}
		if len(g.WebhookAttempts) != 1 || g.WebhookAttempts[0].Delivered || g.WebhookAttempts[0].Error != "address_not_public" {
			t.Errorf("attempts recorded %+v, want one refused", g.WebhookAttempts)
		}
		msgs := e.aws.webhookMessages(cancelGeneration)
		retries := e.aws.sentTo("/mediagen-webhooks")
		if len(msgs) != 2 || msgs[1].Attempt != 2 || retries[len(retries)-1].DelaySeconds != int(webhook.DefaultBackoff[0].Seconds()) {
			t.Errorf("webhook queue got %+v, want attempt 2 delayed %s", msgs, webhook.DefaultBackoff[0])
		}
	})
	t.Run("long-story-cancel", func(t *testing.T) {
		got := invoke(t, "long-story-cancel", e.event(t, "long-story-cancel"))
		if b := body(t, got); got["statusCode"] != 200.0 || b["status"] != "canceled" {
			t.Errorf("answered %v", got)
		}
		e.aws.mu.Lock()
		stops := slices.Clone(e.aws.stops)
		e.aws.mu.Unlock()
		if want := "arn:aws:states:us-east-1:123456789012:execution:long-story:" + cancelVideo; !slices.Equal(stops, []string{want}) {
			t.Errorf("stopped %v, want %s", stops, want)
		}
		if e.heldFor(t, cancelVideo) {
			t.Error("the canceled video's hold is still open")
		}
		if msgs := e.aws.webhookMessages(cancelVideo); len(msgs) != 1 || msgs[0].Event != "long_video.canceled" {
			t.Errorf("webhook queue got %+v, want one long_video.canceled", msgs)
		}
	})
	t.Run("upstream-webhook", func(t *testing.T) {
		// The sample as it is: its signature is a placeholder and its
		// timestamp long past, so it is refused.
		if got := invoke(t, "upstream-webhook", e.event(t, "upstream-webhook")); got["statusCode"] != 401.0 {
			t.Errorf("the unsigned sample answered %v, want 401", got)
		}
		// A real callback: the simulator calls the URL generate would have
		// given it, signed with the provider's secret.
		type call struct {
			header http.Header
			query  string
			body   []byte
		}
		calls := make(chan call, 1)
		gateway := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			calls <- call{r.Header.Clone(), r.URL.Query().Get("generation"), b}
			w.WriteHeader(http.StatusNoContent)
		}))
		defer gateway.Close()
		job, err := e.upstream.Create(ctx, imageModel, map[string]any{"prompt": "call me back", "num_outputs": 1},
			gateway.URL+"/api/upstream/webhook?generation="+callbackGeneration)
		if err != nil {
			t.Fatal(err)
		}
		e.newGeneration(t, callbackGeneration, job.ID, domain.Webhook{URL: "https://hooks.example.com/mediagen", Events: []string{"generation.completed"}})
		var c call
		select {
		case c = <-calls:
		case <-time.After(time.Minute):
			t.Fatal("the simulator never called back")
		}
		var ev map[string]any
		if err := json.Unmarshal(e.event(t, "upstream-webhook"), &ev); err != nil {
			t.Fatal(err)
		}
		headers := ev["headers"].(map[string]any)
		for _, h := range []string{webhook.HeaderID, webhook.HeaderTimestamp, webhook.HeaderSignature} {
			headers[h] = c.header.Get(h)
		}
		ev["body"] = string(c.body)
		ev["queryStringParameters"] = map[string]any{"generation": c.query}
		raw, _ := json.Marshal(ev)
		sent := len(e.aws.sentTo("/mediagen-poll"))
		got := invoke(t, "upstream-webhook", raw)
		if got["statusCode"] != 204.0 {
			t.Fatalf("the signed callback answered %v, want 204", got)
		}
		// The callback only queues the job's report; the poller keeps the
		// output.
		polls := e.aws.sentTo("/mediagen-poll")
		if len(polls) != sent+1 || !strings.Contains(polls[len(polls)-1].MessageBody, callbackGeneration) {
			t.Fatalf("the callback queued %d polls, want the job's report", len(polls)-sent)
		}
		if g, _ := e.store.GetGeneration(ctx, callbackGeneration); g.Status != domain.StatusProcessing {
			t.Fatalf("the callback itself finished the generation (%s): it must not download within the gateway's 29 s", g.Status)
		}
		msg, _ := json.Marshal(polls[len(polls)-1].MessageBody)
		invoke(t, "poller", e.event(t, "poller", `"{\"generation_id\": \"3348f3aa-5fd0-4758-860a-3ebaf4cfbcc7\", \"attempt\": 1}"`, string(msg)))
		g, err := e.store.GetGeneration(ctx, callbackGeneration)
		if err != nil {
			t.Fatal(err)
		}
		if g.Status != domain.StatusCompleted || len(g.OutputURLs) != 1 || !strings.Contains(g.OutputURLs[0], "/generations/"+callbackGeneration+"/0.") {
			t.Fatalf("the generation is %s with %v, want completed with its output kept", g.Status, g.OutputURLs)
		}
		resp, err := http.Get(g.OutputURLs[0])
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.ContentLength == 0 {
			t.Errorf("the kept output answers HTTP %d, %d bytes", resp.StatusCode, resp.ContentLength)
		}
		if e.heldFor(t, callbackGeneration) {
			t.Error("the completed generation's hold is still open")
		}
		if msgs := e.aws.webhookMessages(callbackGeneration); len(msgs) != 1 || msgs[0].Event != "generation.completed" {
			t.Errorf("webhook queue got %+v, want one generation.completed", msgs)
		}
		// The provider retries a callback: the repeat settles nothing twice.
		if again := invoke(t, "upstream-webhook", raw); again["statusCode"] != 204.0 || len(e.aws.webhookMessages(callbackGeneration)) != 1 {
			t.Errorf("the repeated callback answered %v and enqueued %d webhooks, want 204 and still one",
				again, len(e.aws.webhookMessages(callbackGeneration)))
		}
	})
}
