// Package store declares what the service keeps and the guarantees each
// adapter gives. Use cases declare the narrower interfaces they need; the
// interfaces here are the full contract that the conformance suite
// (storetest) checks on every adapter.
package store

import (
	"context"
	"time"

	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/shared/domain"
)

// Accounts keeps customer accounts.
type Accounts interface {
	// CreateAccount stores a new account with zero totals; ErrAlreadyExists
	// if the user id is taken.
	CreateAccount(ctx context.Context, a domain.Account) error
	// GetAccount reads an account with its open holds; ErrNotFound if absent.
	GetAccount(ctx context.Context, userID string) (domain.Account, error)
}

// Ledger moves credits. Every operation is idempotent by the id it is given
// and changes the account in one atomic write, so that
// Granted = Balance + Held + Captured holds after any crash or retry.
type Ledger interface {
	// Grant adds credits once per grantID (unique within the account);
	// applied is false when that grant was already applied.
	Grant(ctx context.Context, userID, grantID string, amount decimal.Decimal) (applied bool, err error)
	// Hold reserves h.Amount for h.WorkID. It fails with an
	// *domain.InsufficientCreditsError and changes nothing when the balance is
	// short. Holding the same open work again changes nothing. Work ids are
	// minted per request and never held again after settlement.
	Hold(ctx context.Context, userID string, h domain.Hold) error
	// Capture spends an open hold; Release returns it to the balance. Each
	// settles a hold at most once: settled is false when the hold was not
	// open (already captured or released, or never made).
	Capture(ctx context.Context, userID, workID string) (settled bool, err error)
	Release(ctx context.Context, userID, workID string) (settled bool, err error)
	// OpenHolds lists holds created before the given time, for the sweeper.
	OpenHolds(ctx context.Context, createdBefore time.Time) ([]domain.OpenHold, error)
}

// APIKeys keeps hashed API keys.
type APIKeys interface {
	PutAPIKey(ctx context.Context, k domain.APIKey) error
	// GetAPIKey looks a key up by its SHA-256 hash; ErrNotFound if absent.
	GetAPIKey(ctx context.Context, hash string) (domain.APIKey, error)
	// RevokeAPIKey marks the key with this prefix revoked at the given time;
	// revoking twice keeps the first time. ErrNotFound if no key has it.
	RevokeAPIKey(ctx context.Context, prefix string, at time.Time) error
	ListAPIKeys(ctx context.Context, userID string) ([]domain.APIKey, error)
}

// Generations keeps single generations.
type Generations interface {
	// CreateGeneration assigns g.ID from the generations sequence and stores
	// the record; ErrAlreadyExists if g.UUID is taken.
	CreateGeneration(ctx context.Context, g *domain.Generation) error
	GetGeneration(ctx context.Context, uuid string) (domain.Generation, error)
	GetGenerationByID(ctx context.Context, id int64) (domain.Generation, error)
	// SetUpstreamID records the upstream job of a generation still processing.
	SetUpstreamID(ctx context.Context, uuid, upstreamID string, at time.Time) error
	// FinishGeneration writes a terminal outcome once: ErrConflict if the
	// generation is no longer processing.
	FinishGeneration(ctx context.Context, uuid string, o domain.Outcome, at time.Time) error
	// ProcessingGenerations lists up to limit generations still processing,
	// oldest first, so a restarted runtime can resume polling them.
	ProcessingGenerations(ctx context.Context, limit int) ([]domain.Generation, error)
}

// LongVideos keeps long-form videos.
type LongVideos interface {
	CreateLongVideo(ctx context.Context, v domain.LongVideo) error
	GetLongVideo(ctx context.Context, id string) (domain.LongVideo, error)
	// FinishLongVideo writes a terminal outcome once: ErrConflict if the
	// video is no longer processing.
	FinishLongVideo(ctx context.Context, id string, o domain.Outcome, at time.Time) error
	// ProcessingLongVideos lists up to limit videos still processing, oldest
	// first, so a restarted local runtime can run their workflows again.
	ProcessingLongVideos(ctx context.Context, limit int) ([]domain.LongVideo, error)
}

// PollChains keeps each generation's chain of poll messages single: a poll
// message delivered twice (SQS delivers at least once; a poller that crashes
// after enqueueing the next poll is redelivered) never enqueues two next
// polls, and a poller that crashed is taken over once its lease ends.
type PollChains interface {
	// ClaimPoll lets poll attempt n of a generation run. It succeeds when no
	// attempt at or above n was claimed, or when attempt n was claimed and
	// its lease ended at or before now (its claimer died); attempt n then
	// holds the chain until `until`. Otherwise claimed is false and holder
	// is the attempt that holds the chain. ErrNotFound if no such generation.
	ClaimPoll(ctx context.Context, uuid string, attempt int, now, until time.Time) (claimed bool, holder int, err error)
}

// RateLimits counts requests per account and minute. Counters expire on
// their own shortly after their minute ends.
type RateLimits interface {
	// CountRequest adds one request to the account's counter for the minute
	// that contains at, and returns the count including it.
	CountRequest(ctx context.Context, userID string, at time.Time) (int, error)
}

// Store is everything an adapter provides.
type Store interface {
	Accounts
	Ledger
	APIKeys
	Generations
	LongVideos
	PollChains
	RateLimits
}

// MinuteWindow is the start of the rate-limit window that contains t.
func MinuteWindow(t time.Time) time.Time { return t.UTC().Truncate(time.Minute) }
