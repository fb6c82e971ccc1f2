package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/webhook"
	"github.com/mediagen-dev/mediagen/internal/local/runtime"
	"github.com/mediagen-dev/mediagen/internal/testkit/testsupport"
	"github.com/mediagen-dev/mediagen/internal/testkit/waitfor"
)

// hookReceiver records the webhooks it receives; it refuses the first
// `refuse` calls with a 500.
type hookReceiver struct {
	mu       sync.Mutex
	refuse   int
	received []receivedHook
	srv      *httptest.Server
}

type receivedHook struct {
	header http.Header
	body   []byte
}

func newHookReceiver(t *testing.T, refuse int) *hookReceiver {
	h := &hookReceiver{refuse: refuse}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		defer h.mu.Unlock()
		h.received = append(h.received, receivedHook{header: r.Header.Clone(), body: b})
		if len(h.received) <= h.refuse {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// hostPort is a local URL's HOST:PORT, as Config.WebhookAllow takes it.
func hostPort(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

func (h *hookReceiver) wait(t *testing.T, n int) []receivedHook {
	t.Helper()
	got, ok := waitfor.Value(t, time.Minute, fmt.Sprintf("%d webhooks", n), func() ([]receivedHook, bool) {
		h.mu.Lock()
		defer h.mu.Unlock()
		got := append([]receivedHook(nil), h.received...)
		return got, len(got) >= n
	})
	if !ok {
		t.Fatalf("received %d webhooks, want %d", len(got), n)
	}
	return got
}

func TestWebhooksAreSignedRetriedAndRecorded(t *testing.T) {
	recv := newHookReceiver(t, 2) // the first two attempts fail
	rt := start(t, runtime.Config{SimulatorLatency: 200 * time.Millisecond, WebhookAllow: []string{hostPort(t, recv.srv.URL)},
		WebhookBackoff: []time.Duration{50 * time.Millisecond, 50 * time.Millisecond, 50 * time.Millisecond}})
	owner := newAccount(t, rt, domain.PlanEnterprise, 100)
	secret := call(t, rt, http.MethodGet, "/api/account", owner.APIKey, nil).str("webhooks", "signing_secret")
	if !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("signing secret %q", secret)
	}
	body := imageBody("a kite over the dunes")
	body["webhook_url"] = recv.srv.URL + "/hooks"
	created := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, body)
	if created.status != http.StatusOK {
		t.Fatalf("generate: HTTP %d %s", created.status, created.body)
	}
	hooks := recv.wait(t, 3)
	for i, h := range hooks {
		if err := webhook.Verify(secret, h.header, h.body, time.Now()); err != nil {
			t.Errorf("attempt %d: signature does not verify: %v", i+1, err)
		}
		if h.header.Get("webhook-id") != hooks[0].header.Get("webhook-id") {
			t.Errorf("attempt %d has webhook-id %q, want the first's %q", i+1, h.header.Get("webhook-id"), hooks[0].header.Get("webhook-id"))
		}
	}
	payload, err := testsupport.DecodeGenerationWebhook(hooks[2].body)
	if err != nil {
		t.Fatal(err)
	}
	if payload.Type != "generation.completed" || payload.Data.ID != created.str("uuid") || payload.Data.Status != "completed" || len(payload.Data.Output) != 1 {
		t.Errorf("payload = %s; want generation.completed with the status view", hooks[2].body)
	}
	// A tampered body or another secret fails verification.
	tampered := bytes.Replace(hooks[2].body, []byte("completed"), []byte("failed"), 1)
	if err := webhook.Verify(secret, hooks[2].header, tampered, time.Now()); err == nil {
		t.Error("a tampered body verified")
	}
	if err := webhook.Verify(webhook.NewSecret(), hooks[2].header, hooks[2].body, time.Now()); err == nil {
		t.Error("another secret verified")
	}
	if err := webhook.Verify(secret, hooks[2].header, hooks[2].body, time.Now().Add(time.Hour)); err == nil {
		t.Error("a stale webhook verified")
	}
	// The attempts are on the record: two refused, then delivered.
	attempts, _ := waitfor.Value(t, 30*time.Second, "three attempts on the record", func() ([]any, bool) {
		view := call(t, rt, http.MethodGet, "/api/generations/status/"+created.str("uuid"), owner.APIKey, nil)
		hook, _ := view.decoded["webhook"].(map[string]any)
		attempts, _ := hook["attempts"].([]any)
		return attempts, len(attempts) >= 3
	})
	if len(attempts) != 3 {
		t.Fatalf("%d attempts on the record, want 3", len(attempts))
	}
	for i, want := range []bool{false, false, true} {
		a, _ := attempts[i].(map[string]any)
		if a["delivered"] != want || a["attempt"] != float64(i+1) {
			t.Errorf("attempt %d = %v; want delivered %v", i+1, a, want)
		}
	}
	waitQueueEmpty(t, rt) // no delivery waits or runs
	if got := len(recv.wait(t, 3)); got != 3 {
		t.Errorf("%d deliveries after success, want exactly 3", got)
	}
}

func TestWebhookEventsFilterAndLongForm(t *testing.T) {
	recv := newHookReceiver(t, 0)
	cfg := storyConfig()
	cfg.WebhookAllow = []string{hostPort(t, recv.srv.URL)}
	rt := start(t, cfg)
	owner := newAccount(t, rt, domain.PlanEnterprise, 1000)
	// Only failures are asked for: a completed generation sends nothing.
	body := imageBody("quiet harbour")
	body["webhook_url"] = recv.srv.URL
	body["webhook_events"] = []string{"generation.failed"}
	ok := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, body)
	body = imageBody("quiet harbour [simulate:fail]")
	body["webhook_url"] = recv.srv.URL
	body["webhook_events"] = []string{"generation.failed"}
	bad := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, body)
	waitFinal(t, rt, owner.APIKey, ok.str("uuid"), 30*time.Second)
	waitFinal(t, rt, owner.APIKey, bad.str("uuid"), 30*time.Second)
	story := storyBody("tides", "en", false, "auto", []storyScene{{1, "waves"}, {2, "gulls"}})
	story["webhook_url"] = recv.srv.URL
	created := call(t, rt, http.MethodPost, "/api/long-story/videos", owner.APIKey, story)
	if created.status != http.StatusOK {
		t.Fatalf("create: HTTP %d %s", created.status, created.body)
	}
	final := waitStory(t, rt, owner.APIKey, created.str("id"))
	hooks := recv.wait(t, 2)
	waitQueueEmpty(t, rt) // no delivery waits or runs
	types := map[string]string{}
	for _, h := range recv.wait(t, 2) {
		var p struct {
			Type string `json:"type"`
			Data struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		_ = json.Unmarshal(h.body, &p)
		types[p.Data.ID] = p.Type
	}
	if len(hooks) != 2 || types[bad.str("uuid")] != "generation.failed" || types[created.str("id")] != "long_video.completed" {
		t.Errorf("webhooks %v; want generation.failed for %s and long_video.completed for %s only", types, bad.str("uuid"), created.str("id"))
	}
	if final.str("status") != "completed" || final.decoded["progress"] != float64(100) {
		t.Errorf("final view %s", final.body)
	}
	scenes, _ := final.decoded["scenes"].([]any)
	if len(scenes) != 2 {
		t.Fatalf("scenes in the view: %v", final.decoded["scenes"])
	}
	for _, s := range scenes {
		if m, _ := s.(map[string]any); m["status"] != "completed" {
			t.Errorf("scene %v, want completed", m)
		}
	}

	// A scene regenerate that completes is told as long_video.completed
	// again, under a webhook-id of its own, with the new revision's view:
	// the final_video_url sent before is deleted.
	id := created.str("id")
	if a := call(t, rt, http.MethodPost, regeneratePath(id, "2"), owner.APIKey, map[string]any{"prompt": "gulls at dusk"}); a.status != http.StatusAccepted {
		t.Fatalf("regenerate: HTTP %d %s", a.status, a.body)
	}
	regenerated := waitRegenerated(t, rt, owner.APIKey, id)
	hooks = recv.wait(t, 3)
	waitQueueEmpty(t, rt)
	if hooks = recv.wait(t, 3); len(hooks) != 3 {
		t.Fatalf("%d webhooks; want one more, for the new revision", len(hooks))
	}
	var first, last receivedHook
	for _, h := range hooks[:2] {
		if strings.Contains(string(h.body), id) {
			first = h
		}
	}
	last = hooks[2]
	var p struct {
		Type string `json:"type"`
		Data struct {
			ID            string  `json:"id"`
			Revision      float64 `json:"revision"`
			FinalVideoURL string  `json:"final_video_url"`
		} `json:"data"`
	}
	if err := json.Unmarshal(last.body, &p); err != nil || p.Type != "long_video.completed" || p.Data.ID != id || p.Data.Revision != 2 ||
		p.Data.FinalVideoURL == "" || p.Data.FinalVideoURL != regenerated.str("final_video_url") || p.Data.FinalVideoURL == final.str("final_video_url") {
		t.Errorf("the regenerate's webhook %s (%v); want long_video.completed of %s at revision 2 with its new final_video_url %s",
			last.body, err, id, regenerated.str("final_video_url"))
	}
	if a, b := first.header.Get(webhook.HeaderID), last.header.Get(webhook.HeaderID); a == "" || a == b {
		t.Errorf("webhook-id %q for the first render and %q for revision 2; want two ids, a receiver dropping repeats keeps both", a, b)
	}
}

func TestUpstreamCallbackCompletesBeforeTheNextPoll(t *testing.T) {
	// Polls an hour apart: only the provider's callback can finish it.
	rt := start(t, runtime.Config{SimulatorLatency: 100 * time.Millisecond, PollInterval: time.Hour})
	owner := newAccount(t, rt, domain.PlanEnterprise, 100)
	created := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, imageBody("a heron"))
	final, ok := waitFinal(t, rt, owner.APIKey, created.str("uuid"), 30*time.Second)
	if !ok || final.str("status") != "completed" {
		t.Fatalf("final: %s", final.body)
	}
	a := settledAccount(t, rt, owner.UserID)
	if !a.Held.IsZero() || !a.Captured.Equal(credits(created.str("credits_used"))) {
		t.Errorf("held %s captured %s; want the hold captured once", a.Held, a.Captured)
	}
	// Unsigned, wrongly signed or stale calls are refused and change nothing.
	g, err := rt.Store.GetGeneration(context.Background(), created.str("uuid"))
	if err != nil {
		t.Fatal(err)
	}
	prediction := []byte(fmt.Sprintf(`{"id":%q,"status":"failed","error":"forged"}`, g.UpstreamID))
	for name, sign := range map[string]func(http.Header){
		"unsigned":     func(http.Header) {},
		"other secret": func(h http.Header) { webhook.SetHeaders(h, webhook.NewSecret(), "msg_x", time.Now(), prediction) },
	} {
		req, _ := http.NewRequest(http.MethodPost, rt.BaseURL+"/api/upstream/webhook?generation="+g.UUID, bytes.NewReader(prediction))
		req.Header.Set("Content-Type", "application/json")
		sign(req.Header)
		if a := send(t, req, true); a.status != http.StatusUnauthorized {
			t.Errorf("%s callback: HTTP %d, want 401", name, a.status)
		}
	}
	if again := call(t, rt, http.MethodGet, "/api/generations/status/"+g.UUID, owner.APIKey, nil); again.str("status") != "completed" {
		t.Errorf("after forged callbacks: %s", again.body)
	}
}
