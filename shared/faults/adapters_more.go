package faults

import (
	"context"
	"time"

	"github.com/mediagen-dev/mediagen/shared/domain"
	"github.com/mediagen-dev/mediagen/shared/store"
)

// The store calls of lists, scene progress, webhooks, idempotency keys and
// provider slots, each a fault point like the others.

func (s *Store) ListGenerations(ctx context.Context, q store.ListQuery) (store.Page[domain.Generation], error) {
	return call(s.In, "store.ListGenerations", func() (store.Page[domain.Generation], error) { return s.Inner.ListGenerations(ctx, q) })
}

func (s *Store) ListLongVideos(ctx context.Context, q store.ListQuery) (store.Page[domain.LongVideo], error) {
	return call(s.In, "store.ListLongVideos", func() (store.Page[domain.LongVideo], error) { return s.Inner.ListLongVideos(ctx, q) })
}

func (s *Store) SetSceneStatus(ctx context.Context, videoID string, scene int, state domain.SceneState, at time.Time) error {
	return call0(s.In, "store.SetSceneStatus", func() error { return s.Inner.SetSceneStatus(ctx, videoID, scene, state, at) })
}

func (s *Store) EnsureWebhookSecret(ctx context.Context, userID, candidate string) (string, error) {
	return call(s.In, "store.EnsureWebhookSecret", func() (string, error) { return s.Inner.EnsureWebhookSecret(ctx, userID, candidate) })
}

func (s *Store) SetWebhookSecret(ctx context.Context, userID, secret string) error {
	return call0(s.In, "store.SetWebhookSecret", func() error { return s.Inner.SetWebhookSecret(ctx, userID, secret) })
}

func (s *Store) AddWebhookAttempt(ctx context.Context, kind domain.WorkKind, id string, a domain.WebhookAttempt) error {
	return call0(s.In, "store.AddWebhookAttempt", func() error { return s.Inner.AddWebhookAttempt(ctx, kind, id, a) })
}

func (s *Store) ClaimIdempotencyKey(ctx context.Context, r domain.IdempotencyRecord) (domain.IdempotencyRecord, bool, error) {
	var claimed bool
	existing, err := call(s.In, "store.ClaimIdempotencyKey", func() (domain.IdempotencyRecord, error) {
		var (
			e   domain.IdempotencyRecord
			err error
		)
		e, claimed, err = s.Inner.ClaimIdempotencyKey(ctx, r)
		return e, err
	})
	return existing, claimed, err
}

func (s *Store) FinishIdempotencyKey(ctx context.Context, userID, key string, status int, body []byte) error {
	return call0(s.In, "store.FinishIdempotencyKey", func() error { return s.Inner.FinishIdempotencyKey(ctx, userID, key, status, body) })
}

func (s *Store) ReleaseIdempotencyKey(ctx context.Context, userID, key string) error {
	return call0(s.In, "store.ReleaseIdempotencyKey", func() error { return s.Inner.ReleaseIdempotencyKey(ctx, userID, key) })
}

func (s *Store) AcquireSlot(ctx context.Context, provider, holder string, limit int, at time.Time) (bool, error) {
	return call(s.In, "store.AcquireSlot", func() (bool, error) { return s.Inner.AcquireSlot(ctx, provider, holder, limit, at) })
}

func (s *Store) ReleaseSlot(ctx context.Context, provider, holder string) error {
	return call0(s.In, "store.ReleaseSlot", func() error { return s.Inner.ReleaseSlot(ctx, provider, holder) })
}

func (s *Store) SlotQueuePosition(ctx context.Context, provider, holder string) (int, error) {
	return call(s.In, "store.SlotQueuePosition", func() (int, error) { return s.Inner.SlotQueuePosition(ctx, provider, holder) })
}

func (s *Store) SlotsInUse(ctx context.Context, provider string) (int, error) {
	return call(s.In, "store.SlotsInUse", func() (int, error) { return s.Inner.SlotsInUse(ctx, provider) })
}

// Stop is the point "workflow.Stop".
func (w *Workflow) Stop(ctx context.Context, name, cause string) error {
	return call0(w.In, "workflow.Stop", func() error { return w.Inner.Stop(ctx, name, cause) })
}
