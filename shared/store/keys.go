package store

import (
	"context"
	"time"

	"github.com/mediagen-dev/mediagen/shared/domain"
)

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
