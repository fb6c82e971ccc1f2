package store

import (
	"context"

	"github.com/mediagen-dev/mediagen/shared/domain"
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
}
