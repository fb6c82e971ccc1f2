package httpapi

import (
	"context"
	"net/http"

	"github.com/mediagen-dev/mediagen/internal/api/apiview"
	"github.com/mediagen-dev/mediagen/internal/core/accounts"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/webhook"
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

// Get answers the account view. The webhook signing secret is shown only
// to an API key with the admin scope, the scope that manages it: whoever
// holds it can sign events the account's receiver trusts. A read key and an
// identity-provider token get null.
func (r *Account) Get() Handler {
	return r.Gate.Authed(readAccess, func(ctx context.Context, req Request, a domain.Account) (Response, error) {
		var secret *string
		if managesSecrets(ctx) {
			s := a.WebhookSecret
			if s == "" {
				var err error
				if s, err = r.Secrets.EnsureWebhookSecret(ctx, a.UserID, webhook.NewSecret()); err != nil {
					return Response{}, err
				}
			}
			secret = &s
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

// managesSecrets reports whether the request's caller is an API key with
// the admin scope.
func managesSecrets(ctx context.Context) bool {
	c, ok := domain.CallerFrom(ctx)
	return ok && c.KeyPrefix != "" && c.Has(domain.ScopeAdmin)
}

// secretAccess is the webhook secret's route: an API key with the admin
// scope; no token (tokens do not see the secret either).
var secretAccess = Access{Scope: domain.ScopeAdmin}

// WebhookSecretRotateRoute is POST /api/account/webhook-secret/rotate: a new
// signing secret replaces the account's, and the answer shows it, once.
// Webhooks sent from then on are signed with it. It keeps no
// Idempotency-Key answer (the answer carries the secret): a retry rotates
// again, and the last answer's secret is the one in force.
func WebhookSecretRotateRoute(r *accounts.WebhookSecretRotator, gate *Gate) Handler {
	return gate.withoutIdempotency().AuthedUser(secretAccess, func(ctx context.Context, req Request, userID string) (Response, error) {
		secret, err := r.Rotate(ctx, userID)
		if err != nil {
			return Response{}, err
		}
		return jsonResponse(http.StatusOK, apiview.RotatedWebhookSecret{SigningSecret: secret, RotatedAt: apiview.Timestamp(gate.now())}), nil
	})
}
