package store

import (
	"context"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// Accounts keeps customer accounts.
type Accounts interface {
	// CreateAccount stores a new account with zero totals; ErrAlreadyExists
	// if the user id is taken.
	CreateAccount(ctx context.Context, a domain.Account) error
	// GetAccount reads an account: its totals, settings and usage, never
	// its holds, so that the read costs the same however much work is in
	// flight. ErrNotFound if absent.
	GetAccount(ctx context.Context, userID string) (domain.Account, error)
	// SetOutputRetention sets how long the account's outputs are kept
	// (domain.RetentionChoices; the caller checks it). ErrNotFound if the
	// account is missing.
	SetOutputRetention(ctx context.Context, userID string, days int) error
}
