package httpapi

import (
	"context"
	"net/http"

	"github.com/mediagen-dev/mediagen/shared/domain"
	"github.com/mediagen-dev/mediagen/shared/webhook"
)

// SecretStore keeps the accounts' webhook signing secrets.
type SecretStore interface {
	EnsureWebhookSecret(ctx context.Context, userID, candidate string) (string, error)
}

// Account is GET /api/account.
type Account struct {
	Secrets SecretStore
	Gate    *Gate
}

// AccountView is the caller's account.
type AccountView struct {
	UserID    string         `json:"user_id"`
	Plan      string         `json:"plan"`
	Balance   string         `json:"balance"`
	Held      string         `json:"held"`
	RateLimit RateLimitView  `json:"rate_limit"`
	Usage     UsageView      `json:"usage"`
	Webhooks  AccountWebhook `json:"webhooks"`
}

// RateLimitView is the account's request limit.
type RateLimitView struct {
	RequestsPerMinute int `json:"requests_per_minute"`
}

// UsageView is what the account spent this calendar month (UTC).
type UsageView struct {
	Month   string `json:"month"`
	Credits string `json:"credits"`
	Jobs    int    `json:"jobs"`
}

// AccountWebhook carries the secret that signs the account's webhooks.
type AccountWebhook struct {
	SigningSecret string `json:"signing_secret"`
}

// Get answers the account view.
func (r *Account) Get() Handler {
	return r.Gate.Authed(true, func(ctx context.Context, req Request, a domain.Account) (Response, error) {
		secret := a.WebhookSecret
		if secret == "" {
			var err error
			if secret, err = r.Secrets.EnsureWebhookSecret(ctx, a.UserID, webhook.NewSecret()); err != nil {
				return Response{}, err
			}
		}
		month := domain.UsageMonth(r.Gate.now())
		u := a.Usage[month]
		return jsonResponse(http.StatusOK, AccountView{
			UserID: a.UserID, Plan: string(a.Plan), Balance: domain.FormatCredits(a.Balance), Held: domain.FormatCredits(a.Held),
			RateLimit: RateLimitView{RequestsPerMinute: a.RateLimit()},
			Usage:     UsageView{Month: month, Credits: domain.FormatCredits(u.Credits), Jobs: u.Jobs},
			Webhooks:  AccountWebhook{SigningSecret: secret},
		}), nil
	})
}
