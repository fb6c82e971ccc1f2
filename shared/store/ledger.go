package store

import (
	"context"
	"time"

	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/shared/domain"
)

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
	// AccountHolds lists an account's open holds, oldest first, for
	// administration (no request path reads them); ErrNotFound if the
	// account is absent.
	AccountHolds(ctx context.Context, userID string) ([]domain.Hold, error)
}
