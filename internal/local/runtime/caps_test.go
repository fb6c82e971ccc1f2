package runtime_test

import (
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/routing"
	"github.com/mediagen-dev/mediagen/internal/local/runtime"
)

// TestUpstreamCapIsNeverExceededAndEveryJobCompletes floods one provider
// with more jobs than its cap: the provider never runs more than the cap at
// once, the jobs beyond it wait in the queue showing their place in line,
// and every one completes and is charged once.
func TestUpstreamCapIsNeverExceededAndEveryJobCompletes(t *testing.T) {
	const limit, jobs = 2, 10
	rc := routing.Default()
	rc.Upstreams["simulator"].MaxConcurrent = limit
	rt := start(t, runtime.Config{SimulatorLatency: 150 * time.Millisecond, Routing: rc})
	owner := newAccount(t, rt, domain.PlanEnterprise, 1000)

	// Watch the provider: the most jobs it ever runs at once.
	var peak atomic.Int64
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			if n := int64(rt.Simulator.Active("provider-a/theta-4-fast")); n > peak.Load() {
				peak.Store(n)
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()

	ids := make([]string, jobs)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, imageBody("a queue of cranes"))
			if a.status != http.StatusOK {
				t.Errorf("generate: HTTP %d %s", a.status, a.body)
			}
			ids[i] = a.str("uuid")
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	sawPosition := false
	for _, id := range ids {
		v := call(t, rt, http.MethodGet, "/api/generations/status/"+id, owner.APIKey, nil)
		if p, ok := v.decoded["queue_position"].(float64); ok && p >= 1 && v.str("status") == "processing" {
			sawPosition = true
		}
	}
	for _, id := range ids {
		final, ok := waitFinal(t, rt, owner.APIKey, id, time.Minute)
		if !ok || final.str("status") != "completed" {
			t.Errorf("%s ended %s: %s", id, final.str("status"), final.body)
		}
		if _, waiting := final.decoded["queue_position"]; waiting {
			t.Errorf("a final view shows queue_position: %s", final.body)
		}
	}
	close(stop)
	<-watched
	if got := peak.Load(); got > limit || got == 0 {
		t.Errorf("the provider ran %d jobs at once, cap %d", got, limit)
	}
	if !sawPosition {
		t.Error("no waiting generation showed its queue_position")
	}
	if n, err := rt.Store.SlotsInUse(t.Context(), "provider-a"); err != nil || n != 0 {
		t.Errorf("%d slots still taken after every job ended (%v)", n, err)
	}
	a := settledAccount(t, rt, owner.UserID)
	if !a.Held.IsZero() || !a.Balance.Add(a.Captured).Equal(a.Granted) {
		t.Errorf("balance %s held %s captured %s granted %s: want every job charged once", a.Balance, a.Held, a.Captured, a.Granted)
	}
}
