package httpapi

import (
	"context"
	"time"

	"github.com/mediagen-dev/mediagen/internal/api/apiview"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/webhook"
)

// WebhookRecords loads records for the webhook deliverer and renders their
// status views, the body of each webhook.
type WebhookRecords struct {
	Store interface {
		GetGeneration(ctx context.Context, uuid string) (domain.Generation, error)
		GetLongVideo(ctx context.Context, id string) (domain.LongVideo, error)
	}
	Now func() time.Time
}

// WebhookRecord implements webhook.Records.
func (w WebhookRecords) WebhookRecord(ctx context.Context, kind domain.WorkKind, id string) (webhook.Record, error) {
	if kind == domain.WorkLongVideo {
		v, err := w.Store.GetLongVideo(ctx, id)
		if err != nil {
			return webhook.Record{}, err
		}
		view := longVideoStatusAt(v, domain.Now(w.Now))
		view.Webhook = nil // the receiver is the webhook; its attempts are on the record
		return webhook.Record{UserID: v.UserID, Webhook: v.Webhook, Attempts: v.WebhookAttempts, Data: view}, nil
	}
	g, err := w.Store.GetGeneration(ctx, id)
	if err != nil {
		return webhook.Record{}, err
	}
	view := apiview.GenerationStatusAt(g, domain.Now(w.Now))
	view.Webhook = nil
	return webhook.Record{UserID: g.UserID, Webhook: g.Webhook, Attempts: g.WebhookAttempts, Data: view}, nil
}
