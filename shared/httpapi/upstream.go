package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/mediagen-dev/mediagen/shared/defaults"
	"github.com/mediagen-dev/mediagen/shared/domain"
	"github.com/mediagen-dev/mediagen/shared/generation"
	"github.com/mediagen-dev/mediagen/shared/longstory"
	"github.com/mediagen-dev/mediagen/shared/upstream"
	"github.com/mediagen-dev/mediagen/shared/webhook"
)

// UpstreamWebhook is POST /api/upstream/webhook, which the provider calls
// when a job ends. It needs no API key: the provider's signature (Standard
// Webhooks, with the secret the provider gave) proves the call, and a
// call unsigned, tampered with or older than webhook.Tolerance is refused.
type UpstreamWebhook struct {
	Service *generation.Service
	// Secret is the provider's webhook signing secret (whsec_...).
	Secret string
	Now    func() time.Time
	Log    *slog.Logger
}

// Handle answers the provider: 204 once the generation is settled, 4xx
// for calls to refuse, 5xx for the provider to retry (the poller is there
// too).
func (u *UpstreamWebhook) Handle() Handler {
	return func(ctx context.Context, req Request) (Response, error) {
		log := defaults.Log(u.Log).With("request_id", requestID(req), "route", req.RouteKey)
		body, err := jsonBody(req)
		if err != nil {
			return errorResponse(ctx, log, req, err), nil
		}
		headers := http.Header{}
		for k, v := range req.Headers {
			headers.Set(k, v)
		}
		if u.Secret == "" {
			log.ErrorContext(ctx, "upstream webhook called but no secret is configured")
			return errorResponse(ctx, log, req, &Error{Status: http.StatusUnauthorized, Code: "unauthorized", Message: "webhooks are not accepted"}), nil
		}
		if err := webhook.Verify(u.Secret, headers, body, defaults.Now(u.Now)); err != nil {
			log.WarnContext(ctx, "upstream webhook refused", "reason", err.Error())
			return errorResponse(ctx, log, req, &Error{Status: http.StatusUnauthorized, Code: "unauthorized", Message: "the webhook signature is missing, wrong or stale"}), nil
		}
		id := req.QueryStringParameters["generation"]
		if _, err := uuid.Parse(id); err != nil || len(id) != 36 {
			return errorResponse(ctx, log, req, &Error{Status: http.StatusBadRequest, Code: "invalid_request", Message: "generation must be a generation's UUID"}), nil
		}
		p, err := upstream.DecodePrediction(body)
		if err != nil {
			return errorResponse(ctx, log, req, &Error{Status: http.StatusBadRequest, Code: "invalid_request", Message: "the body is not a prediction"}), nil
		}
		if !p.Final() {
			return Response{StatusCode: http.StatusNoContent, Headers: map[string]string{}}, nil
		}
		err = u.Service.Complete(ctx, strings.ToLower(id), p)
		switch {
		case errors.Is(err, generation.ErrNotItsJob):
			return errorResponse(ctx, log, req, &Error{Status: http.StatusBadRequest, Code: "invalid_request", Message: "the prediction is not this generation's"}), nil
		case err != nil:
			return errorResponse(ctx, log, req, err), nil
		}
		return Response{StatusCode: http.StatusNoContent, Headers: map[string]string{}}, nil
	}
}

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
		view := longstory.ViewOf(v)
		view.Webhook = nil // the receiver is the webhook; its attempts are on the record
		return webhook.Record{UserID: v.UserID, Webhook: v.Webhook, Attempts: v.WebhookAttempts, Data: view}, nil
	}
	g, err := w.Store.GetGeneration(ctx, id)
	if err != nil {
		return webhook.Record{}, err
	}
	view := StatusAt(g, defaults.Now(w.Now))
	view.Webhook = nil
	return webhook.Record{UserID: g.UserID, Webhook: g.Webhook, Attempts: g.WebhookAttempts, Data: view}, nil
}
