package runtime_test

import (
	"bytes"
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/local/runtime"
	"github.com/mediagen-dev/mediagen/internal/testkit/clocktest"
)

// Prefer: wait on POST /api/generations/generate, as Replicate's: a quick
// image is answered completed with its outputs; one still running when the
// wait ends is answered processing, as without the header; a wait Replicate
// would refuse is a 400 with nothing held; and an Idempotency-Key replay
// answers what the first request answered, charged once.
func TestPreferWaitAnswersTheFinishedRecord(t *testing.T) {
	rt := start(t, runtimeConfig())
	owner := newAccount(t, rt, domain.PlanEnterprise, 1000)
	const generate = "/api/generations/generate"

	quick := imageBody("a lighthouse at dusk")
	price := quote(t, quick)
	done := callHeaders(t, rt, http.MethodPost, generate, owner.APIKey, quick, map[string]string{"Prefer": "wait=20"})
	if done.status != http.StatusOK || done.str("status") != "completed" {
		t.Fatalf("Prefer: wait=20 on a quick image: HTTP %d %s; want the completed record", done.status, done.body)
	}
	urls, _ := done.decoded["output_data"].(map[string]any)["urls"].([]any)
	if len(urls) != 1 {
		t.Errorf("the completed answer's output_data.urls = %v, want the image", urls)
	} else if u, _ := urls[0].(string); u == "" {
		t.Errorf("output URL %v is empty", urls[0])
	} else if _, ok := download(t, u, t.TempDir(), "image"); !ok {
		t.Errorf("the answer's output %s cannot be downloaded", u)
	}
	if a := settledAccount(t, rt, owner.UserID); !a.Captured.Equal(price) || !a.Balance.Equal(credits("1000").Sub(price)) {
		t.Errorf("after one waited image: captured %s balance %s; want %s captured once", a.Captured, a.Balance, price)
	}

	// A job that does not end within the wait: the processing record.
	held := callHeaders(t, rt, http.MethodPost, generate, owner.APIKey, imageBody("a pier [simulate:hold]"), map[string]string{"Prefer": "wait=1"})
	if held.status != http.StatusOK || held.str("status") != "processing" {
		t.Fatalf("Prefer: wait=1 on a job that runs on: HTTP %d %s; want the processing record", held.status, held.body)
	}
	if urls, _ := held.decoded["output_data"].(map[string]any)["urls"].([]any); len(urls) != 0 {
		t.Errorf("a processing answer with outputs %v", urls)
	}
	if a := account(t, rt, owner.UserID); !a.Held.Equal(price) {
		t.Errorf("while the held job runs: %s held, want its price %s", a.Held, price)
	}
	if c := call(t, rt, http.MethodPost, "/api/generations/"+held.str("uuid")+"/cancel", owner.APIKey, nil); c.status != http.StatusOK {
		t.Errorf("cancel the held job: HTTP %d %s", c.status, c.body)
	}

	// Waits Replicate refuses: a 400 in the error envelope, nothing held.
	for _, bad := range []string{"wait=abc", "wait=-1", "wait=0", "wait=61"} {
		a := callHeaders(t, rt, http.MethodPost, generate, owner.APIKey, malformed(quick), map[string]string{"Prefer": bad})
		if a.status != http.StatusBadRequest || a.str("error", "code") != "invalid_request" {
			t.Errorf("Prefer: %s: HTTP %d %s; want 400 invalid_request", bad, a.status, a.body)
		}
	}
	before := settledAccount(t, rt, owner.UserID)

	// A replay with the same Idempotency-Key answers the first answer,
	// completed, marked replayed, and nothing more is charged.
	key := map[string]string{"Prefer": "wait=20", "Idempotency-Key": "sync-" + uuid.NewString()}
	first := callHeaders(t, rt, http.MethodPost, generate, owner.APIKey, quick, key)
	again := callHeaders(t, rt, http.MethodPost, generate, owner.APIKey, quick, key)
	if first.status != http.StatusOK || first.str("status") != "completed" {
		t.Fatalf("first keyed wait: HTTP %d %s", first.status, first.body)
	}
	if again.status != http.StatusOK || !bytes.Equal(again.body, first.body) || again.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("replay: HTTP %d %s (replayed %q); want the first answer again: %s", again.status, again.body,
			again.header.Get("Idempotent-Replayed"), first.body)
	}
	if a := settledAccount(t, rt, owner.UserID); !a.Balance.Equal(before.Balance.Sub(price)) {
		t.Errorf("after a keyed wait and its replay: balance %s, want %s (one charge)", a.Balance, before.Balance.Sub(price))
	}
	n, err := rt.Embedded.CountGenerations(context.Background(), owner.UserID)
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("%d generations, want 3 (the quick one, the held one, the keyed one)", n)
	}
}

// Prefer: wait=60 is cut to the 25 s cap, so the local gateway (as API
// Gateway, 30 s) gets the processing record from the function, never its
// own 503; the wait's clock is moved, not waited for.
func TestPreferWaitIsCutToTheCapUnderTheGateway(t *testing.T) {
	clk := clocktest.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rt := start(t, runtime.Config{WaitClock: clk})
	owner := newAccount(t, rt, domain.PlanEnterprise, 1000)
	start := clk.Now()
	answered := make(chan answer, 1)
	go func() {
		answered <- callHeaders(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey,
			imageBody("a pier [simulate:hold]"), map[string]string{"Prefer": "wait=60"})
	}()
	// The clock moves each time the wait has armed its timer, until the
	// answer comes (2 min on the wall clock is for a broken test only).
	var got answer
	for limit := time.Now().Add(2 * time.Minute); ; {
		select {
		case got = <-answered:
		default:
			if time.Now().After(limit) {
				t.Fatal("the waiting generate never answered")
			}
			if clk.WaitForTimers(1, 50*time.Millisecond) {
				clk.Advance(500 * time.Millisecond)
			}
			continue
		}
		break
	}
	if got.status != http.StatusOK || got.str("status") != "processing" {
		t.Fatalf("Prefer: wait=60 on a job that runs on: HTTP %d %s; want the processing record", got.status, got.body)
	}
	if waited := clk.Now().Sub(start); waited < 25*time.Second || waited > 26*time.Second {
		t.Errorf("the answer came %s after the request on the wait's clock, want the 25 s cap", waited)
	}
	if c := call(t, rt, http.MethodPost, "/api/generations/"+got.str("uuid")+"/cancel", owner.APIKey, nil); c.status != http.StatusOK {
		t.Errorf("cancel the held job: HTTP %d %s", c.status, c.body)
	}
}
