package longform_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/core/accounts"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/longform"
	"github.com/mediagen-dev/mediagen/internal/core/pricing"
	"github.com/mediagen-dev/mediagen/internal/local/sqlitestore"
)

// startedWorkflow records the executions started; err fails every start.
type startedWorkflow struct {
	err     error
	started map[string][]byte
	stopped []string
}

func (w *startedWorkflow) Start(_ context.Context, name string, input []byte) error {
	if w.err != nil {
		return w.err
	}
	w.started[name] = input
	return nil
}

func (w *startedWorkflow) Stop(_ context.Context, name, _ string) error {
	w.stopped = append(w.stopped, name)
	return nil
}

type regenerateRig struct {
	st    *sqlitestore.Store
	wf    *startedWorkflow
	svc   *longform.Regenerator
	user  string
	video domain.LongVideo
}

// newRegenerateRig is a completed three-scene video (scene 2 made by
// delta-1-pro, the others by beta-2), charged, on a real store.
func newRegenerateRig(t *testing.T, status domain.Status) *regenerateRig {
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	acct, err := (&accounts.Service{Store: st}).CreateAccount(ctx, accounts.NewAccount{Plan: domain.PlanPro, Credits: decimal.NewFromInt(1000)})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	v := domain.LongVideo{ID: uuid.NewString(), UserID: acct.UserID, Prompt: "a day at the sea", Model: "beta-2", LanguageCode: "en",
		EnableNarration: true, VideoStyle: "auto", Scenes: []domain.Scene{{SceneNumber: 1, Prompt: "waves"},
			{SceneNumber: 2, Prompt: "gulls", Model: "delta-1-pro"}, {SceneNumber: 3, Prompt: "dusk"}},
		Status: domain.StatusProcessing, CreditsHeld: decimal.NewFromInt(100), CreatedAt: now, UpdatedAt: now, Deadline: now.Add(time.Hour)}
	if err := st.Hold(ctx, v.UserID, domain.Hold{WorkID: v.ID, Kind: domain.WorkLongVideo, Amount: v.CreditsHeld, CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateLongVideo(ctx, v); err != nil {
		t.Fatal(err)
	}
	if status != domain.StatusProcessing {
		o := domain.Outcome{Status: status, OutputURLs: []string{"https://cdn.example/r1.mp4"}, TotalDuration: 15}
		if err := st.FinishLongVideo(ctx, v.ID, o, now); err != nil {
			t.Fatal(err)
		}
		if _, _, err := domain.Settle(ctx, st, v.UserID, v.ID, status); err != nil {
			t.Fatal(err)
		}
	}
	wf := &startedWorkflow{started: map[string][]byte{}}
	svc := longform.NewRegenerator(st, wf, pricing.Default(), longform.Settings{Now: func() time.Time { return now.Add(time.Minute) },
		Log: slog.New(slog.DiscardHandler)})
	return &regenerateRig{st: st, wf: wf, svc: svc, user: acct.UserID, video: v}
}

// books is what the account shows: balance, held and its open holds.
func (r *regenerateRig) books(t *testing.T) (balance, held decimal.Decimal, holds map[string]decimal.Decimal) {
	t.Helper()
	a, err := r.st.GetAccount(context.Background(), r.user)
	if err != nil {
		t.Fatal(err)
	}
	open, err := r.st.AccountHolds(context.Background(), r.user)
	if err != nil {
		t.Fatal(err)
	}
	holds = map[string]decimal.Decimal{}
	for _, h := range open {
		holds[h.WorkID] = h.Amount
	}
	return a.Balance, a.Held, holds
}

func TestRegenerateHoldsTheScenesOwnPriceAndStartsItsExecution(t *testing.T) {
	ctx := context.Background()
	r := newRegenerateRig(t, domain.StatusCompleted)
	balance, _, _ := r.books(t)
	v, err := r.svc.Regenerate(ctx, r.user, r.video.ID, "2", []byte(`{"prompt":"gulls at dusk"}`))
	if err != nil {
		t.Fatal(err)
	}
	// Scene 2 is made by delta-1-pro: a one-scene video of it costs this.
	one, err := longform.Price(pricing.Default(), "delta-1-pro", 1)
	if err != nil {
		t.Fatal(err)
	}
	workID := domain.RegenerateWorkID(r.video.ID, 2, 2)
	after, held, holds := r.books(t)
	if !balance.Sub(after).Equal(one.Credits) || !held.Equal(one.Credits) || len(holds) != 1 || !holds[workID].Equal(one.Credits) {
		t.Errorf("after the regenerate: balance %s → %s, held %s, holds %v; want %s held as %s, nothing else",
			balance, after, held, holds, one.Credits, workID)
	}
	if v.Status != domain.StatusCompleted || v.Revision != 1 || v.FinalVideoURL != "https://cdn.example/r1.mp4" || v.Regenerating == nil ||
		v.Regenerating.SceneNumber != 2 || v.Regenerating.Revision != 2 || v.Regenerating.Prompt != "gulls at dusk" || v.Regenerating.Model != "delta-1-pro" {
		t.Errorf("the video answered is %s at revision %d with %s, regenerating %+v; want completed at 1 with its video, regenerating scene 2 to revision 2",
			v.Status, v.Revision, v.FinalVideoURL, v.Regenerating)
	}
	var in longform.RegenerateInput
	raw, ok := r.wf.started[r.video.ID+"-r2"]
	if err := json.Unmarshal(raw, &in); !ok || err != nil || in.VideoID != r.video.ID || in.Revision != 2 || !reflect.DeepEqual(in.SceneNumbers, []int{2}) {
		t.Errorf("executions started %v; want %s-r2 with the video, scene 2 and revision 2", r.wf.started, r.video.ID)
	}

	// A second regenerate while this one runs is refused; nothing moves.
	_, err = r.svc.Regenerate(ctx, r.user, r.video.ID, "1", nil)
	if !errors.Is(err, domain.ErrConflict) {
		t.Errorf("a second regenerate = %v, want ErrConflict", err)
	}
	if again, _, holds := r.books(t); !again.Equal(after) || len(holds) != 1 || len(r.wf.started) != 1 {
		t.Errorf("the refused regenerate moved credits (balance %s → %s, holds %v) or started %d executions", after, again, holds, len(r.wf.started))
	}
}

func TestRefusedRegeneratesChangeNothing(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		status domain.Status
		user   func(r *regenerateRig) string
		id     func(r *regenerateRig) string
		scene  string
		body   string
		want   error
	}{
		{"a video still processing", domain.StatusProcessing, nil, nil, "2", ``, domain.ErrConflict},
		{"a failed video", domain.StatusFailed, nil, nil, "2", ``, domain.ErrConflict},
		{"another account's video", domain.StatusCompleted, func(*regenerateRig) string { return "someone-else" }, nil, "2", ``, domain.ErrNotFound},
		{"an unknown video", domain.StatusCompleted, nil, func(*regenerateRig) string { return uuid.NewString() }, "2", ``, domain.ErrNotFound},
		{"a scene the video does not have", domain.StatusCompleted, nil, nil, "4", ``, domain.ErrInvalid},
		{"a bad body", domain.StatusCompleted, nil, nil, "2", `{"prompt":""}`, domain.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRegenerateRig(t, tt.status)
			user, id := r.user, r.video.ID
			if tt.user != nil {
				user = tt.user(r)
			}
			if tt.id != nil {
				id = tt.id(r)
			}
			balance, held, _ := r.books(t)
			before, err := r.st.GetLongVideo(ctx, r.video.ID)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.svc.Regenerate(ctx, user, id, tt.scene, []byte(tt.body)); !errors.Is(err, tt.want) {
				t.Errorf("Regenerate = %v, want %v", err, tt.want)
			}
			after, _ := r.st.GetLongVideo(ctx, r.video.ID)
			if b, h, _ := r.books(t); !b.Equal(balance) || !h.Equal(held) || len(r.wf.started) != 0 || !reflect.DeepEqual(after, before) {
				t.Errorf("a refused regenerate changed something: balance %s → %s, held %s → %s, %d executions, video changed: %v",
					balance, b, held, h, len(r.wf.started), !reflect.DeepEqual(after, before))
			}
		})
	}
}

func TestARegenerateWhoseWorkflowDoesNotStartGivesItsCreditsBack(t *testing.T) {
	ctx := context.Background()
	r := newRegenerateRig(t, domain.StatusCompleted)
	r.wf.err = errors.New("step functions is down")
	balance, held, _ := r.books(t)
	if _, err := r.svc.Regenerate(ctx, r.user, r.video.ID, "2", nil); !errors.Is(err, longform.ErrWorkflowUnavailable) {
		t.Errorf("Regenerate = %v, want ErrWorkflowUnavailable", err)
	}
	v, err := r.st.GetLongVideo(ctx, r.video.ID)
	if err != nil {
		t.Fatal(err)
	}
	if b, h, holds := r.books(t); !b.Equal(balance) || !h.Equal(held) || len(holds) != 0 {
		t.Errorf("balance %s → %s, held %s → %s, open holds %v; want the hold released", balance, b, held, h, holds)
	}
	if v.Status != domain.StatusCompleted || v.Revision != 1 || v.Regenerating != nil {
		t.Errorf("the video is %s at revision %d (regenerating: %v); want completed at 1 with no regenerate", v.Status, v.Revision, v.Regenerating != nil)
	}
	// The video may be regenerated again: the failed start left nothing behind.
	r.wf.err = nil
	if _, err := r.svc.Regenerate(ctx, r.user, r.video.ID, "2", nil); err != nil {
		t.Errorf("a regenerate after the failed start = %v", err)
	}
}

func TestCancelDuringARegenerateReleasesOnlyItsHold(t *testing.T) {
	ctx := context.Background()
	r := newRegenerateRig(t, domain.StatusCompleted)
	cancel := longform.NewCanceler(r.st, r.wf, nil, nil, nil, longform.Settings{Log: slog.New(slog.DiscardHandler)})
	if _, err := cancel.Cancel(ctx, r.user, r.video.ID); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("cancel of a completed video with no regenerate = %v, want ErrConflict", err)
	}
	before, err := r.st.GetAccount(ctx, r.user)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.svc.Regenerate(ctx, r.user, r.video.ID, "2", nil); err != nil {
		t.Fatal(err)
	}
	v, err := cancel.Cancel(ctx, r.user, r.video.ID)
	if err != nil {
		t.Fatalf("cancel during the regenerate = %v", err)
	}
	if v.Status != domain.StatusCompleted || v.Revision != 1 || v.FinalVideoURL != "https://cdn.example/r1.mp4" || v.Regenerating != nil {
		t.Errorf("after the cancel the video is %s at revision %d with %s (regenerating: %v); want completed at 1 with its first video",
			v.Status, v.Revision, v.FinalVideoURL, v.Regenerating != nil)
	}
	after, err := r.st.GetAccount(ctx, r.user)
	if err != nil {
		t.Fatal(err)
	}
	// The video's own charge stays; only the regenerate's hold came back.
	if !after.Balance.Equal(before.Balance) || !after.Held.Equal(before.Held) || !after.Captured.Equal(before.Captured) {
		t.Errorf("books before the regenerate %s/%s/%s (balance/held/captured), after its cancel %s/%s/%s; want them equal",
			before.Balance, before.Held, before.Captured, after.Balance, after.Held, after.Captured)
	}
	if !reflect.DeepEqual(r.wf.stopped, []string{r.video.ID + "-r2"}) {
		t.Errorf("executions stopped %v, want the regenerate's %s-r2 only", r.wf.stopped, r.video.ID)
	}
	if _, err := cancel.Cancel(ctx, r.user, r.video.ID); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("a second cancel = %v, want ErrConflict", err)
	}
}

// TestDeletingTheFilesDuringARegenerateIsRefused: the regenerate reuses the
// other scenes' clips and narration, so their delete waits for it to end;
// the refused delete removes nothing and the video still serves its file.
func TestDeletingTheFilesDuringARegenerateIsRefused(t *testing.T) {
	ctx := context.Background()
	r := newRegenerateRig(t, domain.StatusCompleted)
	if _, err := r.svc.Regenerate(ctx, r.user, r.video.ID, "2", nil); err != nil {
		t.Fatal(err)
	}
	objects := &countingObjects{}
	remover := longform.NewOutputRemover(r.st, objects, nil, longform.Settings{Log: slog.New(slog.DiscardHandler)})
	if _, err := remover.RemoveOutput(ctx, r.user, r.video.ID); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("delete during the regenerate = %v, want ErrConflict", err)
	}
	v, err := r.st.GetLongVideo(ctx, r.video.ID)
	if err != nil {
		t.Fatal(err)
	}
	if objects.calls != 0 || v.Files.Removal != "" || v.FinalVideoURL != "https://cdn.example/r1.mp4" || v.Regenerating == nil {
		t.Errorf("the refused delete touched the bucket %d times; the video has removal %q, %s, regenerating %v; want nothing changed",
			objects.calls, v.Files.Removal, v.FinalVideoURL, v.Regenerating != nil)
	}
}

// countingObjects is a bucket that counts what it is asked.
type countingObjects struct{ calls int }

func (o *countingObjects) Keys(context.Context, string) ([]string, error) {
	o.calls++
	return []string{"long-videos/x/final.mp4"}, nil
}

func (o *countingObjects) Delete(context.Context, []string) error { o.calls++; return nil }
