package generation_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/adapters/upstream"
	"github.com/mediagen-dev/mediagen/internal/aws/sqsbatch"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/generation"
	"github.com/mediagen-dev/mediagen/internal/core/webhook"
)

// hookedUpstreams calls onGet before each read of a job, so a test can
// see which polls run at once and hold them there.
type hookedUpstreams struct {
	generation.Upstreams
	onGet func(ctx context.Context)
}

func (h hookedUpstreams) Provider(name string) (upstream.Provider, error) {
	p, err := h.Upstreams.Provider(name)
	if err != nil {
		return nil, err
	}
	return hookedProvider{Provider: p, onGet: h.onGet}, nil
}

type hookedProvider struct {
	upstream.Provider
	onGet func(ctx context.Context)
}

func (p hookedProvider) Get(ctx context.Context, job domain.UpstreamJob) (upstream.Result, error) {
	p.onGet(ctx)
	return p.Provider.Get(ctx, job)
}

// countingCopier counts the copies; the copy numbered stallAt (1-based,
// 0 for none) blocks until its context ends, as a copy too slow for the
// time left would. The copies before it finish however slow the machine
// (their context's deadline is not theirs to meet), so the cut falls on
// the copy the test names.
type countingCopier struct {
	inner   generation.Copier
	calls   atomic.Int32
	stallAt atomic.Int32
}

func (c *countingCopier) Copy(ctx context.Context, src, keyBase string, kind domain.MediaKind) (string, error) {
	n, stallAt := c.calls.Add(1), c.stallAt.Load()
	switch {
	case n == stallAt:
		<-ctx.Done()
		return "", fmt.Errorf("fetch output: %w", ctx.Err())
	case n < stallAt:
		ctx = context.WithoutCancel(ctx)
	}
	return c.inner.Copy(ctx, src, keyBase, kind)
}

// clock is a clock a test moves while polls read it.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) Set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

// batchOf creates n generations and the SQS batch of their first polls.
func (f *fixture) batchOf(t *testing.T, n int) ([]domain.Generation, events.SQSEvent) {
	t.Helper()
	var gs []domain.Generation
	var ev events.SQSEvent
	for i := 0; i < n; i++ {
		gs = append(gs, f.create(t))
	}
	for i, m := range f.queue.msgs {
		ev.Records = append(ev.Records, sqsRecord(t, "m"+strconv.Itoa(i), m))
	}
	return gs, ev
}

func sqsRecord(t *testing.T, id string, m generation.PollMessage) events.SQSMessage {
	t.Helper()
	body, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return events.SQSMessage{MessageId: id, Body: string(body)}
}

// waitAll blocks until close(all), or fails the test: polls that ran one
// after the other never all arrive.
func waitAll(t *testing.T, all <-chan struct{}, what string) {
	select {
	case <-all:
	case <-time.After(10 * time.Second):
		t.Errorf("%s never ran at once", what)
	}
}

func TestPollerRunsTheBatchInParallel(t *testing.T) {
	f := setup(t)
	gs, ev := f.batchOf(t, 5) // the poll queue's BatchSize in template.yaml
	f.up.set(upstream.StatusSucceeded, f.up.srv.URL+"/files/a.png", f.up.srv.URL+"/files/b.png")
	// Each poll waits in its read of the job until all of them are there:
	// run one at a time, the first would wait alone.
	var arrived atomic.Int32
	all := make(chan struct{})
	f.svc.Upstreams = hookedUpstreams{Upstreams: f.svc.Upstreams, onGet: func(context.Context) {
		if arrived.Add(1) == int32(len(gs)) {
			close(all)
		}
		waitAll(t, all, "the batch's polls")
	}}
	resp, err := sqsbatch.Handler(f.svc.HandleBatch)(context.Background(), ev)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("poller = %+v, %v", resp, err)
	}
	for _, g := range gs {
		if got, _ := f.store.GetGeneration(context.Background(), g.UUID); got.Status != domain.StatusCompleted || len(got.OutputURLs) != 2 {
			t.Errorf("generation %s: %s with %d outputs", g.UUID, got.Status, len(got.OutputURLs))
		}
	}
}

func TestPollerStartsNoMessageTooCloseToTheDeadline(t *testing.T) {
	const batch = 5
	tests := []struct {
		name        string
		parallelism int
		// timeLeft is the time before the invocation's deadline (0: none).
		timeLeft time.Duration
		// jumpAfter: once that many polls run at once, the clock jumps to
		// 30 s before the deadline (0: it does not move).
		jumpAfter int
		wantLeft  int // the last messages of the batch not started
	}{
		{name: "no deadline", wantLeft: 0},
		{name: "deadline far off", timeLeft: 10 * time.Minute, wantLeft: 0},
		{name: "deadline within the start margin", timeLeft: 30 * time.Second, wantLeft: batch},
		{name: "deadline reached while the batch runs", parallelism: 2, timeLeft: 5 * time.Minute, jumpAfter: 2, wantLeft: batch - 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := setup(t)
			gs, ev := f.batchOf(t, batch)
			held := f.account(t).Held
			f.up.set(upstream.StatusSucceeded, f.up.srv.URL+"/files/a.png", f.up.srv.URL+"/files/b.png")
			clk := &clock{t: time.Now()}
			f.svc.Now, f.svc.PollParallelism = clk.Now, tt.parallelism
			ctx := context.Background()
			if tt.timeLeft > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithDeadline(ctx, clk.Now().Add(tt.timeLeft))
				defer cancel()
			}
			var reads atomic.Int32
			all := make(chan struct{})
			f.svc.Upstreams = hookedUpstreams{Upstreams: f.svc.Upstreams, onGet: func(ctx context.Context) {
				n := reads.Add(1)
				if tt.jumpAfter == 0 || n > int32(tt.jumpAfter) {
					return
				}
				if n == int32(tt.jumpAfter) {
					dl, _ := ctx.Deadline()
					clk.Set(dl.Add(-30 * time.Second))
					close(all)
				}
				waitAll(t, all, "the first polls")
			}}

			resp, err := sqsbatch.Handler(f.svc.HandleBatch)(ctx, ev)
			if err != nil {
				t.Fatal(err)
			}
			var left, want []string
			for _, fl := range resp.BatchItemFailures {
				left = append(left, fl.ItemIdentifier)
			}
			for _, r := range ev.Records[batch-tt.wantLeft:] {
				want = append(want, r.MessageId)
			}
			if !slices.Equal(left, want) {
				t.Fatalf("batch item failures %v, want the messages not started %v", left, want)
			}
			if got := int(reads.Load()); got != batch-tt.wantLeft {
				t.Errorf("%d jobs read, want %d: a message not started did some work", got, batch-tt.wantLeft)
			}
			for i, g := range gs {
				got, _ := f.store.GetGeneration(context.Background(), g.UUID)
				if want := domain.StatusCompleted; i >= batch-tt.wantLeft {
					want = domain.StatusProcessing
					if got.Status != want {
						t.Errorf("generation %d not started: %s, want %s", i, got.Status, want)
					}
				} else if got.Status != want {
					t.Errorf("generation %d: %s, want %s", i, got.Status, want)
				}
			}

			// SQS delivers them again, to an invocation with time left:
			// nothing was lost.
			var again events.SQSEvent
			for _, r := range ev.Records {
				if slices.Contains(left, r.MessageId) {
					again.Records = append(again.Records, r)
				}
			}
			ctx2, cancel := context.WithDeadline(context.Background(), clk.Now().Add(5*time.Minute))
			defer cancel()
			if resp, err := sqsbatch.Handler(f.svc.HandleBatch)(ctx2, again); err != nil || len(resp.BatchItemFailures) != 0 {
				t.Fatalf("redelivery: %+v, %v", resp, err)
			}
			for i, g := range gs {
				if got, _ := f.store.GetGeneration(context.Background(), g.UUID); got.Status != domain.StatusCompleted || len(got.OutputURLs) != 2 {
					t.Errorf("after redelivery, generation %d: %s with %d outputs", i, got.Status, len(got.OutputURLs))
				}
			}
			if a := f.account(t); !a.Held.IsZero() || !a.Captured.Equal(held) || !a.Balance.Equal(decimal.NewFromInt(100).Sub(held)) {
				t.Errorf("balance %s held %s captured %s; want %s captured once", a.Balance, a.Held, a.Captured, held)
			}
		})
	}
}

func TestACopyCutOffByTheDeadlineIsPolledAgain(t *testing.T) {
	tests := []struct {
		name    string
		stallAt int32 // which of the two outputs' copies is cut off
	}{
		{"the first output", 1},
		{"the second, after the first was copied", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := setup(t)
			g := f.create(t)
			held := f.account(t).Held
			f.up.set(upstream.StatusSucceeded, f.up.srv.URL+"/files/a.png", f.up.srv.URL+"/files/b.png")
			copier := &countingCopier{inner: f.svc.Copier}
			copier.stallAt.Store(tt.stallAt)
			f.svc.Copier = copier
			// The copies end RecordMargin before the invocation's deadline,
			// a second from now; the rest is left to record what happened.
			f.svc.RecordMargin = 5 * time.Second
			ctx, cancel := context.WithTimeout(context.Background(), f.svc.RecordMargin+time.Second)
			defer cancel()
			if err := f.svc.Poll(ctx, f.queue.msgs[0]); err != nil {
				t.Fatalf("Poll with its copy cut off = %v, want the poll handed on", err)
			}
			if ctx.Err() != nil {
				t.Fatal("the poll ran past the invocation's deadline")
			}
			if n := copier.calls.Load(); n != tt.stallAt {
				t.Fatalf("the cut-off poll made %d copies, want %d (the cut one last)", n, tt.stallAt)
			}
			// The next invocation has its time: no copy of it is cut off
			// (a copy blocked on a context without a deadline never ends).
			copier.stallAt.Store(0)
			got, _ := f.store.GetGeneration(context.Background(), g.UUID)
			if got.Status != domain.StatusProcessing || len(got.OutputURLs) != 0 {
				t.Fatalf("after a cut-off copy: %s with outputs %v; want processing, nothing published", got.Status, got.OutputURLs)
			}
			if a := f.account(t); !a.Held.Equal(held) || !a.Captured.IsZero() {
				t.Errorf("after a cut-off copy: held %s captured %s; want the hold untouched", a.Held, a.Captured)
			}
			last := len(f.queue.msgs) - 1
			next := f.queue.msgs[last]
			if next.Attempt != 1 || next.Errors != 0 || f.queue.lag[last] != 0 {
				t.Fatalf("next poll %+v after %v; want attempt 1, no error counted, at once", next, f.queue.lag[last])
			}
			if err := f.svc.Poll(context.Background(), next); err != nil {
				t.Fatal(err)
			}
			got, _ = f.store.GetGeneration(context.Background(), g.UUID)
			if got.Status != domain.StatusCompleted || len(got.OutputURLs) != 2 {
				t.Fatalf("next poll: %s with %d outputs", got.Status, len(got.OutputURLs))
			}
			if a := f.account(t); !a.Held.IsZero() || !a.Captured.Equal(held) {
				t.Errorf("held %s captured %s; want %s captured once", a.Held, a.Captured, held)
			}
		})
	}
}

// callback signs a prediction as the provider does and hands it to the
// service, as POST /api/upstream/webhook does.
func (f *fixture) callback(t *testing.T, g domain.Generation, prediction string) error {
	t.Helper()
	h := http.Header{}
	if err := webhook.SetHeaders(h, f.up.secret, "msg_"+strconv.Itoa(len(f.queue.msgs)), time.Now(), []byte(prediction)); err != nil {
		t.Fatal(err)
	}
	return f.callbacks().Callback(context.Background(), g.UUID, h, []byte(prediction))
}

func TestCallbackQueuesTheReportAndThePollerActsOnIt(t *testing.T) {
	tests := []struct {
		name       string
		prediction func(f *fixture) string
		callbacks  int // the provider may call more than once
		// pollFirst polls once while the job runs, so the chain has been
		// handed on to a poll not yet delivered when the report comes.
		pollFirst  bool
		wantStatus domain.Status
		wantCopies int32
	}{
		{"succeeded", func(f *fixture) string {
			return fmt.Sprintf(`{"id":"p1","status":"succeeded","output":[%q,%q]}`, f.up.srv.URL+"/files/a.png", f.up.srv.URL+"/files/b.png")
		}, 1, false, domain.StatusCompleted, 2},
		{"succeeded, called three times", func(f *fixture) string {
			return fmt.Sprintf(`{"id":"p1","status":"succeeded","output":[%q,%q]}`, f.up.srv.URL+"/files/a.png", f.up.srv.URL+"/files/b.png")
		}, 3, false, domain.StatusCompleted, 2},
		{"succeeded, after a poll saw it running", func(f *fixture) string {
			return fmt.Sprintf(`{"id":"p1","status":"succeeded","output":[%q,%q]}`, f.up.srv.URL+"/files/a.png", f.up.srv.URL+"/files/b.png")
		}, 2, true, domain.StatusCompleted, 2},
		{"failed", func(*fixture) string {
			return `{"id":"p1","status":"failed","error":"the model refused"}`
		}, 2, false, domain.StatusFailed, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := setup(t)
			g := f.create(t)
			held := f.account(t).Held
			copier := &countingCopier{inner: f.svc.Copier}
			f.svc.Copier = copier
			if tt.pollFirst {
				if err := f.svc.Poll(context.Background(), f.queue.msgs[0]); err != nil || len(f.queue.msgs) != 2 {
					t.Fatalf("first poll = %v, queued %+v", err, f.queue.msgs)
				}
			}
			first := len(f.queue.msgs)
			for i := 0; i < tt.callbacks; i++ {
				if err := f.callback(t, g, tt.prediction(f)); err != nil {
					t.Fatalf("callback %d: %v", i, err)
				}
			}
			if n := copier.calls.Load(); n != 0 {
				t.Fatalf("the callback copied %d outputs itself", n)
			}
			if got, _ := f.store.GetGeneration(context.Background(), g.UUID); got.Status != domain.StatusProcessing {
				t.Fatalf("after the callback: %s, want processing until the poll", got.Status)
			}
			reports := f.queue.msgs[first:]
			if len(reports) != tt.callbacks {
				t.Fatalf("the callbacks queued %d polls, want %d", len(reports), tt.callbacks)
			}
			var ev events.SQSEvent
			for i, m := range reports {
				if m.Reported == nil || m.Reported.ID != "p1" || f.queue.lag[first+i] != 0 {
					t.Fatalf("queued %+v after %v; want the report, at once", m, f.queue.lag[first+i])
				}
				ev.Records = append(ev.Records, sqsRecord(t, "r"+strconv.Itoa(i), m))
			}
			gets := f.up.gets.Load()
			// Delivered in one batch, the duplicates run at once.
			if resp, err := sqsbatch.Handler(f.svc.HandleBatch)(context.Background(), ev); err != nil || len(resp.BatchItemFailures) != 0 {
				t.Fatalf("poller = %+v, %v", resp, err)
			}
			got, _ := f.store.GetGeneration(context.Background(), g.UUID)
			if got.Status != tt.wantStatus {
				t.Fatalf("after the report's poll: %s %q, want %s", got.Status, got.Error, tt.wantStatus)
			}
			if n := copier.calls.Load(); n != tt.wantCopies {
				t.Errorf("%d copies, want %d", n, tt.wantCopies)
			}
			if n := f.up.gets.Load() - gets; n != 0 {
				t.Errorf("the report's poll read the job %d times; the report says it all", n)
			}
			if n := len(f.queue.msgs) - first - tt.callbacks; n != 0 {
				t.Errorf("the report's poll queued %d more polls", n)
			}
			a := f.account(t)
			switch tt.wantStatus {
			case domain.StatusCompleted:
				if !a.Held.IsZero() || !a.Captured.Equal(held) {
					t.Errorf("held %s captured %s; want %s captured once", a.Held, a.Captured, held)
				}
			default:
				if !a.Held.IsZero() || !a.Balance.Equal(decimal.NewFromInt(100)) {
					t.Errorf("balance %s held %s; want everything back", a.Balance, a.Held)
				}
			}
			// The chain's polls, delivered late, and one more callback
			// change nothing.
			for _, m := range f.queue.msgs[:first] {
				if err := f.svc.Poll(context.Background(), m); err != nil {
					t.Fatal(err)
				}
			}
			queued := len(f.queue.msgs)
			if err := f.callback(t, g, tt.prediction(f)); err != nil || len(f.queue.msgs) != queued {
				t.Errorf("callback after the end = %v, %d polls queued", err, len(f.queue.msgs)-queued)
			}
			if a2 := f.account(t); !a2.Balance.Equal(a.Balance) || !a2.Captured.Equal(a.Captured) || copier.calls.Load() != tt.wantCopies {
				t.Errorf("a late poll changed the account or copied again")
			}
		})
	}
}

func TestCallbackRefusesAnotherJobAndAForgery(t *testing.T) {
	f := setup(t)
	g := f.create(t)
	if err := f.callback(t, g, `{"id":"p9","status":"succeeded","output":[]}`); !errors.Is(err, generation.ErrNotItsJob) {
		t.Errorf("another job's report = %v, want ErrNotItsJob", err)
	}
	h := http.Header{}
	webhook.SetHeaders(h, webhook.NewSecret(), "msg_x", time.Now(), []byte(`{"id":"p1","status":"failed"}`))
	if err := f.callbacks().Callback(context.Background(), g.UUID, h, []byte(`{"id":"p1","status":"failed"}`)); !errors.Is(err, generation.ErrBadCallback) {
		t.Errorf("forged report = %v, want ErrBadCallback", err)
	}
	if len(f.queue.msgs) != 1 {
		t.Errorf("refused callbacks queued %d polls", len(f.queue.msgs)-1)
	}
}
