package runtime_test

import (
	"context"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/media"
)

// copyGate stops the output copy before the put numbered at (0-based),
// once, until the test lets it go.
type copyGate struct {
	media.Bucket
	at      int
	mu      sync.Mutex
	puts    int
	reached chan struct{}
	resume  chan struct{}
}

func (g *copyGate) Put(ctx context.Context, key string, body io.Reader, contentType string) error {
	g.mu.Lock()
	n := g.puts
	g.puts++
	g.mu.Unlock()
	if n == g.at {
		close(g.reached)
		<-g.resume
	}
	return g.Bucket.Put(ctx, key, body, contentType)
}

// TestCancelDuringTheCopyNeverGivesOutputsAway: through the HTTP API, a
// cancel that arrives while a four-image theta-4-fast generation's outputs
// are being copied (two stored, two to go) answers 409 finishing; the
// generation completes, is charged, and its four URLs serve the images.
// A cancel that comes before the copy (another generation) wins: every
// credit comes back and none of its four output URLs answers.
func TestCancelDuringTheCopyNeverGivesOutputsAway(t *testing.T) {
	gate := &copyGate{at: 2, reached: make(chan struct{}), resume: make(chan struct{})}
	cfg := runtimeConfig()
	cfg.WrapCopyBucket = func(b media.Bucket) media.Bucket { gate.Bucket = b; return gate }
	rt := start(t, cfg)
	owner := newAccount(t, rt, domain.PlanEnterprise, 1000)
	body := imageBody("four lighthouses at dawn")
	body["image_count"] = 4
	price := quote(t, body)
	created := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, body)
	if created.status != http.StatusOK {
		t.Fatalf("generate: HTTP %d %s", created.status, created.body)
	}
	id := created.str("uuid")
	select {
	case <-gate.reached:
	case <-time.After(time.Minute):
		t.Fatal("the output copy never reached its third output")
	}
	canceled := call(t, rt, http.MethodPost, "/api/generations/"+id+"/cancel", owner.APIKey, nil)
	close(gate.resume)
	if canceled.status != http.StatusConflict || canceled.str("error", "code") != "finishing" {
		t.Fatalf("cancel during the copy: HTTP %d %s; want 409 finishing", canceled.status, canceled.body)
	}
	view, ok := waitFinal(t, rt, owner.APIKey, id, time.Minute)
	if !ok {
		t.FailNow()
	}
	urls, _ := view.decoded["output"].([]any)
	if view.str("status") != "completed" || len(urls) != 4 {
		t.Fatalf("after a refused cancel: %s; want completed with 4 outputs", view.body)
	}
	for _, u := range urls {
		if code := get(t, u.(string)); code != http.StatusOK {
			t.Errorf("GET %s = %d, want 200", u, code)
		}
	}
	a := settledAccount(t, rt, owner.UserID)
	if !a.Captured.Equal(price) || !a.Balance.Equal(credits("1000").Sub(price)) {
		t.Errorf("completed: captured %s balance %s; want %s charged", a.Captured, a.Balance, price)
	}

	// Canceled before its copy started: nothing is ever stored.
	slow := imageBody("four slow sunrises [simulate:slow]")
	slow["image_count"] = 4
	early := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, slow)
	if early.status != http.StatusOK {
		t.Fatalf("generate: HTTP %d %s", early.status, early.body)
	}
	won := call(t, rt, http.MethodPost, "/api/generations/"+early.str("uuid")+"/cancel", owner.APIKey, nil)
	if won.status != http.StatusOK || won.str("status") != "canceled" {
		t.Fatalf("cancel before the copy: HTTP %d %s", won.status, won.body)
	}
	for i := 0; i < 4; i++ {
		u := rt.Objects.MediaBucket().URL(media.OutputKeyBase(early.str("uuid"), i) + ".png")
		if code := get(t, u); code != http.StatusNotFound {
			t.Errorf("GET %s of the canceled generation = %d, want 404", u, code)
		}
	}
	if keys, err := rt.Objects.MediaBucket().Keys(context.Background(), media.GenerationPrefix(early.str("uuid"))); err != nil || len(keys) != 0 {
		t.Errorf("the canceled generation has objects %v (%v); want none", keys, err)
	}
	if a := settledAccount(t, rt, owner.UserID); !a.Balance.Equal(credits("1000").Sub(price)) || !a.Held.IsZero() {
		t.Errorf("after the early cancel: balance %s held %s; want its credits back", a.Balance, a.Held)
	}
}

func get(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
