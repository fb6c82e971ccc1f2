package generation_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/adapters/upstream"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/generation"
	"github.com/mediagen-dev/mediagen/internal/testkit/clocktest"
)

// countingStore counts the reads of generation records.
type countingStore struct {
	generation.Store
	reads atomic.Int64
}

func (c *countingStore) GetGeneration(ctx context.Context, uuid string) (domain.Generation, error) {
	c.reads.Add(1)
	return c.Store.GetGeneration(ctx, uuid)
}

type waited struct {
	g   domain.Generation
	err error
	at  time.Time // the fake clock when the answer came
}

// createAndWait runs CreateAndWait on a fake clock in its own goroutine;
// step, called once the wait has armed its first timer, may finish the
// job. The clock then moves 100 ms at a time while the wait waits on it.
func createAndWait(ctx context.Context, t *testing.T, f *fixture, wait time.Duration, step func()) (waited, time.Time) {
	t.Helper()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktest.New(start)
	f.svc.Settings.Timers = clk
	done := make(chan waited, 1)
	go func() {
		g, err := f.creator().CreateAndWait(ctx, f.user, []byte(imageBody), wait)
		done <- waited{g, err, clk.Now()}
	}()
	if !clk.WaitForTimers(1, 30*time.Second) {
		t.Fatal("the wait never armed a timer")
	}
	if step != nil {
		step()
	}
	limit := time.Now().Add(60 * time.Second) // a broken test only
	for time.Now().Before(limit) {
		select {
		case w := <-done:
			return w, start
		default:
		}
		if clk.WaitForTimers(1, 50*time.Millisecond) {
			clk.Advance(100 * time.Millisecond)
		}
	}
	t.Fatal("CreateAndWait did not answer")
	return waited{}, start
}

func TestCreateAndWait(t *testing.T) {
	cases := []struct {
		name       string
		wait       time.Duration
		finishes   bool
		wantStatus domain.Status
		wantAfter  time.Duration // the answer on the fake clock, from the request
		maxReads   int64         // the record's reads while it waited
	}{
		{"a job that ends within the wait is answered completed with its outputs", 10 * time.Second, true, domain.StatusCompleted, 0, 3},
		{"a job still running answers processing once the wait is over", 3 * time.Second, false, domain.StatusProcessing, 3 * time.Second, 20},
		{"a 60 s wait is cut to the cap under API Gateway's 30 s", generation.MaxWait, false, domain.StatusProcessing, generation.WaitCap, 40},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := setup(t)
			counted := &countingStore{Store: f.svc.Store}
			f.svc.Store = counted
			var step func()
			if c.finishes {
				step = func() {
					f.up.set(upstream.StatusSucceeded, f.up.srv.URL+"/files/a.png", f.up.srv.URL+"/files/b.png")
					f.queue.mu.Lock()
					m := f.queue.msgs[0]
					f.queue.mu.Unlock()
					if err := f.svc.Poll(context.Background(), m); err != nil {
						t.Error(err)
					}
				}
			}
			w, start := createAndWait(context.Background(), t, f, c.wait, step)
			if w.err != nil {
				t.Fatal(w.err)
			}
			if w.g.Status != c.wantStatus {
				t.Fatalf("answered %s, want %s", w.g.Status, c.wantStatus)
			}
			if c.finishes && len(w.g.OutputURLs) != 2 {
				t.Errorf("completed answer has outputs %v, want 2", w.g.OutputURLs)
			}
			if c.finishes && w.g.Input == nil {
				t.Error("the answer lost its input")
			}
			if elapsed := w.at.Sub(start); c.wantAfter > 0 && (elapsed < c.wantAfter || elapsed > c.wantAfter+100*time.Millisecond) {
				t.Errorf("answered %s after the request, want %s", elapsed, c.wantAfter)
			}
			if n := counted.reads.Load(); n > c.maxReads {
				t.Errorf("the record was read %d times while it waited %s, want at most %d", n, w.at.Sub(start), c.maxReads)
			}
			if c.finishes && w.at.Sub(start) >= c.wait {
				t.Errorf("a job done at once was answered only when the wait was over (%s)", w.at.Sub(start))
			}
		})
	}
}

// In Lambda the function's deadline (ctx's) comes before a wait that
// would outlast it: the answer leaves 2 s before it, processing.
func TestCreateAndWaitEndsBeforeTheFunctionsDeadline(t *testing.T) {
	f := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w, start := createAndWait(ctx, t, f, 20*time.Second, nil)
	if w.err != nil {
		t.Fatal(w.err)
	}
	if w.g.Status != domain.StatusProcessing {
		t.Fatalf("answered %s, want processing", w.g.Status)
	}
	// The deadline is 10 s off on the wall clock when the wait starts;
	// the wait ends 2 s before it, so at most 8 s of fake time.
	if elapsed := w.at.Sub(start); elapsed > 8*time.Second+100*time.Millisecond || elapsed < 5*time.Second {
		t.Errorf("answered %s after the request; want about 8 s (2 s before the 10 s deadline)", elapsed)
	}
}
