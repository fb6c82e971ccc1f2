package longform_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/core/accounts"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/longform"
	"github.com/mediagen-dev/mediagen/internal/core/media"
	"github.com/mediagen-dev/mediagen/internal/local/sqlitestore"
)

// TestAFailedRegenerateReleasesOnlyItsHold: MarkFailed of a regenerate,
// from the workflow's Catch or from the safety net's event of its
// execution (<video>-r<revision>), ends the regenerate failed, deletes what
// it stored and releases only its hold; the video stays completed at its
// revision with its final video, and its own charge stays.
func TestAFailedRegenerateReleasesOnlyItsHold(t *testing.T) {
	ctx := context.Background()
	bucket := outputsBucket(t)
	for _, tt := range []struct {
		name string
		task func(videoID string) longform.FailTask
	}{
		{"caught", func(id string) longform.FailTask {
			return longform.FailTask{VideoID: id, Revision: 2, Failure: longform.Failure{Error: "SceneFailedError", Cause: "scene 2 failed: the model refused"}}
		}},
		{"execution timed out", func(id string) longform.FailTask {
			return longform.FailTask{DetailType: "Step Functions Execution Status Change",
				Detail: &longform.ExecutionStatusChange{Name: longform.RegenerateExecution(id, 2), Status: "TIMED_OUT"}}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
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
			v := domain.LongVideo{ID: uuid.NewString(), UserID: acct.UserID, Prompt: "the sea", Model: "beta-2", LanguageCode: "en",
				Scenes: []domain.Scene{{SceneNumber: 1, Prompt: "a"}, {SceneNumber: 2, Prompt: "b"}}, Status: domain.StatusProcessing,
				CreditsHeld: decimal.NewFromInt(130), CreatedAt: now, UpdatedAt: now, Deadline: now.Add(time.Hour)}
			if err := st.Hold(ctx, v.UserID, domain.Hold{WorkID: v.ID, Kind: domain.WorkLongVideo, Amount: v.CreditsHeld, CreatedAt: now}); err != nil {
				t.Fatal(err)
			}
			if err := st.CreateLongVideo(ctx, v); err != nil {
				t.Fatal(err)
			}
			served := bucket.URL(media.FinalVideoKey(v.ID))
			if err := st.FinishLongVideo(ctx, v.ID, domain.Outcome{Status: domain.StatusCompleted, OutputURLs: []string{served}, TotalDuration: 10}, now); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Capture(ctx, v.UserID, v.ID); err != nil {
				t.Fatal(err)
			}
			before, _ := st.GetAccount(ctx, v.UserID)
			workID, price := domain.RegenerateWorkID(v.ID, 2, 2), decimal.NewFromInt(65)
			if err := st.Hold(ctx, v.UserID, domain.Hold{WorkID: workID, Kind: domain.WorkLongVideo, Amount: price, CreatedAt: now}); err != nil {
				t.Fatal(err)
			}
			if err := st.BeginRegenerate(ctx, v.ID, domain.Regeneration{SceneNumber: 2, Revision: 2, Prompt: "b2", Model: "beta-2", CreditsHeld: price, StartedAt: now}, now); err != nil {
				t.Fatal(err)
			}
			kept := []string{media.FinalVideoKey(v.ID), "long-videos/" + v.ID + "/scenes/002.mp4"}
			gone := []string{media.FinalVideoKeyAt(v.ID, 2), media.CaptionsKeyAt(v.ID, 2), "long-videos/" + v.ID + "/scenes/002-r2.mp4"}
			for _, key := range append(append([]string{}, kept...), gone...) {
				if err := bucket.Put(ctx, key, strings.NewReader("x"), "application/octet-stream"); err != nil {
					t.Fatal(err)
				}
			}
			steps := &longform.Steps{Store: st, Deleter: bucket, Log: slog.New(slog.DiscardHandler)}
			e, err := steps.MarkFailed(ctx, tt.task(v.ID))
			if err != nil {
				t.Fatal(err)
			}
			got, err := st.GetLongVideo(ctx, v.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != domain.StatusCompleted || got.Revision != 1 || got.Regenerating != nil || got.FinalVideoURL != served || e.Error == "" {
				t.Errorf("the video is %s at revision %d with %s (regenerating: %v), answered error %q; want completed at 1 with its video and an error",
					got.Status, got.Revision, got.FinalVideoURL, got.Regenerating != nil, e.Error)
			}
			a, _ := st.GetAccount(ctx, v.UserID)
			holds, _ := st.AccountHolds(ctx, v.UserID)
			if !a.Balance.Equal(before.Balance) || !a.Captured.Equal(before.Captured) || len(holds) != 0 {
				t.Errorf("balance %s → %s, captured %s → %s, %d holds open; want the regenerate's hold released, the video's charge kept",
					before.Balance, a.Balance, before.Captured, a.Captured, len(holds))
			}
			for _, key := range kept {
				if ok, err := bucket.Exists(ctx, key); err != nil || !ok {
					t.Errorf("%s is gone (%v); want it kept", key, err)
				}
			}
			for _, key := range gone {
				if ok, err := bucket.Exists(ctx, key); err != nil || ok {
					t.Errorf("%s is still stored (%v); want it deleted", key, err)
				}
			}
		})
	}
}
