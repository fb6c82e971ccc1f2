package localsqs

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

type recorder struct {
	mu       sync.Mutex
	bodies   []string
	batches  []int
	failBody map[string]int // body -> failures left
	at       map[string]time.Time
}

func (r *recorder) handle(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.batches = append(r.batches, len(ev.Records))
	var resp events.SQSEventResponse
	for _, m := range ev.Records {
		if r.failBody[m.Body] > 0 {
			r.failBody[m.Body]--
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
			continue
		}
		r.bodies = append(r.bodies, m.Body)
		if r.at != nil {
			r.at[m.Body] = time.Now()
		}
	}
	return resp, nil
}

func (r *recorder) delivered() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.bodies...)
}

// waitFor lets the bubble's time run (the tests run under synctest: its
// fake clock moves only when every goroutine of the test waits, so the
// queue's delays pass at once and exactly) until cond holds, at most 5 s of
// that time.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(5 * time.Second)
	for {
		synctest.Wait()
		if cond() {
			return
		}
		if !time.Now().Before(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

func TestDeliversEveryMessageInBatchesOfAtMostTen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &recorder{failBody: map[string]int{}}
		q := New(r.handle, Config{Workers: 1})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		for i := 0; i < 25; i++ {
			q.Send(ctx, []byte{byte('a' + i)}, 0)
		}
		go q.Run(ctx)
		waitFor(t, "25 deliveries", func() bool { return len(r.delivered()) == 25 })
		for _, n := range r.batches {
			if n > 10 {
				t.Errorf("a batch of %d messages, SQS delivers at most 10", n)
			}
		}
	})
}

func TestDelayedMessageWaitsItsDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &recorder{failBody: map[string]int{}, at: map[string]time.Time{}}
		q := New(r.handle, Config{})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go q.Run(ctx)
		sent := time.Now()
		q.Send(ctx, []byte("later"), 150*time.Millisecond)
		q.Send(ctx, []byte("now"), 0)
		waitFor(t, "both deliveries", func() bool { return len(r.delivered()) == 2 })
		if got := r.delivered(); got[0] != "now" {
			t.Errorf("delivery order %v, want the undelayed message first", got)
		}
		if waited := r.at["later"].Sub(sent); waited != 150*time.Millisecond {
			t.Errorf("delayed message delivered after %v, want its delay, 150ms", waited)
		}
	})
}

func TestFailedMessagesAreRedeliveredThenDeadLettered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &recorder{failBody: map[string]int{"flaky": 2, "poison": 100}}
		q := New(r.handle, Config{Visibility: 10 * time.Millisecond, MaxReceives: 3})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go q.Run(ctx)
		q.Send(ctx, []byte("flaky"), 0)
		q.Send(ctx, []byte("poison"), 0)
		q.Send(ctx, []byte("fine"), 0)
		waitFor(t, "the dead letter", func() bool { return len(q.DeadLetters()) == 1 })
		waitFor(t, "the flaky message", func() bool { return len(r.delivered()) == 2 })
		if dl := q.DeadLetters(); dl[0] != "poison" {
			t.Errorf("dead letters %v, want [poison]", dl)
		}
		if q.Len() != 0 {
			t.Errorf("%d messages left, want none", q.Len())
		}
		// Deleted counts what was handled: flaky (at its third try) and
		// fine, not the failed tries nor the dead letter.
		if n := q.Deleted(); n != 2 {
			t.Errorf("%d messages deleted, want 2", n)
		}
	})
}

func TestHandlerErrorOrPanicFailsTheWholeBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		calls := 0
		q := New(func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			mu.Lock()
			defer mu.Unlock()
			calls++
			switch calls {
			case 1:
				return events.SQSEventResponse{}, errors.New("boom")
			case 2:
				panic("bug")
			}
			return events.SQSEventResponse{}, nil
		}, Config{Visibility: time.Millisecond, MaxReceives: 5})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go q.Run(ctx)
		q.Send(ctx, []byte("m"), 0)
		waitFor(t, "the third delivery", func() bool { mu.Lock(); defer mu.Unlock(); return calls == 3 })
		waitFor(t, "an empty queue", func() bool { return q.Len() == 0 })
	})
}

// A handler that sends its next message to its own queue, as the poller
// does, is stopped by the recursive-loop guard at its 17th message unless
// its function allows recursion; a chain started anew counts from zero.
func TestRecursiveLoopGuardStopsASelfSendingChainUnlessAllowed(t *testing.T) {
	tests := []struct {
		setting       string
		wantDelivered int
		wantDead      int
	}{
		{setting: "", wantDelivered: MaxChainInvocations, wantDead: 1}, // AWS's default
		{setting: RecursiveLoopTerminate, wantDelivered: MaxChainInvocations, wantDead: 1},
		{setting: RecursiveLoopAllow, wantDelivered: 40, wantDead: 0},
	}
	for _, tt := range tests {
		t.Run("RecursiveLoop="+tt.setting, func(t *testing.T) {
			ctx := context.Background()
			var q *Queue
			delivered := 0
			q = New(func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
				delivered += len(ev.Records)
				if delivered < 40 {
					if err := q.Send(ctx, []byte("next"), 0); err != nil {
						t.Fatal(err)
					}
				}
				return events.SQSEventResponse{}, nil
			}, Config{Function: "PollerFunction", RecursiveLoop: tt.setting})
			if err := q.Send(ctx, []byte("first"), 0); err != nil {
				t.Fatal(err)
			}
			q.DeliverDue(ctx)
			if delivered != tt.wantDelivered || len(q.DeadLetters()) != tt.wantDead {
				t.Fatalf("%d invocations, %d dead letters; want %d and %d", delivered, len(q.DeadLetters()), tt.wantDelivered, tt.wantDead)
			}
			if q.Len() != 0 {
				t.Errorf("%d messages left in the queue", q.Len())
			}
			// A message sent outside any invocation starts a chain of its own.
			before := delivered
			if err := q.Send(ctx, []byte("fresh"), 0); err != nil {
				t.Fatal(err)
			}
			q.DeliverDue(ctx)
			if delivered == before {
				t.Error("a new chain was stopped by the old chain's count")
			}
		})
	}
}
