package runtime_test

import (
	"context"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/local/runtime"
	"github.com/mediagen-dev/mediagen/internal/testkit/waitfor"
)

// soakCounts are what the soak reports.
type soakCounts struct {
	requests, created, completed, failed, refunded, paymentRequired, rateLimited atomic.Int64
}

type soakWork struct {
	id    string
	video bool // a long-form video
}

// TestSoak has many clients create and poll generations of every variant
// (and long-form videos) against the running local service for a fixed
// time, while the simulator fails a share of the jobs, some accounts run
// out of credits and a free account hits its rate limit. At the end every
// record is final, every account's credits add up, exactly the completed
// work is paid for, and every output is in the bucket. MEDIAGEN_SOAK sets
// the time (make soak); make test runs it for a few seconds.
func TestSoak(t *testing.T) {
	length := 6 * time.Second
	if s := os.Getenv("MEDIAGEN_SOAK"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("MEDIAGEN_SOAK=%q: %v", s, err)
		}
		length = d
	}
	cfg := storyConfig()
	cfg.SweepEvery = time.Second
	rt := start(t, cfg)
	type client struct {
		key, user string
	}
	var accts []client
	for _, a := range []struct {
		plan    domain.Plan
		credits int64
		clients int
	}{
		{domain.PlanEnterprise, 100000, 4}, {domain.PlanEnterprise, 100000, 4}, {domain.PlanPro, 100000, 2},
		{domain.PlanFree, 100000, 1},   // runs into its 10 requests a minute
		{domain.PlanEnterprise, 10, 2}, // runs out of credits at once
	} {
		acct := newAccount(t, rt, a.plan, a.credits)
		for i := 0; i < a.clients; i++ {
			accts = append(accts, client{key: acct.APIKey, user: acct.UserID})
		}
	}
	var (
		counts soakCounts
		mu     sync.Mutex
		work   = map[string][]soakWork{} // by account
	)
	count := func(a answer) answer {
		counts.requests.Add(1)
		switch {
		case a.status == http.StatusPaymentRequired:
			counts.paymentRequired.Add(1)
		case a.status == http.StatusTooManyRequests:
			counts.rateLimited.Add(1)
		case a.status >= 500:
			t.Errorf("HTTP %d: %s", a.status, a.body)
		}
		return a
	}
	// A few long-form videos, one of them with a scene the simulator fails.
	for i, scene := range []string{"Rain on a window", "[simulate:fail] A storm"} {
		c := accts[i]
		a := count(call(t, rt, http.MethodPost, "/api/long-story/videos", c.key,
			storyBody("A soak", "en", false, "auto", []storyScene{{1, scene}})))
		if a.status == http.StatusOK {
			mu.Lock()
			work[c.user] = append(work[c.user], soakWork{id: a.str("id"), video: true})
			mu.Unlock()
		}
	}
	// The free account's limit is per calendar minute: 25 quick requests
	// pass 10 in one minute even when they straddle two, however slowly
	// the machine runs the rest of the soak.
	for _, c := range accts {
		if a := account(t, rt, c.user); a.Plan == domain.PlanFree {
			for i := 0; i < 25; i++ {
				count(call(t, rt, http.MethodGet, "/api/account", c.key, nil))
			}
			break
		}
	}
	end := time.Now().Add(length)
	var wg sync.WaitGroup
	for n, c := range accts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(n), 7))
			for i := 0; time.Now().Before(end); i++ {
				vc := variantCases[(n+i)%len(variantCases)]
				if i >= len(variantCases) && vc.seconds > 0 && rng.IntN(4) != 0 {
					vc = variantCases[len(variantCases)-1-rng.IntN(5)] // mostly images after one of each
				}
				body := map[string]any{"model": vc.model, "model_version": vc.version, "input": copyInput(vc.input)}
				if vc.imageCount > 0 {
					body["image_count"] = vc.imageCount
				}
				if rng.IntN(4) == 0 || i == 0 && n == 0 {
					in := body["input"].(map[string]any)
					in["prompt"] = "[simulate:fail] " + in["prompt"].(string)
				}
				a := count(call(t, rt, http.MethodPost, "/api/generations/generate", c.key, body))
				if a.status != http.StatusOK {
					// Try again once the refusal's cause may have passed:
					// the rate limit's window (X-RateLimit-Reset), or the
					// balance changing (the account's other clients' work
					// refunded); at the soak's end at the latest.
					reset, _ := strconv.ParseInt(a.header.Get("X-RateLimit-Reset"), 10, 64)
					before, _ := rt.Store.GetAccount(context.Background(), c.user)
					waitfor.Condition(t, time.Until(end)+time.Minute, "a client's next try after HTTP "+strconv.Itoa(a.status), func() bool {
						if !time.Now().Before(end) {
							return true
						}
						if a.status == http.StatusTooManyRequests {
							return time.Now().Unix() >= reset
						}
						now, err := rt.Store.GetAccount(context.Background(), c.user)
						return err == nil && !now.Balance.Equal(before.Balance)
					})
					continue
				}
				counts.created.Add(1)
				id := a.str("uuid")
				mu.Lock()
				work[c.user] = append(work[c.user], soakWork{id: id})
				mu.Unlock()
				// Poll until the work ends, or the soak does.
				waitfor.Condition(t, time.Until(end)+time.Minute, "generation "+id+" to end", func() bool {
					if !time.Now().Before(end) {
						return true
					}
					s := count(call(t, rt, http.MethodGet, "/api/generations/status/"+id, c.key, nil))
					return s.status == http.StatusOK && s.str("status") != "processing"
				})
			}
		}()
	}
	wg.Wait()

	// Let the work in flight end, as the clients would by polling on.
	ctx := context.Background()
	if !waitfor.Condition(t, 3*time.Minute+length, "the work in flight to end", func() bool {
		gs, err := rt.Embedded.ProcessingGenerations(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		vs, err := rt.Embedded.ProcessingLongVideos(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		return len(gs) == 0 && len(vs) == 0
	}) {
		t.FailNow()
	}
	mu.Lock()
	defer mu.Unlock()
	for user, items := range work {
		paid := decimal.Zero
		for _, w := range items {
			status, credits, urls := soakRecord(t, rt, w)
			switch status {
			case domain.StatusCompleted:
				counts.completed.Add(1)
				paid = paid.Add(credits)
				for _, u := range urls {
					if resp, err := http.Head(u); err != nil || resp.StatusCode != http.StatusOK {
						t.Errorf("output %s of %s is not served (%v)", u, w.id, err)
					} else {
						resp.Body.Close()
					}
				}
			case domain.StatusFailed:
				counts.failed.Add(1)
				counts.refunded.Add(1) // checked below: only completed work is captured
			default:
				t.Errorf("%s ended %s", w.id, status)
			}
		}
		a := account(t, rt, user)
		if !a.Granted.Equal(a.Balance.Add(a.Held).Add(a.Captured)) || !a.Held.IsZero() {
			t.Errorf("account %s: granted %s, balance %s, held %s, captured %s", user, a.Granted, a.Balance, a.Held, a.Captured)
		}
		if !a.Captured.Equal(paid) {
			t.Errorf("account %s: captured %s, but its completed work costs %s", user, a.Captured, paid)
		}
	}
	if counts.completed.Load() == 0 || counts.failed.Load() == 0 || counts.paymentRequired.Load() == 0 || counts.rateLimited.Load() == 0 {
		t.Errorf("the soak did not exercise every outcome")
	}
	if dl := rt.Queue.DeadLetters(); len(dl) != 0 {
		t.Errorf("%d poll messages dead-lettered", len(dl))
	}
	t.Logf("soak of %v with %d clients: %d requests, %d created, %d completed, %d failed, %d refunded, %d answered 402, %d answered 429",
		length, len(accts), counts.requests.Load(), counts.created.Load(), counts.completed.Load(), counts.failed.Load(),
		counts.refunded.Load(), counts.paymentRequired.Load(), counts.rateLimited.Load())
}

func copyInput(in map[string]any) map[string]any {
	out := make(map[string]any, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}

// soakRecord reads a piece of work's outcome from the store.
func soakRecord(t *testing.T, rt *runtime.Runtime, w soakWork) (domain.Status, decimal.Decimal, []string) {
	t.Helper()
	ctx := context.Background()
	if w.video {
		v, err := rt.Store.GetLongVideo(ctx, w.id)
		if err != nil {
			t.Fatal(err)
		}
		var urls []string
		if v.FinalVideoURL != "" {
			urls = []string{v.FinalVideoURL}
		}
		return v.Status, v.CreditsHeld, urls
	}
	g, err := rt.Store.GetGeneration(ctx, w.id)
	if err != nil {
		t.Fatal(err)
	}
	return g.Status, g.CreditsUsed, g.OutputURLs
}
