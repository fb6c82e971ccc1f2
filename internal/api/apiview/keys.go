package apiview

import (
	"time"

	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// Key is an API key as its holder sees it: never its secret, which only
// CreatedKey carries, once.
type Key struct {
	Prefix string         `json:"prefix"`
	Name   string         `json:"name"`
	Scopes []domain.Scope `json:"scopes"`
	// DailyCreditLimit is null for a key without one.
	DailyCreditLimit *string `json:"daily_credit_limit"`
	// CreatedBy is the prefix of the key that made this one; null for the
	// owner's keys (the admin command's, a token's, and those made before
	// keys recorded their maker), which stand above every key.
	CreatedBy *string `json:"created_by"`
	CreatedAt string  `json:"created_at"`
}

// CreatedKey is the answer of POST /api/account/keys: the key and, the one
// time it is shown, the key itself.
type CreatedKey struct {
	Key
	APIKey string `json:"api_key"`
}

// ListedKey is one key of GET /api/account/keys: what its holds and those
// of the keys below it took today (UTC), when it was last used (to within
// domain.LastUsedGranularity; null: never) and revoked (null: it works).
type ListedKey struct {
	Key
	SpentToday string  `json:"spent_today"`
	LastUsedAt *string `json:"last_used_at"`
	RevokedAt  *string `json:"revoked_at"`
}

// keyList is the answer of GET /api/account/keys: a page of keys, newest
// first.
type keyList = ListPage[ListedKey]

// RevokedKey is the answer of DELETE /api/account/keys/{prefix}: the key
// and the keys below it (RevokedBelow, by prefix) are revoked.
type RevokedKey struct {
	Prefix       string   `json:"prefix"`
	RevokedAt    string   `json:"revoked_at"`
	RevokedBelow []string `json:"revoked_below"`
}

// KeyOf renders a key.
func KeyOf(k domain.APIKey) Key {
	v := Key{Prefix: k.Prefix, Name: k.Name, Scopes: domain.KeyScopes(k.Scopes), CreatedAt: timestamp(k.CreatedAt)}
	if k.DailyCreditLimit.IsPositive() {
		limit := domain.FormatCredits(k.DailyCreditLimit)
		v.DailyCreditLimit = &limit
	}
	if by := k.CreatedBy(); by != "" {
		v.CreatedBy = &by
	}
	return v
}

// ListedKeyOf renders a key of the list with its spend today.
func ListedKeyOf(k domain.APIKey, spentToday decimal.Decimal) ListedKey {
	v := ListedKey{Key: KeyOf(k), SpentToday: domain.FormatCredits(spentToday)}
	if !k.LastUsedAt.IsZero() {
		at := timestamp(k.LastUsedAt)
		v.LastUsedAt = &at
	}
	if k.Revoked() {
		at := timestamp(k.RevokedAt)
		v.RevokedAt = &at
	}
	return v
}

// RevokedKeyOf renders a revocation of the key and the keys below it.
func RevokedKeyOf(prefix string, at time.Time, below []string) RevokedKey {
	if below == nil {
		below = []string{}
	}
	return RevokedKey{Prefix: prefix, RevokedAt: timestamp(at), RevokedBelow: below}
}

// timestamp is an instant as the account routes write it: RFC 3339, UTC.
func timestamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// Timestamp is timestamp for the routes that build their answer.
func Timestamp(t time.Time) string { return timestamp(t) }
