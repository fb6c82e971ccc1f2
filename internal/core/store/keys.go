package store

import (
	"context"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// APIKeys keeps hashed API keys.
type APIKeys interface {
	// PutAPIKey stores a new key with its name, scopes and daily limit.
	PutAPIKey(ctx context.Context, k domain.APIKey) error
	// GetAPIKey looks a key up by its SHA-256 hash; ErrNotFound if absent.
	// A key stored without scopes reads with every scope (domain.KeyScopes).
	GetAPIKey(ctx context.Context, hash string) (domain.APIKey, error)
	// RevokeAPIKey marks the key with this prefix revoked at the given time
	// and returns the time it is revoked from: revoking twice keeps the
	// first time. ErrNotFound if no key has it.
	RevokeAPIKey(ctx context.Context, prefix string, at time.Time) (time.Time, error)
	// ListAPIKeys is the account's keys, revoked ones included, oldest
	// first.
	ListAPIKeys(ctx context.Context, userID string) ([]domain.APIKey, error)
	// TouchAPIKey records that the key was used at `at`, only when its
	// last use is unset or before staleBefore: one conditional write, which
	// changes nothing when the stored time is recent enough. A missing key
	// is not an error (it may have been deleted meanwhile; nothing to note).
	TouchAPIKey(ctx context.Context, hash string, at, staleBefore time.Time) error
}
