package domain

import (
	"fmt"
	"time"

	"github.com/shopspring/decimal"
)

// Plan is an account's subscription tier; it sets the default rate limit.
type Plan string

const (
	PlanFree       Plan = "free"
	PlanPro        Plan = "pro"
	PlanEnterprise Plan = "enterprise"
)

// plans lists the valid plans in the order they are documented.
var plans = []Plan{PlanFree, PlanPro, PlanEnterprise}

// Default per-minute request limits of the spec. Enterprise accounts carry
// their own; this is the value used when none was set.
const (
	RateLimitFree              = 10
	RateLimitPro               = 100
	rateLimitEnterpriseDefault = 1000
)

// ParsePlan accepts exactly the documented plan names.
func ParsePlan(s string) (Plan, error) {
	for _, p := range plans {
		if string(p) == s {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: unknown plan %q (allowed: free, pro, enterprise)", ErrInvalid, s)
}

// Account is a customer with a credit balance. The four totals always obey
// Granted = Balance + Held + Captured; every ledger operation moves an amount
// between them in one atomic write.
type Account struct {
	UserID string
	Plan   Plan
	// CustomRateLimit is the per-minute limit of an enterprise account; zero
	// means the plan default.
	CustomRateLimit int
	Balance         decimal.Decimal
	Held            decimal.Decimal
	Granted         decimal.Decimal
	Captured        decimal.Decimal
	CreatedAt       time.Time
	// WebhookSecret signs the account's webhooks ("whsec_" + base64); empty
	// until the first webhook or `mediagen webhooks secret`.
	WebhookSecret string
	// Usage is what the account spent, by month ("2006-01").
	Usage map[string]Usage
	// OutputRetentionDays is how long the account's outputs are kept, one
	// of RetentionChoices; zero means DefaultRetentionDays.
	OutputRetentionDays int
}

// Covers is nil when the account's balance covers amount, else the
// *InsufficientCreditsError a hold of it would answer: a check that moves
// nothing, for work that must not cost the service anything (a copy of an
// uploaded file) before its hold is sure to be taken.
func (a Account) Covers(amount decimal.Decimal) error {
	if a.Balance.LessThan(amount) {
		return &InsufficientCreditsError{Required: amount, Available: a.Balance}
	}
	return nil
}

// RetentionDays is how long the account's outputs are kept, in days.
func (a Account) RetentionDays() int {
	if a.OutputRetentionDays == 0 {
		return DefaultRetentionDays
	}
	return a.OutputRetentionDays
}

// RateLimit is the number of requests the account may make per minute.
func (a Account) RateLimit() int {
	switch a.Plan {
	case PlanPro:
		return RateLimitPro
	case PlanEnterprise:
		if a.CustomRateLimit > 0 {
			return a.CustomRateLimit
		}
		return rateLimitEnterpriseDefault
	default:
		return RateLimitFree
	}
}

// WorkKind names the record a hold pays for, so the sweeper knows where to
// look for it.
type WorkKind string

const (
	WorkGeneration WorkKind = "generation"
	WorkLongVideo  WorkKind = "long_video"
)

// Hold is credit reserved for one piece of work until it is captured
// (work completed) or released (work failed). WorkID is the UUID of the
// generation or long-form video, minted once per request, so it is the
// idempotency key of every ledger operation on the hold.
type Hold struct {
	WorkID    string
	Kind      WorkKind
	Amount    decimal.Decimal
	CreatedAt time.Time
	// Model is the model the work runs, carried into the journal and the
	// usage counters when the hold is captured.
	Model string
	// KeyPrefix is the API key that started the work (empty: a token or the
	// admin command). KeyDailyLimit caps what that key's holds may take per
	// UTC day; zero: no cap. KeyAncestors are the keys above it with their
	// limits (KeyChain).
	KeyPrefix     string
	KeyDailyLimit decimal.Decimal
	KeyAncestors  []KeyLimit
}

// OpenHold is a hold together with the account it belongs to.
type OpenHold struct {
	UserID string
	Hold
}
