package longform_test

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/core/accounts"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/longform"
	"github.com/mediagen-dev/mediagen/internal/core/media"
	"github.com/mediagen-dev/mediagen/internal/core/webhook"
	"github.com/mediagen-dev/mediagen/internal/local/sqlitestore"
	"github.com/mediagen-dev/mediagen/internal/testkit/faults"
)

// TestAFinalWebhookOutlivesAFaultAtTheSettlement: the step that ends a
// video (Finalize of its first render or of a regenerate, MarkFailed) has
// its settlement fail or crash once it took effect; the workflow runs the
// step again, which finds the hold settled. The webhook event is enqueued
// all the same (before the settlement), every message of it under the
// event's one webhook-id, and the hold is settled once.
func TestAFinalWebhookOutlivesAFaultAtTheSettlement(t *testing.T) {
	ctx := context.Background()
	bucket := outputsBucket(t)
	st, err := sqlitestore.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	acct, err := (&accounts.Service{Store: st}).CreateAccount(ctx, accounts.NewAccount{Plan: domain.PlanPro, Credits: decimal.NewFromInt(10000)})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	// video makes a processing video asking for every event, with its
	// hold, and its final video stored.
	video := func() domain.LongVideo {
		t.Helper()
		v := domain.LongVideo{ID: uuid.NewString(), UserID: acct.UserID, Prompt: "the sea", Model: "beta-2", LanguageCode: "en",
			Scenes: []domain.Scene{{SceneNumber: 1, Prompt: "waves"}, {SceneNumber: 2, Prompt: "gulls"}}, Status: domain.StatusProcessing,
			CreditsHeld: decimal.NewFromInt(130), CreatedAt: now, UpdatedAt: now, Deadline: now.Add(time.Hour),
			Webhook: domain.Webhook{URL: "https://hooks.example/videos"}}
		if err := st.Hold(ctx, v.UserID, domain.Hold{WorkID: v.ID, Kind: domain.WorkLongVideo, Amount: v.CreditsHeld, CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
		if err := st.CreateLongVideo(ctx, v); err != nil {
			t.Fatal(err)
		}
		if err := bucket.Put(ctx, media.FinalVideoKey(v.ID), strings.NewReader("x"), "video/mp4"); err != nil {
			t.Fatal(err)
		}
		return v
	}
	type step func(longform.Notifier, longform.Store) error
	cases := []struct {
		name string
		// make returns the video, the hold the step settles and the step.
		make   func() (domain.LongVideo, string, step)
		settle string // the settlement that fails or crashes
		want   webhook.Message
	}{
		{name: "Finalize of a first render", settle: "store.Capture",
			make: func() (domain.LongVideo, string, step) {
				v := video()
				return v, v.ID, func(n longform.Notifier, s longform.Store) error {
					_, err := longform.FinalizeStep(bucket, bucket, s, n, bucket, longform.StepSettings{Log: slog.New(slog.DiscardHandler)})(ctx,
						longform.FinalizeTask{VideoID: v.ID, Key: media.FinalVideoKey(v.ID), Duration: 10})
					return err
				}
			},
			want: webhook.Message{Kind: domain.WorkLongVideo, Event: "long_video.completed", Attempt: 1}},
		{name: "MarkFailed of a video", settle: "store.Release",
			make: func() (domain.LongVideo, string, step) {
				v := video()
				return v, v.ID, func(n longform.Notifier, s longform.Store) error {
					_, err := longform.MarkFailedStep(s, n, nil, nil, bucket, longform.StepSettings{Log: slog.New(slog.DiscardHandler)})(ctx,
						longform.FailTask{VideoID: v.ID, Failure: longform.Failure{Error: "SceneFailedError", Cause: "scene 2 failed"}})
					return err
				}
			},
			want: webhook.Message{Kind: domain.WorkLongVideo, Event: "long_video.failed", Attempt: 1}},
		{name: "Finalize of a regenerate", settle: "store.Capture",
			make: func() (domain.LongVideo, string, step) {
				v := video()
				done := domain.Outcome{Status: domain.StatusCompleted, OutputURLs: []string{bucket.URL(media.FinalVideoKey(v.ID))}, TotalDuration: 10}
				if err := st.FinishLongVideo(ctx, v.ID, done, now); err != nil {
					t.Fatal(err)
				}
				if _, err := st.Capture(ctx, v.UserID, v.ID); err != nil {
					t.Fatal(err)
				}
				workID := domain.RegenerateWorkID(v.ID, 2, 2)
				price := decimal.NewFromInt(65)
				if err := st.Hold(ctx, v.UserID, domain.Hold{WorkID: workID, Kind: domain.WorkLongVideo, Amount: price, CreatedAt: now}); err != nil {
					t.Fatal(err)
				}
				r := domain.Regeneration{SceneNumber: 2, Revision: 2, Prompt: "gulls at dusk", Model: "beta-2", CreditsHeld: price, StartedAt: now}
				if err := st.BeginRegenerate(ctx, v.ID, r, now); err != nil {
					t.Fatal(err)
				}
				if err := bucket.Put(ctx, media.FinalVideoKeyAt(v.ID, 2), strings.NewReader("x"), "video/mp4"); err != nil {
					t.Fatal(err)
				}
				return v, workID, func(n longform.Notifier, s longform.Store) error {
					_, err := longform.FinalizeStep(bucket, bucket, s, n, bucket, longform.StepSettings{Log: slog.New(slog.DiscardHandler)})(ctx,
						longform.FinalizeTask{VideoID: v.ID, Key: media.FinalVideoKeyAt(v.ID, 2), Duration: 10, Revision: 2, SceneNumber: 2})
					return err
				}
			},
			want: webhook.Message{Kind: domain.WorkLongVideo, Event: "long_video.completed", Revision: 2, Attempt: 1}},
	}
	for _, c := range cases {
		for _, mode := range []faults.Mode{faults.CrashAfter, faults.FailAfter} {
			t.Run(c.name+"/"+mode.String(), func(t *testing.T) {
				v, workID, run := c.make()
				in := faults.New()
				s := &faults.Store{Inner: st, In: in}
				hooks := &webhookQueue{}
				n := webhook.Notifier{Queue: hooks}
				in.Phase("first")
				in.Arm(faults.Point{Phase: "first", Op: c.settle, Nth: 1}, mode)
				crashed, err := faults.Run(func() error { return run(n, s) })
				if fired := in.Fired(); len(fired) != 1 {
					t.Fatalf("faults fired: %v; want %s once", fired, c.settle)
				}
				if !crashed && err == nil {
					t.Fatalf("the step ended well despite the fault at %s", c.settle)
				}
				in.Phase("retry")
				if _, err := faults.Run(func() error { return run(n, s) }); err != nil {
					t.Fatalf("the retried step = %v", err)
				}
				want := c.want
				want.ID = v.ID
				sent := hooks.messages()
				if len(sent) == 0 {
					t.Errorf("no webhook enqueued; want %+v", want)
				}
				for _, m := range sent {
					if m != want || m.WebhookID() != want.WebhookID() {
						t.Errorf("enqueued %+v (webhook-id %s); want only %+v (%s)", m, m.WebhookID(), want, want.WebhookID())
					}
				}
				if got := in.Settled()[workID]; got != 1 {
					t.Errorf("the hold of %s settled %d times; want once", workID, got)
				}
				holds, err := st.AccountHolds(ctx, v.UserID)
				if err != nil {
					t.Fatal(err)
				}
				for _, h := range holds {
					if h.WorkID == workID {
						t.Errorf("the hold of %s is still open", workID)
					}
				}
			})
		}
	}
}

// TestAStepOnAnEndedVideoSendsItsEventUnlessAttempted: a step that finds
// the video already final (the safety net's MarkFailed after a cancel, a
// retry) enqueues its event again only while the video lists no attempt
// at it: one listed means the deliverer has it.
func TestAStepOnAnEndedVideoSendsItsEventUnlessAttempted(t *testing.T) {
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	acct, err := (&accounts.Service{Store: st}).CreateAccount(ctx, accounts.NewAccount{Plan: domain.PlanPro, Credits: decimal.NewFromInt(1000)})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	for _, attempted := range []bool{false, true} {
		v := domain.LongVideo{ID: uuid.NewString(), UserID: acct.UserID, Prompt: "the sea", Model: "beta-2", LanguageCode: "en",
			Scenes: []domain.Scene{{SceneNumber: 1, Prompt: "waves"}}, Status: domain.StatusProcessing,
			CreditsHeld: decimal.NewFromInt(65), CreatedAt: now, UpdatedAt: now, Deadline: now.Add(time.Hour),
			Webhook: domain.Webhook{URL: "https://hooks.example/videos"}}
		if err := st.Hold(ctx, v.UserID, domain.Hold{WorkID: v.ID, Kind: domain.WorkLongVideo, Amount: v.CreditsHeld, CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
		if err := st.CreateLongVideo(ctx, v); err != nil {
			t.Fatal(err)
		}
		// Canceled by its caller, its credits given back.
		if err := st.FinishLongVideo(ctx, v.ID, domain.Outcome{Status: domain.StatusCanceled, Error: "canceled by the caller"}, now); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Refund(ctx, v.UserID, v.ID); err != nil {
			t.Fatal(err)
		}
		want := webhook.Message{Kind: domain.WorkLongVideo, ID: v.ID, Event: "long_video.canceled", Attempt: 1}
		if attempted {
			a := domain.WebhookAttempt{WebhookID: want.WebhookID(), Event: want.Event, Attempt: 1, At: now, StatusCode: 500, Error: domain.WebhookErrorHTTPStatus}
			if err := st.AddWebhookAttempt(ctx, domain.WorkLongVideo, v.ID, a); err != nil {
				t.Fatal(err)
			}
		}
		hooks := &webhookQueue{}
		markFailed := longform.MarkFailedStep(st, webhook.Notifier{Queue: hooks}, nil, nil, nil, longform.StepSettings{Log: slog.New(slog.DiscardHandler)})
		if _, err := markFailed(ctx, longform.FailTask{VideoID: v.ID, Failure: longform.Failure{Error: "States.Aborted"}}); err != nil {
			t.Fatalf("MarkFailed = %v", err)
		}
		var wantSent []webhook.Message
		if !attempted {
			wantSent = []webhook.Message{want}
		}
		if got := hooks.messages(); !slices.Equal(got, wantSent) {
			t.Errorf("attempt listed %v: enqueued %+v; want %+v", attempted, got, wantSent)
		}
	}
}
