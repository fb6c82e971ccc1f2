package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/store"
	"github.com/mediagen-dev/mediagen/internal/core/sweeper"
)

// sentEvent is one webhook event a notifier was asked to enqueue.
type sentEvent struct {
	Kind     domain.WorkKind
	ID       string
	Revision int
	Event    string
}

// recordingNotifier keeps the events it is asked to enqueue; those of the
// records in fail it keeps and fails, as a queue out of reach.
type recordingNotifier struct {
	mu   sync.Mutex
	sent []sentEvent
	fail map[string]bool
}

func (n *recordingNotifier) Notify(_ context.Context, kind domain.WorkKind, id, event string) error {
	return n.keep(sentEvent{Kind: kind, ID: id, Event: event})
}

func (n *recordingNotifier) NotifyRevision(_ context.Context, id string, revision int, event string) error {
	return n.keep(sentEvent{Kind: domain.WorkLongVideo, ID: id, Revision: revision, Event: event})
}

func (n *recordingNotifier) keep(e sentEvent) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.sent = append(n.sent, e)
	if n.fail[e.ID] {
		return errors.New("the webhook queue is out of reach")
	}
	return nil
}

// of is what was sent about record id (other tests' work shares the store,
// and a sweep settles it too).
func (n *recordingNotifier) of(id string) []sentEvent {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []sentEvent
	for _, e := range n.sent {
		if e.ID == id {
			out = append(out, e)
		}
	}
	return out
}

// settledMeanwhile settles the holds of its works itself just before the
// sweeper does, as the poller or the workflow would between the sweeper's
// read of the record and its settlement.
type settledMeanwhile struct {
	store.Store
	works map[string]bool
}

func (s settledMeanwhile) first(ctx context.Context, op func(context.Context, string, string) (bool, error), userID, workID string) (bool, error) {
	if s.works[workID] {
		if _, err := op(ctx, userID, workID); err != nil {
			return false, err
		}
	}
	return op(ctx, userID, workID)
}

func (s settledMeanwhile) Capture(ctx context.Context, userID, workID string) (bool, error) {
	return s.first(ctx, s.Store.Capture, userID, workID)
}

func (s settledMeanwhile) Release(ctx context.Context, userID, workID string) (bool, error) {
	return s.first(ctx, s.Store.Release, userID, workID)
}

func (s settledMeanwhile) Refund(ctx context.Context, userID, workID string) (bool, error) {
	return s.first(ctx, s.Store.Refund, userID, workID)
}

// testSweeperSendsTheFinalWebhook: the work whose hold a sweep settles
// sends its final webhook event when its record asks for it (a crash left
// the hold open, maybe before the event was enqueued, or the sweep ended
// the work itself): the event of the status it ended with, a completed
// regenerate's under its revision. Nothing is sent for a regenerate that
// ended otherwise, a record that asked for no such event or lists an
// attempt at it (the deliverer has it), work never recorded, or a hold
// another settled meanwhile. SettleEnded, the local
// runtime's settlement at a restart, sends the same, at once.
func testSweeperSendsTheFinalWebhook(t *testing.T, s store.Store) {
	ctx := context.Background()
	user := newAccount(t, s, domain.PlanPro, "100")
	old := now.Add(-time.Hour)
	overdue := now.Add(-2 * time.Hour) // a video's deadline is an hour after its creation
	hook := domain.Webhook{URL: "https://hooks.example/final"}
	onlyCompleted := domain.Webhook{URL: "https://hooks.example/final", Events: []string{"generation.completed", "long_video.completed"}}
	// generation makes a generation with its hold, created at created,
	// past its deadline when overdue, ended as end says ("" processing).
	generation := func(w domain.Webhook, created time.Time, overdue bool, end domain.Status) string {
		t.Helper()
		deadline := now.Add(time.Hour)
		if overdue {
			deadline = now.Add(-time.Minute)
		}
		g := &domain.Generation{UUID: uuid.NewString(), UserID: user, Model: "provider-a", ModelVersion: "zeta",
			Kind: domain.MediaImage, Input: json.RawMessage(`{"prompt":"p"}`), ImageCount: 1, Webhook: w,
			Status: domain.StatusProcessing, CreditsUsed: credits("1"), CreatedAt: created, UpdatedAt: created, Deadline: deadline}
		if err := s.Hold(ctx, user, domain.Hold{WorkID: g.UUID, Kind: domain.WorkGeneration, Amount: credits("1"), CreatedAt: created}); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateGeneration(ctx, g); err != nil {
			t.Fatal(err)
		}
		if end != "" {
			if err := s.FinishGeneration(ctx, g.UUID, domain.Outcome{Status: end}, created); err != nil {
				t.Fatal(err)
			}
		}
		return g.UUID
	}
	// video makes a long video with its hold, created at created (its
	// deadline an hour later), ended as end says ("" processing).
	video := func(w domain.Webhook, created time.Time, end domain.Status) string {
		t.Helper()
		v := newLongVideo(t, s, user, "beta-2", created, w)
		if err := s.Hold(ctx, user, domain.Hold{WorkID: v.ID, Kind: domain.WorkLongVideo, Amount: credits("1"), CreatedAt: created}); err != nil {
			t.Fatal(err)
		}
		if end != "" {
			o := domain.Outcome{Status: end}
			if end == domain.StatusCompleted {
				o.OutputURLs, o.TotalDuration = []string{"https://cdn.example/" + v.ID + ".mp4"}, 10
			}
			if err := s.FinishLongVideo(ctx, v.ID, o, created); err != nil {
				t.Fatal(err)
			}
		}
		return v.ID
	}
	regenerate := func(w domain.Webhook, created time.Time, end domain.Status) (string, string) {
		t.Helper()
		return newRegenerate(t, s, user, w, "sweep-hooks-"+uuid.NewString()[:8], created, created, end)
	}
	orphan := func(kind domain.WorkKind, created time.Time) string {
		t.Helper()
		id := uuid.NewString()
		if err := s.Hold(ctx, user, domain.Hold{WorkID: id, Kind: kind, Amount: credits("1"), CreatedAt: created}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	// attempt lists a failed first attempt at event on the record.
	attempt := func(kind domain.WorkKind, id, event string) {
		t.Helper()
		a := domain.WebhookAttempt{WebhookID: "msg_" + id[:8], Event: event, Attempt: 1, At: old, StatusCode: 503, Error: domain.WebhookErrorHTTPStatus}
		if err := s.AddWebhookAttempt(ctx, kind, id, a); err != nil {
			t.Fatal(err)
		}
	}
	gen, lv := domain.WorkGeneration, domain.WorkLongVideo

	// One sweep settles every case's hold; each case names the record the
	// events are about and the events it wants.
	type sweepCase struct {
		name          string
		settledBefore bool // the hold is settled by another just before the sweeper
		notifyFails   bool // the enqueue fails: the sweep goes on, the hold stays settled
		make          func() (record, work string)
		want          func(record string) []sentEvent
	}
	none := func(string) []sentEvent { return nil }
	sweeps := []sweepCase{
		{name: "a generation it times out sends generation.failed",
			make: func() (string, string) { id := generation(hook, old, true, ""); return id, id },
			want: func(id string) []sentEvent { return []sentEvent{{Kind: gen, ID: id, Event: "generation.failed"}} }},
		{name: "a completed generation whose hold it captures sends generation.completed",
			make: func() (string, string) { id := generation(hook, old, false, domain.StatusCompleted); return id, id },
			want: func(id string) []sentEvent { return []sentEvent{{Kind: gen, ID: id, Event: "generation.completed"}} }},
		{name: "a generation it times out that asked only for completed sends nothing",
			make: func() (string, string) { id := generation(onlyCompleted, old, true, ""); return id, id },
			want: none},
		{name: "a generation without a webhook sends nothing",
			make: func() (string, string) { id := generation(domain.Webhook{}, old, true, ""); return id, id },
			want: none},
		{name: "a completed long video whose hold it captures sends long_video.completed",
			make: func() (string, string) { id := video(hook, old, domain.StatusCompleted); return id, id },
			want: func(id string) []sentEvent { return []sentEvent{{Kind: lv, ID: id, Event: "long_video.completed"}} }},
		{name: "a long video it times out sends long_video.failed",
			make: func() (string, string) { id := video(hook, overdue, ""); return id, id },
			want: func(id string) []sentEvent { return []sentEvent{{Kind: lv, ID: id, Event: "long_video.failed"}} }},
		{name: "a canceled long video whose hold it refunds sends long_video.canceled",
			make: func() (string, string) { id := video(hook, old, domain.StatusCanceled); return id, id },
			want: func(id string) []sentEvent { return []sentEvent{{Kind: lv, ID: id, Event: "long_video.canceled"}} }},
		{name: "a long video it times out that asked only for completed sends nothing",
			make: func() (string, string) { id := video(onlyCompleted, overdue, ""); return id, id },
			want: none},
		{name: "a completed regenerate whose hold it captures sends its revision's long_video.completed",
			make: func() (string, string) { return regenerate(hook, old, domain.StatusCompleted) },
			want: func(id string) []sentEvent {
				return []sentEvent{{Kind: lv, ID: id, Revision: 2, Event: "long_video.completed"}}
			}},
		{name: "a failed regenerate whose hold it releases sends nothing",
			make: func() (string, string) { return regenerate(hook, old, domain.StatusFailed) },
			want: none},
		{name: "a canceled regenerate whose hold it releases sends nothing",
			make: func() (string, string) { return regenerate(hook, old, domain.StatusCanceled) },
			want: none},
		{name: "a regenerate it times out sends nothing",
			make: func() (string, string) {
				return newRegenerate(t, s, user, hook, "sweep-hooks-"+uuid.NewString()[:8], old, now.Add(-domain.RegenerateTimeout-time.Minute), "")
			},
			want: none},
		{name: "a generation it times out whose event cannot be enqueued is still released", notifyFails: true,
			make: func() (string, string) { id := generation(hook, old, true, ""); return id, id },
			want: func(id string) []sentEvent { return []sentEvent{{Kind: gen, ID: id, Event: "generation.failed"}} }},
		{name: "a completed generation that lists an attempt at its event sends nothing again",
			make: func() (string, string) {
				id := generation(hook, old, false, domain.StatusCompleted)
				attempt(gen, id, "generation.completed")
				return id, id
			},
			want: none},
		{name: "a failed long video that lists an attempt at its event sends nothing again",
			make: func() (string, string) {
				id := video(hook, old, domain.StatusFailed)
				attempt(lv, id, "long_video.failed")
				return id, id
			},
			want: none},
		{name: "a hold without work sends nothing",
			make: func() (string, string) { id := orphan(gen, old); return id, id },
			want: none},
		{name: "a completed generation whose hold was captured meanwhile sends nothing", settledBefore: true,
			make: func() (string, string) { id := generation(hook, old, false, domain.StatusCompleted); return id, id },
			want: none},
		{name: "a long video it times out whose hold was released meanwhile sends nothing", settledBefore: true,
			make: func() (string, string) { id := video(hook, overdue, ""); return id, id },
			want: none},
	}
	records := make([]string, len(sweeps))
	meanwhile := settledMeanwhile{Store: s, works: map[string]bool{}}
	n := &recordingNotifier{fail: map[string]bool{}}
	for i, c := range sweeps {
		var work string
		records[i], work = c.make()
		meanwhile.works[work] = c.settledBefore
		n.fail[records[i]] = c.notifyFails
	}
	sw := &sweeper.Sweeper{Store: meanwhile, Slots: s, Notifier: n, Grace: 10 * time.Minute, Now: func() time.Time { return now }}
	if _, err := sw.Sweep(ctx); err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	for i, c := range sweeps {
		if got, want := n.of(records[i]), c.want(records[i]); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: sent %+v, want %+v", c.name, got, want)
		}
	}
	// Every hold is settled, the one whose event failed too.
	if holds := accountHolds(t, s, user); len(holds) != 0 {
		t.Errorf("holds still open after the sweep: %+v", holds)
	}
	// A second sweep settles nothing, so sends nothing again.
	if _, err := sw.Sweep(ctx); err != nil {
		t.Fatalf("second Sweep: %v", err)
	}
	for i, c := range sweeps {
		if got, want := n.of(records[i]), c.want(records[i]); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: after a second sweep sent %+v, want %+v", c.name, got, want)
		}
	}

	// SettleEnded settles a final record's hold at once, young or not.
	young := now.Add(-time.Minute)
	settles := []struct {
		name    string
		make    func() (record, work string, kind domain.WorkKind)
		settled bool
		want    func(record string) []sentEvent
	}{
		{name: "a completed long video is captured and sends long_video.completed", settled: true,
			make: func() (string, string, domain.WorkKind) {
				id := video(hook, young, domain.StatusCompleted)
				return id, id, lv
			},
			want: func(id string) []sentEvent { return []sentEvent{{Kind: lv, ID: id, Event: "long_video.completed"}} }},
		{name: "a failed long video is released and sends long_video.failed", settled: true,
			make: func() (string, string, domain.WorkKind) {
				id := video(hook, young, domain.StatusFailed)
				return id, id, lv
			},
			want: func(id string) []sentEvent { return []sentEvent{{Kind: lv, ID: id, Event: "long_video.failed"}} }},
		{name: "a failed generation is released and sends generation.failed", settled: true,
			make: func() (string, string, domain.WorkKind) {
				id := generation(hook, young, false, domain.StatusFailed)
				return id, id, gen
			},
			want: func(id string) []sentEvent { return []sentEvent{{Kind: gen, ID: id, Event: "generation.failed"}} }},
		{name: "a processing long video is left",
			make: func() (string, string, domain.WorkKind) { id := video(hook, young, ""); return id, id, lv },
			want: none},
		{name: "a long video past its deadline is left to the sweep",
			make: func() (string, string, domain.WorkKind) { id := video(hook, overdue, ""); return id, id, lv },
			want: none},
		{name: "a hold without work is left to the sweep",
			make: func() (string, string, domain.WorkKind) { id := orphan(lv, young); return id, id, lv },
			want: none},
		{name: "a completed regenerate is left to the sweep",
			make: func() (string, string, domain.WorkKind) {
				v, w := regenerate(hook, young, domain.StatusCompleted)
				return v, w, lv
			},
			want: none},
	}
	for _, c := range settles {
		record, work, kind := c.make()
		h := domain.OpenHold{UserID: user, Hold: domain.Hold{WorkID: work, Kind: kind, Amount: credits("1")}}
		settled, err := sw.SettleEnded(ctx, h)
		if err != nil || settled != c.settled {
			t.Errorf("%s: SettleEnded = %v, %v; want %v", c.name, settled, err, c.settled)
		}
		if got, want := n.of(record), c.want(record); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: sent %+v, want %+v", c.name, got, want)
		}
		open := false
		for _, x := range accountHolds(t, s, user) {
			open = open || x.WorkID == work
		}
		if open == c.settled {
			t.Errorf("%s: hold open = %v after SettleEnded, want %v", c.name, open, !c.settled)
		}
		if !c.settled {
			continue
		}
		// A repeat settles and sends nothing more.
		if again, err := sw.SettleEnded(ctx, h); err != nil || again {
			t.Errorf("%s: repeated SettleEnded = %v, %v; want false", c.name, again, err)
		}
		if got, want := n.of(record), c.want(record); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: after a repeat sent %+v, want %+v", c.name, got, want)
		}
	}
}
