package apiview

import (
	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// Webhook shows a record's webhook and its delivery attempts.
type Webhook struct {
	URL      string                  `json:"url"`
	Events   []string                `json:"events"`
	Attempts []domain.WebhookAttempt `json:"attempts"`
}

// webhookOf renders a record's webhook; nil when none was asked for.
func webhookOf(w domain.Webhook, attempts []domain.WebhookAttempt, all []string) *Webhook {
	if w.URL == "" {
		return nil
	}
	events := w.Events
	if len(events) == 0 {
		events = all
	}
	shown := make([]domain.WebhookAttempt, len(attempts))
	for i, a := range attempts {
		a.Error = domain.CurrentWebhookErrorClass(a.Error)
		shown[i] = a
	}
	return &Webhook{URL: w.URL, Events: events, Attempts: shown}
}
