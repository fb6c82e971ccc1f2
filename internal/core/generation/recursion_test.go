package generation_test

import (
	"context"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/deploy"
	"github.com/mediagen-dev/mediagen/internal/adapters/upstream"
	"github.com/mediagen-dev/mediagen/internal/aws/sqsbatch"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/routing"
	"github.com/mediagen-dev/mediagen/internal/local/localsqs"
)

// pollerRecursiveLoop is the PollerFunction's RecursiveLoop setting in
// template.yaml ("" when it sets none: AWS's default, Terminate).
func pollerRecursiveLoop(t *testing.T) string {
	t.Helper()
	tpl, err := deploy.Load("../../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	poller, ok := tpl.Resources["PollerFunction"]
	if !ok {
		t.Fatal("template.yaml has no PollerFunction")
	}
	setting, _ := poller.Properties["RecursiveLoop"].(string)
	return setting
}

// The poll chain sends each poll to the queue that invokes the poller, so
// in AWS every poll of a generation is one more invocation of the poller in
// the same trace; Lambda's recursive-loop guard stops such a chain at its
// 17th invocation unless the function allows it. On the local queue, which
// applies the guard with the template's setting, and a fake clock: a job
// running 10 minutes upstream (about 25 polls), and a generation waiting 5
// minutes for the only slot (one ask a second), both complete.
func TestPollChainsOutliveLambdasRecursiveLoopGuard(t *testing.T) {
	setting := pollerRecursiveLoop(t)
	tests := []struct {
		name string
		// slots caps the upstream (0: no cap); the test creates that many
		// generations plus one, so the last waits for a slot.
		slots   int
		running time.Duration // how long each job runs upstream
	}{
		{name: "a job running 10 minutes", running: 10 * time.Minute},
		{name: "a slot wait of 5 minutes", slots: 1, running: 5 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := setupWith(t, func(c *routing.Config) { c.Upstreams["fake"].MaxConcurrent = tt.slots })
			f.svc.Slots = f.store
			f.svc.ImageDeadline = 30 * time.Minute
			clock := func() time.Time { return *f.now }
			q := localsqs.New(sqsbatch.Handler(f.svc.HandleBatch), localsqs.Config{
				BatchSize: 5, Function: "PollerFunction", RecursiveLoop: setting, Now: clock})
			f.svc.Queue = q
			start := *f.now
			var gens []domain.Generation
			for range tt.slots + 1 {
				gens = append(gens, f.create(t))
			}
			ctx := context.Background()
			deliveries := 0
			for !f.allFinal(t, gens) {
				if !f.now.Before(start.Add(tt.running)) {
					f.up.set(upstream.StatusSucceeded, f.up.srv.URL+"/files/a.png", f.up.srv.URL+"/files/b.png")
				}
				deliveries += q.DeliverDue(ctx)
				next, ok := q.NextVisible()
				if !ok || next.Sub(start) > time.Hour {
					break
				}
				if next.After(*f.now) {
					*f.now = next
				}
			}
			for _, g := range gens {
				got, err := f.store.GetGeneration(ctx, g.UUID)
				if err != nil {
					t.Fatal(err)
				}
				if got.Status != domain.StatusCompleted {
					t.Errorf("generation %s is %s after %s (%d deliveries; dead letters %v; template.yaml PollerFunction RecursiveLoop %q)",
						g.UUID, got.Status, f.now.Sub(start), deliveries, q.DeadLetters(), setting)
				}
			}
			if deliveries <= localsqs.MaxChainInvocations {
				t.Errorf("only %d deliveries: the chain never passed the guard's %d", deliveries, localsqs.MaxChainInvocations)
			}
		})
	}
}

// allFinal says whether every generation has ended.
func (f *fixture) allFinal(t *testing.T, gens []domain.Generation) bool {
	t.Helper()
	for _, g := range gens {
		got, err := f.store.GetGeneration(context.Background(), g.UUID)
		if err != nil {
			t.Fatal(err)
		}
		if !got.Status.Terminal() {
			return false
		}
	}
	return true
}
