package longform_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"sync"
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
)

// TestFinalizeOfARegenerateServesTheNewVideoAndChargesOnlyTheScene: the
// video moves to the regenerate's revision and final video, only the
// regenerate's hold is captured, the previous revision's files go (the
// other scenes' clips stay), and its webhook is told of the new revision;
// a repeat changes nothing but may tell it again, under the same
// webhook-id. A regenerate that ended first (canceled, or past its
// deadline) keeps none of its files, its hold goes back, the video stays
// as it was and no webhook is sent.
func TestFinalizeOfARegenerateServesTheNewVideoAndChargesOnlyTheScene(t *testing.T) {
	ctx := context.Background()
	bucket := outputsBucket(t)
	for _, ended := range []bool{false, true} {
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
			Scenes: []domain.Scene{{SceneNumber: 1, Prompt: "waves"}, {SceneNumber: 2, Prompt: "gulls"}}, Status: domain.StatusProcessing,
			CreditsHeld: decimal.NewFromInt(130), CreatedAt: now, UpdatedAt: now, Deadline: now.Add(time.Hour),
			Webhook: domain.Webhook{URL: "https://hooks.example/videos"}}
		if err := st.CreateLongVideo(ctx, v); err != nil {
			t.Fatal(err)
		}
		first := []string{media.FinalVideoKey(v.ID), media.CaptionsKey(v.ID), "long-videos/" + v.ID + "/scenes/001.mp4", "long-videos/" + v.ID + "/scenes/002.mp4"}
		second := []string{media.FinalVideoKeyAt(v.ID, 2), media.CaptionsKeyAt(v.ID, 2), "long-videos/" + v.ID + "/scenes/002-r2.mp4"}
		for _, key := range append(append([]string{}, first...), second...) {
			if err := bucket.Put(ctx, key, strings.NewReader("x"), "application/octet-stream"); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.FinishLongVideo(ctx, v.ID, domain.Outcome{Status: domain.StatusCompleted, OutputURLs: []string{bucket.URL(first[0])}, TotalDuration: 10}, now); err != nil {
			t.Fatal(err)
		}
		workID := domain.RegenerateWorkID(v.ID, 2, 2)
		price := decimal.NewFromInt(65)
		if err := st.Hold(ctx, v.UserID, domain.Hold{WorkID: workID, Kind: domain.WorkLongVideo, Amount: price, CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
		if err := st.BeginRegenerate(ctx, v.ID, domain.Regeneration{SceneNumber: 2, Revision: 2, Prompt: "gulls at dusk", Model: "beta-2", CreditsHeld: price, StartedAt: now}, now); err != nil {
			t.Fatal(err)
		}
		if ended {
			if err := st.EndRegenerate(ctx, v.ID, 2, domain.Outcome{Status: domain.StatusFailed, Error: domain.TimedOutError}, now); err != nil {
				t.Fatal(err)
			}
		}
		before, _ := st.GetAccount(ctx, v.UserID)
		// The step as both runtimes build it, so its bucket deletes too.
		hooks := &webhookQueue{}
		finalize := longform.FinalizeStep(bucket, bucket, st, webhook.Notifier{Queue: hooks}, bucket, longform.StepSettings{Log: slog.New(slog.DiscardHandler)})
		task := longform.FinalizeTask{VideoID: v.ID, Key: second[0], Duration: 10.02, Revision: 2, SceneNumber: 2}
		for attempt := 1; attempt <= 2; attempt++ {
			e, err := finalize(ctx, task)
			if err != nil {
				t.Fatalf("ended %v, attempt %d: Finalize = %v", ended, attempt, err)
			}
			got, err := st.GetLongVideo(ctx, v.ID)
			if err != nil {
				t.Fatal(err)
			}
			a, _ := st.GetAccount(ctx, v.UserID)
			holds, _ := st.AccountHolds(ctx, v.UserID)
			// Kept: the new files and scene 1's clip; gone: the previous
			// final video, its captions and scene 2's old clip.
			kept, gone := append(append([]string{}, second...), first[2]), []string{first[0], first[1], first[3]}
			wantRevision, wantURL, wantBalance, wantCaptured := 2, bucket.URL(second[0]), before.Balance, before.Captured.Add(price)
			if ended {
				kept, gone = first, second
				wantRevision, wantURL, wantBalance, wantCaptured = 1, bucket.URL(first[0]), before.Balance.Add(price), before.Captured
			}
			if got.Revision != wantRevision || got.FinalVideoURL != wantURL || e.FinalVideoURL != wantURL || got.Status != domain.StatusCompleted {
				t.Errorf("ended %v, attempt %d: the video is %s at revision %d with %s (answered %s); want completed at %d with %s",
					ended, attempt, got.Status, got.Revision, got.FinalVideoURL, e.FinalVideoURL, wantRevision, wantURL)
			}
			if !a.Balance.Equal(wantBalance) || !a.Captured.Equal(wantCaptured) || len(holds) != 0 {
				t.Errorf("ended %v, attempt %d: balance %s captured %s, %d holds open; want %s, %s and none",
					ended, attempt, a.Balance, a.Captured, len(holds), wantBalance, wantCaptured)
			}
			for _, key := range kept {
				if ok, err := bucket.Exists(ctx, key); err != nil || !ok {
					t.Errorf("ended %v, attempt %d: %s is gone (%v); want it kept", ended, attempt, key, err)
				}
			}
			for _, key := range gone {
				if ok, err := bucket.Exists(ctx, key); err != nil || ok {
					t.Errorf("ended %v, attempt %d: %s is still stored (%v); want it deleted", ended, attempt, key, err)
				}
			}
			// The new revision is told, as its own event (a repeat may
			// enqueue it again: the same message, under the same
			// webhook-id); a regenerate that ended otherwise changed
			// nothing to tell.
			want := webhook.Message{Kind: domain.WorkLongVideo, ID: v.ID, Event: "long_video.completed", Revision: 2, Attempt: 1}
			sent := hooks.messages()
			if ended && len(sent) > 0 || !ended && (len(sent) == 0 || slices.ContainsFunc(sent, func(m webhook.Message) bool { return m != want })) {
				t.Errorf("ended %v, attempt %d: webhooks enqueued %+v; want none if ended, else only %+v", ended, attempt, sent, want)
			}
		}
	}
}

// webhookQueue keeps the webhook messages enqueued.
type webhookQueue struct {
	mu   sync.Mutex
	sent []webhook.Message
}

func (q *webhookQueue) Send(_ context.Context, body []byte, _ time.Duration) error {
	var m webhook.Message
	if err := json.Unmarshal(body, &m); err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.sent = append(q.sent, m)
	return nil
}

func (q *webhookQueue) messages() []webhook.Message {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.sent)
}
