package httpapi

import (
	"context"
	"net/http"

	"github.com/mediagen-dev/mediagen/shared/apiview"
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

// Get answers the account view.
func (r *Account) Get() Handler {
	return r.Gate.Authed(readAccess, func(ctx context.Context, req Request, a domain.Account) (Response, error) {
		secret := a.WebhookSecret
		if secret == "" {
			var err error
			if secret, err = r.Secrets.EnsureWebhookSecret(ctx, a.UserID, webhook.NewSecret()); err != nil {
				return Response{}, err
			}
		}
		month := domain.UsageMonth(r.Gate.now())
		u := a.Usage[month]
		return jsonResponse(http.StatusOK, apiview.Account{
			UserID: a.UserID, Plan: string(a.Plan), Balance: domain.FormatCredits(a.Balance), Held: domain.FormatCredits(a.Held),
			RateLimit: apiview.RateLimit{RequestsPerMinute: a.RateLimit()},
			Usage:     apiview.Usage{Month: month, Credits: domain.FormatCredits(u.Credits), Jobs: u.Jobs},
			Webhooks:  apiview.AccountWebhooks{SigningSecret: secret},
			Outputs:   apiview.AccountOutputs{RetentionDays: a.RetentionDays()},
		}), nil
	})
}
