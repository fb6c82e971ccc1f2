package storetest

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/store"
)

func testWebhooks(t *testing.T, s store.Store) {
	ctx := context.Background()
	user := newAccount(t, s, domain.PlanFree, "0")
	got, err := s.EnsureWebhookSecret(ctx, user, "whsec_first")
	if err != nil || got != "whsec_first" {
		t.Fatalf("first EnsureWebhookSecret = %q, %v", got, err)
	}
	if got, err = s.EnsureWebhookSecret(ctx, user, "whsec_second"); err != nil || got != "whsec_first" {
		t.Errorf("second EnsureWebhookSecret = %q, %v; want the first secret kept", got, err)
	}
	if err := s.SetWebhookSecret(ctx, user, "whsec_rotated"); err != nil {
		t.Fatal(err)
	}
	if a, err := s.GetAccount(ctx, user); err != nil || a.WebhookSecret != "whsec_rotated" {
		t.Errorf("account secret = %q, %v; want the rotated one", a.WebhookSecret, err)
	}
	if _, err := s.EnsureWebhookSecret(ctx, "user-missing", "x"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("secret of a missing account = %v, want ErrNotFound", err)
	}
	if err := s.SetWebhookSecret(ctx, "user-missing", "x"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("rotation on a missing account = %v, want ErrNotFound", err)
	}

	hook := domain.Webhook{URL: "https://example.com/hook", Events: []string{"generation.completed"}}
	g := &domain.Generation{UUID: uuid.NewString(), UserID: user, Model: "m", ModelVersion: "v", Kind: domain.MediaImage,
		Input: []byte(`{}`), ImageCount: 1, Status: domain.StatusProcessing, CreditsUsed: credits("1"), CreatedAt: now,
		UpdatedAt: now, Deadline: now.Add(time.Hour), Webhook: hook}
	if err := s.CreateGeneration(ctx, g); err != nil {
		t.Fatal(err)
	}
	v := newLongVideo(t, s, user, "beta-2", now, hook)
	attempts := []domain.WebhookAttempt{
		{WebhookID: "msg_1", Event: "generation.completed", Attempt: 1, At: now, StatusCode: 500, Error: "HTTP 500"},
		{WebhookID: "msg_1", Event: "generation.completed", Attempt: 2, At: now.Add(time.Minute), StatusCode: 204, Delivered: true},
	}
	for _, a := range attempts {
		if err := s.AddWebhookAttempt(ctx, domain.WorkGeneration, g.UUID, a); err != nil {
			t.Fatal(err)
		}
		if err := s.AddWebhookAttempt(ctx, domain.WorkLongVideo, v.ID, a); err != nil {
			t.Fatal(err)
		}
	}
	gotG, err := s.GetGeneration(ctx, g.UUID)
	if err != nil {
		t.Fatal(err)
	}
	gotV, err := s.GetLongVideo(ctx, v.ID)
	if err != nil {
		t.Fatal(err)
	}
	for what, rec := range map[string]struct {
		w  domain.Webhook
		as []domain.WebhookAttempt
	}{"generation": {gotG.Webhook, gotG.WebhookAttempts}, "long video": {gotV.Webhook, gotV.WebhookAttempts}} {
		if !reflect.DeepEqual(rec.w, hook) {
			t.Errorf("%s webhook = %+v, want %+v", what, rec.w, hook)
		}
		if len(rec.as) != len(attempts) {
			t.Fatalf("%s has %d attempts, want %d", what, len(rec.as), len(attempts))
		}
		for i := range attempts {
			a, w := rec.as[i], attempts[i]
			if a.WebhookID != w.WebhookID || a.Attempt != w.Attempt || !a.At.Equal(w.At) || a.StatusCode != w.StatusCode ||
				a.Error != w.Error || a.Delivered != w.Delivered || a.Event != w.Event {
				t.Errorf("%s attempt %d = %+v, want %+v", what, i, a, w)
			}
		}
	}
	if err := s.AddWebhookAttempt(ctx, domain.WorkGeneration, uuid.NewString(), attempts[0]); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("attempt on a missing generation = %v, want ErrNotFound", err)
	}

	// A record lists at most MaxWebhookAttempts: the one more is refused
	// and the list stays as it was.
	for n := len(attempts); n < domain.MaxWebhookAttempts; n++ {
		a := domain.WebhookAttempt{WebhookID: "msg_2", Event: "long_video.completed", Attempt: n, At: now, StatusCode: 500}
		if err := s.AddWebhookAttempt(ctx, domain.WorkLongVideo, v.ID, a); err != nil {
			t.Fatalf("attempt %d of %d: %v", n+1, domain.MaxWebhookAttempts, err)
		}
	}
	over := domain.WebhookAttempt{WebhookID: "msg_3", Event: "long_video.completed", Attempt: 1, At: now}
	if err := s.AddWebhookAttempt(ctx, domain.WorkLongVideo, v.ID, over); !errors.Is(err, domain.ErrWebhookAttemptsFull) {
		t.Errorf("attempt %d on a video = %v, want ErrWebhookAttemptsFull", domain.MaxWebhookAttempts+1, err)
	}
	if full, err := s.GetLongVideo(ctx, v.ID); err != nil || len(full.WebhookAttempts) != domain.MaxWebhookAttempts ||
		full.WebhookAttempts[len(full.WebhookAttempts)-1].WebhookID != "msg_2" {
		t.Errorf("after one attempt over the bound: %d attempts (%v); want %d, the last one kept", len(full.WebhookAttempts), err, domain.MaxWebhookAttempts)
	}
}
