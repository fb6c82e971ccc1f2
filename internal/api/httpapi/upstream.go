package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/generation"
)

// UpstreamWebhookRoute is POST /api/upstream/webhook?generation=<uuid>,
// which the provider calls when a job ends. It needs no API key: the
// signature of the upstream the generation runs on proves the call
// (Replicate's Standard Webhooks secret, fal's ED25519 keys), and a call
// unsigned, tampered with or stale is refused.
//
// It answers 204 once a final job's report is queued for the poller (which
// copies the outputs; nothing is downloaded here, so the answer comes well
// within API Gateway's 29 s), 4xx for calls to refuse, 5xx for the
// provider to retry (the poll chain is there too).
func UpstreamWebhookRoute(cb *generation.Callbacks, logger *slog.Logger) Handler {
	return func(ctx context.Context, req Request) (Response, error) {
		log := domain.Logger(logger).With("request_id", requestID(req), "route", req.RouteKey)
		body, err := jsonBody(req)
		if err != nil {
			return errorResponse(ctx, log, req, err), nil
		}
		id := req.QueryStringParameters["generation"]
		if _, err := uuid.Parse(id); err != nil || len(id) != 36 {
			return errorResponse(ctx, log, req, &Error{Status: http.StatusBadRequest, Code: "invalid_request", Message: "generation must be a generation's UUID"}), nil
		}
		headers := http.Header{}
		for k, v := range req.Headers {
			headers.Set(k, v)
		}
		err = cb.Callback(ctx, strings.ToLower(id), headers, body)
		switch {
		case errors.Is(err, generation.ErrBadCallback):
			return errorResponse(ctx, log, req, &Error{Status: http.StatusUnauthorized, Code: "unauthorized", Message: "the webhook signature is missing, wrong or stale"}), nil
		case errors.Is(err, generation.ErrNotItsJob):
			return errorResponse(ctx, log, req, &Error{Status: http.StatusBadRequest, Code: "invalid_request", Message: "the job is not this generation's"}), nil
		case errors.Is(err, domain.ErrInvalid):
			return errorResponse(ctx, log, req, &Error{Status: http.StatusBadRequest, Code: "invalid_request", Message: "the body is not a job report of the protocol"}), nil
		case err != nil:
			return errorResponse(ctx, log, req, err), nil
		}
		return Response{StatusCode: http.StatusNoContent, Headers: map[string]string{}}, nil
	}
}
