package store

import (
	"context"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// Webhooks keeps what webhook delivery needs: each account's signing secret
// and, on each record, the delivery attempts.
type Webhooks interface {
	// EnsureWebhookSecret sets the account's signing secret to candidate
	// unless it has one, and returns the secret in force.
	EnsureWebhookSecret(ctx context.Context, userID, candidate string) (string, error)
	// SetWebhookSecret replaces the account's signing secret.
	SetWebhookSecret(ctx context.Context, userID, secret string) error
	// AddWebhookAttempt appends an attempt to a generation's or long
	// video's record, whatever its status.
	AddWebhookAttempt(ctx context.Context, kind domain.WorkKind, id string, a domain.WebhookAttempt) error
}
