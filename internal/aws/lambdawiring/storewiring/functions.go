package storewiring

import (
	"context"
	"log/slog"

	"github.com/mediagen-dev/mediagen/internal/api/httpapi"
	"github.com/mediagen-dev/mediagen/internal/api/lambdahttp"
	"github.com/mediagen-dev/mediagen/internal/api/routes"
	"github.com/mediagen-dev/mediagen/internal/core/accounts"
	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/generation"
	"github.com/mediagen-dev/mediagen/internal/core/longform"
)

// The constructors of the functions that use no AWS service but DynamoDB.
// lambdawiring.Functions() lists them with the others.

// Route is the Lambda handler of route (routes.Generate, ...: a function
// names its own route, not routes.Table, so that its binary links no other
// route's handler), built on p.
func Route(r routes.Route, p routes.Ports) (any, error) {
	h, err := r.Build(p)
	if err != nil {
		return nil, err
	}
	return lambdahttp.Route(h), nil
}

// Status is GET /api/generations/status/{id}.
func Status(ctx context.Context, log *slog.Logger) (any, error) {
	return readRoute(ctx, log, routes.Status())
}

// GenerationsList is GET /api/generations.
func GenerationsList(ctx context.Context, log *slog.Logger) (any, error) {
	return readRoute(ctx, log, routes.GenerationsList())
}

// readRoute wires a route that only reads generations: the store and the
// routes (for a waiting generation's place in line); no upstream token,
// queue or bucket.
func readRoute(ctx context.Context, log *slog.Logger, route routes.Route) (any, error) {
	cfg, err := AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	ups, err := routesOnly()
	if err != nil {
		return nil, err
	}
	st := Store(cfg)
	return Route(route, routes.Ports{GenerationReader: generation.NewReader(st, st, ups), Gate: Gate(cfg, log)})
}

// GenerationEstimate is POST /api/generations/estimate: the catalog and
// the prices, no upstream, queue or bucket.
func GenerationEstimate(ctx context.Context, log *slog.Logger) (any, error) {
	cfg, prices, err := ConfigAndPrices(ctx)
	if err != nil {
		return nil, err
	}
	return Route(routes.GenerationEstimate(), routes.Ports{GenerationEstimate: generation.NewEstimator(prices, catalog.Options{}), Gate: PostGate(cfg, log)})
}

// Account is GET /api/account.
func Account(ctx context.Context, log *slog.Logger) (any, error) {
	cfg, err := AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	return Route(routes.Account(), routes.Ports{Secrets: Store(cfg), Gate: Gate(cfg, log)})
}

// AccountTransactions is GET /api/account/transactions.
func AccountTransactions(ctx context.Context, log *slog.Logger) (any, error) {
	cfg, err := AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	return Route(routes.AccountTransactions(), routes.Ports{Journal: Store(cfg), Gate: Gate(cfg, log)})
}

// AccountUsage is GET /api/account/usage.
func AccountUsage(ctx context.Context, log *slog.Logger) (any, error) {
	cfg, err := AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	return Route(routes.AccountUsage(), routes.Ports{Usage: Store(cfg), Gate: Gate(cfg, log)})
}

// AccountKeyCreate is POST /api/account/keys. Its gate keeps no
// idempotency record: the answer carries the key.
func AccountKeyCreate(ctx context.Context, log *slog.Logger) (any, error) {
	cfg, err := AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	return Route(routes.AccountKeyCreate(), routes.Ports{KeyCreator: &accounts.KeyCreator{Store: Store(cfg)}, Gate: Gate(cfg, log)})
}

// AccountKeysList is GET /api/account/keys.
func AccountKeysList(ctx context.Context, log *slog.Logger) (any, error) {
	cfg, err := AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	st := Store(cfg)
	return Route(routes.AccountKeysList(), routes.Ports{KeyLister: &accounts.KeyLister{Keys: st, Spend: st}, Gate: Gate(cfg, log)})
}

// AccountKeyRevoke is DELETE /api/account/keys/{prefix}.
func AccountKeyRevoke(ctx context.Context, log *slog.Logger) (any, error) {
	cfg, err := AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	return Route(routes.AccountKeyRevoke(), routes.Ports{KeyRevoker: &accounts.KeyRevoker{Store: Store(cfg)}, Gate: Gate(cfg, log)})
}

// AccountWebhookSecretRotate is POST /api/account/webhook-secret/rotate.
// Its gate keeps no idempotency record: the answer carries the secret.
func AccountWebhookSecretRotate(ctx context.Context, log *slog.Logger) (any, error) {
	cfg, err := AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	return Route(routes.AccountWebhookSecretRotate(), routes.Ports{SecretRotator: &accounts.WebhookSecretRotator{Store: Store(cfg)}, Gate: Gate(cfg, log)})
}

// OpenAPI is GET /api/openapi.json.
func OpenAPI(context.Context, *slog.Logger) (any, error) {
	return Route(routes.OpenAPI(), routes.Ports{})
}

// Models is GET /api/models: the public catalog needs no AWS configuration.
func Models(ctx context.Context, log *slog.Logger) (any, error) {
	prices, err := Prices()
	if err != nil {
		return nil, err
	}
	return Route(routes.Models(), routes.Ports{Prices: prices, Log: log})
}

// Authorizer is the HTTP API's Lambda authorizer.
func Authorizer(ctx context.Context, log *slog.Logger) (any, error) {
	cfg, err := AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	return lambdahttp.Authorizer(Gate(cfg, log).Authorize), nil
}

// LongStoryEstimate is POST /api/long-story/videos/estimate.
func LongStoryEstimate(ctx context.Context, log *slog.Logger) (any, error) {
	cfg, prices, err := ConfigAndPrices(ctx)
	if err != nil {
		return nil, err
	}
	return Route(routes.LongStoryEstimate(), routes.Ports{Prices: prices, Gate: PostGate(cfg, log)})
}

// LongStoryStatus is GET /api/long-story/videos/{videoId}.
func LongStoryStatus(ctx context.Context, log *slog.Logger) (any, error) {
	return longVideoReadRoute(ctx, log, routes.LongStoryStatus())
}

// LongStoryList is GET /api/long-story/videos.
func LongStoryList(ctx context.Context, log *slog.Logger) (any, error) {
	return longVideoReadRoute(ctx, log, routes.LongStoryList())
}

// longVideoReadRoute wires a route that only reads videos: the store.
func longVideoReadRoute(ctx context.Context, log *slog.Logger, route routes.Route) (any, error) {
	cfg, err := AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	return Route(route, routes.Ports{VideoReader: longform.NewReader(Store(cfg)), Gate: Gate(cfg, log)})
}

// EventStream is the stream function behind its function URL
// (InvokeMode RESPONSE_STREAM): GET /api/generations/{id}/events and GET
// /api/long-story/videos/{videoId}/events (routes.StreamTable). It reads
// the records only, and checks the API key itself with the authorizer's
// code (a function URL runs no Lambda authorizer).
func EventStream(ctx context.Context, log *slog.Logger) (any, error) {
	cfg, err := AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	ups, err := routesOnly()
	if err != nil {
		return nil, err
	}
	st := Store(cfg)
	p := routes.Ports{GenerationReader: generation.NewReader(st, st, ups), VideoReader: longform.NewReader(st), Gate: Gate(cfg, log),
		Streams: httpapi.Streams{Leases: st}}
	var streams []lambdahttp.StreamRoute
	for _, r := range routes.StreamTable() {
		h, err := r.Build(p)
		if err != nil {
			return nil, err
		}
		streams = append(streams, lambdahttp.StreamRoute{Method: r.Method, Path: r.Path, Handler: h})
	}
	return lambdahttp.StreamFunction(streams), nil
}
