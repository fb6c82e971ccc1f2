// Package accounts holds the administration use cases: opening accounts,
// granting credits and managing API keys.
package accounts

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/webhook"
)

// Store is what administration needs from the store.
type Store interface {
	CreateAccount(ctx context.Context, a domain.Account) error
	GetAccount(ctx context.Context, userID string) (domain.Account, error)
	Grant(ctx context.Context, userID, grantID string, amount decimal.Decimal) (bool, error)
	PutAPIKey(ctx context.Context, k domain.APIKey) error
	RevokeAPIKey(ctx context.Context, prefix string, at time.Time) (time.Time, error)
	ListAPIKeys(ctx context.Context, userID string) ([]domain.APIKey, error)
	AccountHolds(ctx context.Context, userID string) ([]domain.Hold, error)
	EnsureWebhookSecret(ctx context.Context, userID, candidate string) (string, error)
	SetWebhookSecret(ctx context.Context, userID, secret string) error
	SetOutputRetention(ctx context.Context, userID string, days int) error
}

// Service runs the administration use cases.
type Service struct {
	Store Store
	Now   func() time.Time
}

func (s *Service) now() time.Time { return domain.Now(s.Now) }

// NewAccount is what opening an account asks for.
type NewAccount struct {
	Plan domain.Plan
	// Credits is granted at once; zero grants nothing.
	Credits decimal.Decimal
	// RateLimit is the per-minute limit of an enterprise account.
	RateLimit int
}

// CreatedAccount is what the caller sees once: the plain API key.
type CreatedAccount struct {
	UserID  string `json:"user_id"`
	APIKey  string `json:"api_key"`
	Plan    string `json:"plan"`
	Credits string `json:"credits"`
}

// CreateAccount opens an account, grants its first credits and mints its
// first API key. Arguments are checked before anything is written.
func (s *Service) CreateAccount(ctx context.Context, in NewAccount) (CreatedAccount, error) {
	if _, err := domain.ParsePlan(string(in.Plan)); err != nil {
		return CreatedAccount{}, err
	}
	if err := domain.CheckCredits(in.Credits); err != nil {
		return CreatedAccount{}, err
	}
	if in.RateLimit < 0 {
		return CreatedAccount{}, fmt.Errorf("%w: rate limit must be positive, got %d", domain.ErrInvalid, in.RateLimit)
	}
	if in.RateLimit > 0 && in.Plan != domain.PlanEnterprise {
		return CreatedAccount{}, fmt.Errorf("%w: a custom rate limit is for enterprise accounts; the %s plan allows %d per minute",
			domain.ErrInvalid, in.Plan, domain.Account{Plan: in.Plan}.RateLimit())
	}
	userID := "usr_" + uuid.NewString()
	if err := s.Store.CreateAccount(ctx, domain.Account{UserID: userID, Plan: in.Plan, CustomRateLimit: in.RateLimit, CreatedAt: s.now()}); err != nil {
		return CreatedAccount{}, fmt.Errorf("open account: %w", err)
	}
	if !in.Credits.IsZero() {
		if _, err := s.Store.Grant(ctx, userID, "initial", in.Credits); err != nil {
			return CreatedAccount{}, fmt.Errorf("grant first credits to %s: %w", userID, err)
		}
	}
	key, err := s.CreateKey(ctx, userID)
	if err != nil {
		return CreatedAccount{}, err
	}
	return CreatedAccount{UserID: userID, APIKey: key.APIKey, Plan: string(in.Plan), Credits: domain.FormatCredits(in.Credits)}, nil
}

// Grant adds credits. grantID makes a retried grant apply once; an empty
// one mints a fresh id.
func (s *Service) Grant(ctx context.Context, userID, grantID string, amount decimal.Decimal) (domain.Account, bool, error) {
	if err := domain.CheckCredits(amount); err != nil {
		return domain.Account{}, false, err
	}
	if amount.IsZero() {
		return domain.Account{}, false, fmt.Errorf("%w: grant at least 0.01 credits", domain.ErrInvalid)
	}
	if grantID == "" {
		grantID = "grant-" + uuid.NewString()
	}
	applied, err := s.Store.Grant(ctx, userID, grantID, amount)
	if err != nil {
		return domain.Account{}, false, fmt.Errorf("grant %s credits to %s: %w", domain.FormatCredits(amount), userID, err)
	}
	a, err := s.Store.GetAccount(ctx, userID)
	if err != nil {
		return domain.Account{}, false, err
	}
	return a, applied, nil
}

// CreatedKey is a new key, shown once.
type CreatedKey struct {
	UserID string `json:"user_id"`
	APIKey string `json:"api_key"`
	Prefix string `json:"prefix"`
}

// CreateKey mints another API key for an existing account, with every
// scope and no daily limit: the admin command's keys are the owner's.
func (s *Service) CreateKey(ctx context.Context, userID string) (CreatedKey, error) {
	if _, err := s.Store.GetAccount(ctx, userID); err != nil {
		return CreatedKey{}, fmt.Errorf("create key: %w", err)
	}
	k, plain, err := mintKey(ctx, s.Store, userID, NewKey{Name: DefaultKeyName, Scopes: domain.AllScopes}, nil, s.now())
	if err != nil {
		return CreatedKey{}, err
	}
	return CreatedKey{UserID: userID, APIKey: plain, Prefix: k.Prefix}, nil
}

// RevokeKey revokes the key with this prefix, whichever account holds it;
// it fails at once everywhere. A key revoked before keeps its first time.
func (s *Service) RevokeKey(ctx context.Context, prefix string) (time.Time, error) {
	if err := checkPrefix(prefix); err != nil {
		return time.Time{}, err
	}
	at, err := s.Store.RevokeAPIKey(ctx, prefix, s.now())
	if err != nil {
		return time.Time{}, fmt.Errorf("revoke key: %w", err)
	}
	return at, nil
}

// AccountView is what `accounts show` prints.
type AccountView struct {
	UserID    string `json:"user_id"`
	Plan      string `json:"plan"`
	RateLimit int    `json:"rate_limit_per_minute"`
	Balance   string `json:"balance"`
	Held      string `json:"held"`
	Granted   string `json:"granted"`
	Captured  string `json:"captured"`
	// OutputRetentionDays is how long its outputs are kept.
	OutputRetentionDays int `json:"output_retention_days"`
	// OpenHolds counts the holds open (accounts show only).
	OpenHolds *int      `json:"open_holds,omitempty"`
	Keys      []keyView `json:"keys"`
	CreatedAt time.Time `json:"created_at"`
}

// KeyView shows a key without its secret.
type keyView struct {
	Prefix           string         `json:"prefix"`
	Name             string         `json:"name"`
	Scopes           []domain.Scope `json:"scopes"`
	DailyCreditLimit *string        `json:"daily_credit_limit,omitempty"`
	CreatedBy        string         `json:"created_by,omitempty"`
	CreatedAt        time.Time      `json:"created_at"`
	LastUsedAt       *time.Time     `json:"last_used_at,omitempty"`
	RevokedAt        *time.Time     `json:"revoked_at,omitempty"`
}

// Show reads an account with its keys.
func (s *Service) Show(ctx context.Context, userID string) (AccountView, error) {
	a, err := s.Store.GetAccount(ctx, userID)
	if err != nil {
		return AccountView{}, err
	}
	keys, err := s.Store.ListAPIKeys(ctx, userID)
	if err != nil {
		return AccountView{}, err
	}
	holds, err := s.Store.AccountHolds(ctx, userID)
	if err != nil {
		return AccountView{}, err
	}
	v := view(a)
	open := len(holds)
	v.OpenHolds = &open
	v.Keys = []keyView{}
	for _, k := range keys {
		kv := keyView{Prefix: k.Prefix, Name: k.Name, Scopes: k.Scopes, CreatedBy: k.CreatedBy(), CreatedAt: k.CreatedAt}
		if k.DailyCreditLimit.IsPositive() {
			limit := domain.FormatCredits(k.DailyCreditLimit)
			kv.DailyCreditLimit = &limit
		}
		if !k.LastUsedAt.IsZero() {
			at := k.LastUsedAt
			kv.LastUsedAt = &at
		}
		if k.Revoked() {
			at := k.RevokedAt
			kv.RevokedAt = &at
		}
		v.Keys = append(v.Keys, kv)
	}
	return v, nil
}

// View renders an account's totals.
func view(a domain.Account) AccountView {
	return AccountView{
		UserID: a.UserID, Plan: string(a.Plan), RateLimit: a.RateLimit(),
		Balance: domain.FormatCredits(a.Balance), Held: domain.FormatCredits(a.Held),
		Granted: domain.FormatCredits(a.Granted), Captured: domain.FormatCredits(a.Captured),
		OutputRetentionDays: a.RetentionDays(), CreatedAt: a.CreatedAt,
	}
}

// SetRetention sets how long the account's outputs are kept, one of
// domain.RetentionChoices: outputs completed from now on expire after it
// (those before keep the expiry they were given).
func (s *Service) SetRetention(ctx context.Context, userID string, days int) (AccountView, error) {
	if err := domain.CheckRetentionDays(days); err != nil {
		return AccountView{}, err
	}
	if err := s.Store.SetOutputRetention(ctx, userID, days); err != nil {
		return AccountView{}, fmt.Errorf("set the retention of %s: %w", userID, err)
	}
	a, err := s.Store.GetAccount(ctx, userID)
	if err != nil {
		return AccountView{}, err
	}
	return view(a), nil
}

// WebhookSecret shows the account's webhook signing secret, making one if
// it has none yet.
func (s *Service) WebhookSecret(ctx context.Context, userID string) (string, error) {
	secret, err := s.Store.EnsureWebhookSecret(ctx, userID, webhook.NewSecret())
	if err != nil {
		return "", fmt.Errorf("webhook secret of %s: %w", userID, err)
	}
	return secret, nil
}

// RotateWebhookSecret replaces the account's webhook signing secret; the
// webhooks sent from now on are signed with the new one.
func (s *Service) RotateWebhookSecret(ctx context.Context, userID string) (string, error) {
	return (&WebhookSecretRotator{Store: s.Store}).Rotate(ctx, userID)
}

// SecretSetter replaces an account's webhook signing secret.
type secretSetter interface {
	SetWebhookSecret(ctx context.Context, userID, secret string) error
}

// WebhookSecretRotator is POST /api/account/webhook-secret/rotate, and the
// admin command's `webhooks secret --rotate`.
type WebhookSecretRotator struct {
	Store secretSetter
}

// Rotate replaces the account's webhook signing secret with a new one and
// returns it; the webhooks sent from now on are signed with it.
func (r *WebhookSecretRotator) Rotate(ctx context.Context, userID string) (string, error) {
	secret := webhook.NewSecret()
	if err := r.Store.SetWebhookSecret(ctx, userID, secret); err != nil {
		return "", fmt.Errorf("rotate webhook secret of %s: %w", userID, err)
	}
	return secret, nil
}
