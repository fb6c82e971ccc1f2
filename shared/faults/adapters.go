package faults

import (
	"context"
	"io"
	"time"

	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/shared/domain"
	"github.com/mediagen-dev/mediagen/shared/store"
	"github.com/mediagen-dev/mediagen/shared/upstream"
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
	return call(s.In, "store.Capture", func() (bool, error) {
		ok, err := s.Inner.Capture(ctx, userID, workID)
		if ok {
			s.In.noteSettled(workID)
		}
		return ok, err
	})
}

func (s *Store) Release(ctx context.Context, userID, workID string) (bool, error) {
	return call(s.In, "store.Release", func() (bool, error) {
		ok, err := s.Inner.Release(ctx, userID, workID)
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

func (s *Store) PutAPIKey(ctx context.Context, k domain.APIKey) error {
	return call0(s.In, "store.PutAPIKey", func() error { return s.Inner.PutAPIKey(ctx, k) })
}

func (s *Store) GetAPIKey(ctx context.Context, hash string) (domain.APIKey, error) {
	return call(s.In, "store.GetAPIKey", func() (domain.APIKey, error) { return s.Inner.GetAPIKey(ctx, hash) })
}

func (s *Store) RevokeAPIKey(ctx context.Context, prefix string, at time.Time) error {
	return call0(s.In, "store.RevokeAPIKey", func() error { return s.Inner.RevokeAPIKey(ctx, prefix, at) })
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

// Sender is a queue.
type Sender interface {
	Send(ctx context.Context, body []byte, delay time.Duration) error
}

// Queue wraps a queue: "queue.Send".
type Queue struct {
	Inner Sender
	In    *Injector
}

func (q *Queue) Send(ctx context.Context, body []byte, delay time.Duration) error {
	return call0(q.In, "queue.Send", func() error { return q.Inner.Send(ctx, body, delay) })
}

// Upstream wraps one upstream's client: "upstream.Submit|Get|Cancel" (the
// other calls pass through).
type Upstream struct {
	upstream.Provider
	In *Injector
}

func (u *Upstream) Submit(ctx context.Context, model string, input map[string]any, webhook string) (domain.UpstreamJob, error) {
	return call(u.In, "upstream.Submit", func() (domain.UpstreamJob, error) { return u.Provider.Submit(ctx, model, input, webhook) })
}

func (u *Upstream) Get(ctx context.Context, job domain.UpstreamJob) (upstream.Result, error) {
	return call(u.In, "upstream.Get", func() (upstream.Result, error) { return u.Provider.Get(ctx, job) })
}

func (u *Upstream) Cancel(ctx context.Context, job domain.UpstreamJob) error {
	return call0(u.In, "upstream.Cancel", func() error { return u.Provider.Cancel(ctx, job) })
}

// ObjectStore is the bucket as the copier and the long-form steps use it.
type ObjectStore interface {
	Put(ctx context.Context, key string, body io.Reader, contentType string) error
	PutFile(ctx context.Context, key, path, contentType string) error
	GetFile(ctx context.Context, key, path string) error
	URL(key string) string
}

// Bucket wraps the bucket: "bucket.Put|PutFile|GetFile".
type Bucket struct {
	Inner ObjectStore
	In    *Injector
}

func (b *Bucket) Put(ctx context.Context, key string, body io.Reader, contentType string) error {
	return call0(b.In, "bucket.Put", func() error { return b.Inner.Put(ctx, key, body, contentType) })
}

func (b *Bucket) PutFile(ctx context.Context, key, path, contentType string) error {
	return call0(b.In, "bucket.PutFile", func() error { return b.Inner.PutFile(ctx, key, path, contentType) })
}

func (b *Bucket) GetFile(ctx context.Context, key, path string) error {
	return call0(b.In, "bucket.GetFile", func() error { return b.Inner.GetFile(ctx, key, path) })
}

func (b *Bucket) URL(key string) string { return b.Inner.URL(key) }

// Starter starts workflows.
type Starter interface {
	Start(ctx context.Context, name string, input []byte) error
	Stop(ctx context.Context, name, cause string) error
}

// Workflow wraps the workflow starter: "workflow.Start".
type Workflow struct {
	Inner Starter
	In    *Injector
}

func (w *Workflow) Start(ctx context.Context, name string, input []byte) error {
	return call0(w.In, "workflow.Start", func() error { return w.Inner.Start(ctx, name, input) })
}
