package runtime_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/routing"
	"github.com/mediagen-dev/mediagen/internal/local/runtime"
	"github.com/mediagen-dev/mediagen/internal/local/simulator"
	"github.com/mediagen-dev/mediagen/internal/testkit/clocktest"
	"github.com/mediagen-dev/mediagen/internal/testkit/waitfor"
)

// deadline_seconds, as Replicate's Cancel-After: a generation not done
// when the caller's deadline passes (the service's clock moved past it) is
// canceled upstream and ends canceled with reason "deadline". One still
// waiting in line for the provider, which never started, is released; one
// the provider had is refunded, as a cancel is. Either way nothing is
// charged, and a deadline not yet reached leaves the job running.
func TestDeadlineSecondsCancelsAtTheDeadline(t *testing.T) {
	clk := clocktest.New(time.Now().UTC().Truncate(time.Second))
	rc := routing.Default()
	rc.Upstreams["simulator"].MaxConcurrent = 1 // the second job waits in line
	rt := start(t, runtime.Config{Routing: rc, Clock: clk.Now})
	owner := newAccount(t, rt, domain.PlanEnterprise, 1000)
	generate := func(prompt string, deadline int) answer {
		t.Helper()
		body := imageBody(prompt)
		body["deadline_seconds"] = deadline
		a := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, body)
		if a.status != http.StatusOK || a.str("status") != "processing" {
			t.Fatalf("generate %q: HTTP %d %s", prompt, a.status, a.body)
		}
		return a
	}
	started := generate("a lighthouse [simulate:hold]", 60)
	waiting := generate("a harbour [simulate:hold]", 30)
	if waiting.str("upstream_id") != "" {
		t.Fatalf("the second job reached the provider (%s) past its cap of 1", waiting.str("upstream_id"))
	}
	ended := func(id string) answer {
		t.Helper()
		a, ok := waitfor.Value(t, time.Minute, "generation "+id+" to end at its deadline", func() (answer, bool) {
			a := call(t, rt, http.MethodGet, "/api/generations/status/"+id, owner.APIKey, nil)
			return a, a.str("status") != "processing"
		})
		if !ok {
			t.Fatalf("%s did not end: %s", id, a.body)
		}
		return a
	}

	clk.Advance(31 * time.Second)
	w := ended(waiting.str("uuid"))
	if w.str("status") != "canceled" || w.str("error") != domain.DeadlineError {
		t.Errorf("past its 30 s deadline the waiting job reads %s; want canceled, error %q", w.body, domain.DeadlineError)
	}
	if s := call(t, rt, http.MethodGet, "/api/generations/status/"+started.str("uuid"), owner.APIKey, nil); s.str("status") != "processing" {
		t.Errorf("31 s into a 60 s deadline the started job reads %s; want it still processing", s.body)
	}

	clk.Advance(30 * time.Second)
	s := ended(started.str("uuid"))
	if s.str("status") != "canceled" || s.str("error") != domain.DeadlineError {
		t.Errorf("past its 60 s deadline the started job reads %s; want canceled, error %q", s.body, domain.DeadlineError)
	}
	waitfor.Condition(t, time.Minute, "the provider's job to be canceled", func() bool {
		for _, p := range rt.Simulator.Predictions("provider-a/theta-4-fast") {
			if p.ID == started.str("upstream_id") {
				return p.Status == simulator.StatusCanceled
			}
		}
		return false
	})

	if a := settledAccount(t, rt, owner.UserID); !a.Balance.Equal(credits("1000")) || !a.Held.IsZero() {
		t.Errorf("after both deadlines: balance %s, held %s; want 1000 and nothing held (nothing charged)", a.Balance, a.Held)
	}
	for _, c := range []struct{ id, want string }{{waiting.str("uuid"), "release"}, {started.str("uuid"), "refund"}} {
		entries := transactions(t, rt, owner.APIKey, "&work_id="+c.id)
		if len(entries) != 2 || entries[0]["type"] != c.want {
			t.Errorf("the transactions of %s = %v; want its hold then a %s", c.id, entries, c.want)
		}
	}
}
