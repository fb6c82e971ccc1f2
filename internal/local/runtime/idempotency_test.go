package runtime_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/local/runtime"
)

func TestIdempotencyKeyReplaysTheFirstAnswerAndChargesOnce(t *testing.T) {
	rt := start(t, runtime.Config{SimulatorLatency: 200 * time.Millisecond})
	owner := newAccount(t, rt, domain.PlanEnterprise, 100)
	body := imageBody("a lighthouse at dusk")
	key := map[string]string{"Idempotency-Key": "order-" + uuid.NewString()}

	// Two at once, then one more after: one generation, one charge.
	var wg sync.WaitGroup
	answers := make([]answer, 3)
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = callHeaders(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, body, key)
		}()
	}
	wg.Wait()
	answers[2] = callHeaders(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, body, key)
	for i, a := range answers {
		if a.status != http.StatusOK || !bytes.Equal(a.body, answers[0].body) {
			t.Fatalf("answer %d: HTTP %d %s; want the first answer again: %s", i, a.status, a.body, answers[0].body)
		}
	}
	replayed := 0
	for _, a := range answers {
		if a.header.Get("Idempotent-Replayed") == "true" {
			replayed++
		}
	}
	if replayed != 2 {
		t.Errorf("%d answers marked Idempotent-Replayed, want 2", replayed)
	}
	n, err := rt.Embedded.CountGenerations(context.Background(), owner.UserID)
	if err != nil || n != 1 {
		t.Fatalf("%d generations recorded (%v), want 1", n, err)
	}
	price := credits(answers[0].str("credits_used"))
	if a := account(t, rt, owner.UserID); !a.Balance.Add(a.Held).Add(a.Captured).Equal(credits("100")) ||
		!a.Balance.Equal(credits("100").Sub(price)) {
		t.Errorf("balance %s held %s captured %s; want one charge of %s", a.Balance, a.Held, a.Captured, price)
	}

	// The same key with another body changes nothing.
	before := account(t, rt, owner.UserID)
	other := callHeaders(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, imageBody("another prompt"), key)
	if other.status != http.StatusUnprocessableEntity || other.str("error", "code") != "idempotency_key_reused" {
		t.Errorf("same key, other body: HTTP %d %s; want 422 idempotency_key_reused", other.status, other.body)
	}
	if after := account(t, rt, owner.UserID); !after.Balance.Equal(before.Balance) || !after.Held.Equal(before.Held) {
		t.Errorf("the refused request moved credits: %s/%s -> %s/%s", before.Balance, before.Held, after.Balance, after.Held)
	}
	// Another account may use the same key for its own request.
	stranger := newAccount(t, rt, domain.PlanEnterprise, 100)
	if a := callHeaders(t, rt, http.MethodPost, "/api/generations/generate", stranger.APIKey, body, key); a.status != http.StatusOK ||
		a.str("uuid") == answers[0].str("uuid") || a.header.Get("Idempotent-Replayed") != "" {
		t.Errorf("another account with the same key: HTTP %d %s; want its own new generation", a.status, a.body)
	}
	// A bad key is refused.
	if a := callHeaders(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, malformed(body),
		map[string]string{"Idempotency-Key": strings.Repeat("k", 256)}); a.status != http.StatusBadRequest {
		t.Errorf("256-character key: HTTP %d, want 400", a.status)
	}
	// Long-form creation is a POST too.
	story := storyBody("tides", "en", false, "auto", []storyScene{{1, "waves"}})
	skey := map[string]string{"Idempotency-Key": uuid.NewString()}
	first := callHeaders(t, rt, http.MethodPost, "/api/long-story/videos", owner.APIKey, story, skey)
	again := callHeaders(t, rt, http.MethodPost, "/api/long-story/videos", owner.APIKey, story, skey)
	if first.status != http.StatusOK || again.status != http.StatusOK || first.str("id") != again.str("id") {
		t.Errorf("long-form replay: %d %s / %d %s; want the same video", first.status, first.body, again.status, again.body)
	}
}
