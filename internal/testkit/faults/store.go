package faults

import (
	"context"
	"time"

	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/store"
)

// Store wraps a store; every call is a point named "store.<Method>". It
// also counts the settlements that took effect, per work id.
type Store struct {
	Inner store.Store
	In    *Injector
}

var _ store.Store = (*Store)(nil)

func (s *Store) CreateAccount(ctx context.Context, a domain.Account) error {
	return call0(s.In, "store.CreateAccount", func() error { return s.Inner.CreateAccount(ctx, a) })
}

func (s *Store) GetAccount(ctx context.Context, userID string) (domain.Account, error) {
	return call(s.In, "store.GetAccount", func() (domain.Account, error) { return s.Inner.GetAccount(ctx, userID) })
}

func (s *Store) SetOutputRetention(ctx context.Context, userID string, days int) error {
	return call0(s.In, "store.SetOutputRetention", func() error { return s.Inner.SetOutputRetention(ctx, userID, days) })
}

func (s *Store) Grant(ctx context.Context, userID, grantID string, amount decimal.Decimal) (bool, error) {
	return call(s.In, "store.Grant", func() (bool, error) { return s.Inner.Grant(ctx, userID, grantID, amount) })
}

func (s *Store) Hold(ctx context.Context, userID string, h domain.Hold) error {
	return call0(s.In, "store.Hold", func() error {
		err := s.Inner.Hold(ctx, userID, h)
		if err == nil {
			s.In.noteHeld(h.WorkID)
		}
		return err
	})
}

func (s *Store) Capture(ctx context.Context, userID, workID string) (bool, error) {
	return s.settle(ctx, "store.Capture", s.Inner.Capture, userID, workID)
}

func (s *Store) Release(ctx context.Context, userID, workID string) (bool, error) {
	return s.settle(ctx, "store.Release", s.Inner.Release, userID, workID)
}

func (s *Store) Refund(ctx context.Context, userID, workID string) (bool, error) {
	return s.settle(ctx, "store.Refund", s.Inner.Refund, userID, workID)
}

// settle runs a settlement of the inner store (Capture or Release) at the
// point op, and counts it when it took effect.
func (s *Store) settle(ctx context.Context, op string, settle func(ctx context.Context, userID, workID string) (bool, error),
	userID, workID string) (bool, error) {
	return call(s.In, op, func() (bool, error) {
		ok, err := settle(ctx, userID, workID)
		if ok {
			s.In.noteSettled(workID)
		}
		return ok, err
	})
}

func (s *Store) OpenHolds(ctx context.Context, createdBefore time.Time) ([]domain.OpenHold, error) {
	return call(s.In, "store.OpenHolds", func() ([]domain.OpenHold, error) { return s.Inner.OpenHolds(ctx, createdBefore) })
}

func (s *Store) AccountHolds(ctx context.Context, userID string) ([]domain.Hold, error) {
	return call(s.In, "store.AccountHolds", func() ([]domain.Hold, error) { return s.Inner.AccountHolds(ctx, userID) })
}

func (s *Store) JournalEntries(ctx context.Context, q store.JournalQuery) (store.Page[domain.JournalEntry], error) {
	return call(s.In, "store.JournalEntries", func() (store.Page[domain.JournalEntry], error) { return s.Inner.JournalEntries(ctx, q) })
}

func (s *Store) UsageCounts(ctx context.Context, userID, fromDay, toDay string) ([]domain.UsageCount, error) {
	return call(s.In, "store.UsageCounts", func() ([]domain.UsageCount, error) { return s.Inner.UsageCounts(ctx, userID, fromDay, toDay) })
}

func (s *Store) KeySpend(ctx context.Context, userID, day string) (map[string]decimal.Decimal, error) {
	return call(s.In, "store.KeySpend", func() (map[string]decimal.Decimal, error) { return s.Inner.KeySpend(ctx, userID, day) })
}

func (s *Store) AccountIDs(ctx context.Context) ([]string, error) {
	return call(s.In, "store.AccountIDs", func() ([]string, error) { return s.Inner.AccountIDs(ctx) })
}

func (s *Store) PutAPIKey(ctx context.Context, k domain.APIKey) error {
	return call0(s.In, "store.PutAPIKey", func() error { return s.Inner.PutAPIKey(ctx, k) })
}

func (s *Store) GetAPIKey(ctx context.Context, hash string) (domain.APIKey, error) {
	return call(s.In, "store.GetAPIKey", func() (domain.APIKey, error) { return s.Inner.GetAPIKey(ctx, hash) })
}

func (s *Store) RevokeAPIKey(ctx context.Context, prefix string, at time.Time) (time.Time, error) {
	return call(s.In, "store.RevokeAPIKey", func() (time.Time, error) { return s.Inner.RevokeAPIKey(ctx, prefix, at) })
}

func (s *Store) TouchAPIKey(ctx context.Context, hash string, at, staleBefore time.Time) error {
	return call0(s.In, "store.TouchAPIKey", func() error { return s.Inner.TouchAPIKey(ctx, hash, at, staleBefore) })
}

func (s *Store) ListAPIKeys(ctx context.Context, userID string) ([]domain.APIKey, error) {
	return call(s.In, "store.ListAPIKeys", func() ([]domain.APIKey, error) { return s.Inner.ListAPIKeys(ctx, userID) })
}

func (s *Store) CreateGeneration(ctx context.Context, g *domain.Generation) error {
	return call0(s.In, "store.CreateGeneration", func() error { return s.Inner.CreateGeneration(ctx, g) })
}

func (s *Store) GetGeneration(ctx context.Context, uuid string) (domain.Generation, error) {
	return call(s.In, "store.GetGeneration", func() (domain.Generation, error) { return s.Inner.GetGeneration(ctx, uuid) })
}

func (s *Store) GetGenerationByID(ctx context.Context, userID string, id int64) (domain.Generation, error) {
	return call(s.In, "store.GetGenerationByID", func() (domain.Generation, error) { return s.Inner.GetGenerationByID(ctx, userID, id) })
}

func (s *Store) SetUpstreamJobs(ctx context.Context, uuid string, run domain.UpstreamRun, at time.Time) error {
	return call0(s.In, "store.SetUpstreamJobs", func() error { return s.Inner.SetUpstreamJobs(ctx, uuid, run, at) })
}

func (s *Store) FinishGeneration(ctx context.Context, uuid string, o domain.Outcome, at time.Time) error {
	return call0(s.In, "store.FinishGeneration", func() error { return s.Inner.FinishGeneration(ctx, uuid, o, at) })
}

func (s *Store) ClaimGenerationFinish(ctx context.Context, uuid string, at time.Time) error {
	return call0(s.In, "store.ClaimGenerationFinish", func() error { return s.Inner.ClaimGenerationFinish(ctx, uuid, at) })
}

func (s *Store) SetGenerationProgress(ctx context.Context, uuid string, progress int) error {
	return call0(s.In, "store.SetGenerationProgress", func() error { return s.Inner.SetGenerationProgress(ctx, uuid, progress) })
}

func (s *Store) ClaimLongVideoFinish(ctx context.Context, id string, at time.Time) error {
	return call0(s.In, "store.ClaimLongVideoFinish", func() error { return s.Inner.ClaimLongVideoFinish(ctx, id, at) })
}

func (s *Store) SetGenerationRemoval(ctx context.Context, uuid string, r domain.Removal, at time.Time) error {
	return call0(s.In, "store.SetGenerationRemoval", func() error { return s.Inner.SetGenerationRemoval(ctx, uuid, r, at) })
}

func (s *Store) SetLongVideoRemoval(ctx context.Context, id string, r domain.Removal, at time.Time) error {
	return call0(s.In, "store.SetLongVideoRemoval", func() error { return s.Inner.SetLongVideoRemoval(ctx, id, r, at) })
}

func (s *Store) CreateLongVideo(ctx context.Context, v domain.LongVideo) error {
	return call0(s.In, "store.CreateLongVideo", func() error { return s.Inner.CreateLongVideo(ctx, v) })
}

func (s *Store) GetLongVideo(ctx context.Context, id string) (domain.LongVideo, error) {
	return call(s.In, "store.GetLongVideo", func() (domain.LongVideo, error) { return s.Inner.GetLongVideo(ctx, id) })
}

func (s *Store) FinishLongVideo(ctx context.Context, id string, o domain.Outcome, at time.Time) error {
	return call0(s.In, "store.FinishLongVideo", func() error { return s.Inner.FinishLongVideo(ctx, id, o, at) })
}

func (s *Store) ClaimPoll(ctx context.Context, uuid string, attempt int, now, until time.Time) (bool, int, error) {
	type r struct {
		ok     bool
		holder int
	}
	v, err := call(s.In, "store.ClaimPoll", func() (r, error) {
		ok, h, err := s.Inner.ClaimPoll(ctx, uuid, attempt, now, until)
		return r{ok, h}, err
	})
	return v.ok, v.holder, err
}

func (s *Store) CountRequest(ctx context.Context, userID string, at time.Time) (int, error) {
	return call(s.In, "store.CountRequest", func() (int, error) { return s.Inner.CountRequest(ctx, userID, at) })
}

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

func (s *Store) OpenStream(ctx context.Context, userID, stream, owner string, limit int, at, expires time.Time) (bool, error) {
	return call(s.In, "store.OpenStream", func() (bool, error) { return s.Inner.OpenStream(ctx, userID, stream, owner, limit, at, expires) })
}

func (s *Store) HoldsStream(ctx context.Context, userID, stream, owner string) (bool, error) {
	return call(s.In, "store.HoldsStream", func() (bool, error) { return s.Inner.HoldsStream(ctx, userID, stream, owner) })
}

func (s *Store) CloseStream(ctx context.Context, userID, stream, owner string) error {
	return call0(s.In, "store.CloseStream", func() error { return s.Inner.CloseStream(ctx, userID, stream, owner) })
}

func (s *Store) BeginRegenerate(ctx context.Context, id string, r domain.Regeneration, at time.Time) error {
	return call0(s.In, "store.BeginRegenerate", func() error { return s.Inner.BeginRegenerate(ctx, id, r, at) })
}

func (s *Store) SetRegenerateState(ctx context.Context, id string, revision int, state domain.SceneState, at time.Time) error {
	return call0(s.In, "store.SetRegenerateState", func() error { return s.Inner.SetRegenerateState(ctx, id, revision, state, at) })
}

func (s *Store) EndRegenerate(ctx context.Context, id string, revision int, o domain.Outcome, at time.Time) error {
	return call0(s.In, "store.EndRegenerate", func() error { return s.Inner.EndRegenerate(ctx, id, revision, o, at) })
}
