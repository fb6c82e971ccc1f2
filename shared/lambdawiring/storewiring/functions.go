package storewiring

import (
	"context"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"

	"github.com/mediagen-dev/mediagen/shared/accounts"
	"github.com/mediagen-dev/mediagen/shared/catalog"
	"github.com/mediagen-dev/mediagen/shared/generation"
	"github.com/mediagen-dev/mediagen/shared/httpapi"
	"github.com/mediagen-dev/mediagen/shared/lambdahttp"
	"github.com/mediagen-dev/mediagen/shared/longstory"
	"github.com/mediagen-dev/mediagen/shared/sweeper"
)

// The constructors of the functions that use no AWS service but DynamoDB.
// lambdawiring.Functions() lists them with the others.

// Status is GET /api/generations/status/{id}.
func Status(ctx context.Context, log *slog.Logger) (any, error) {
	return readRoute(ctx, log, httpapi.GenerationStatusRoute)
}

// GenerationsList is GET /api/generations.
func GenerationsList(ctx context.Context, log *slog.Logger) (any, error) {
	return readRoute(ctx, log, httpapi.GenerationsListRoute)
}

// readRoute wires a route that only reads generations: the store and the
// routes (for a waiting generation's place in line); no upstream token,
// queue or bucket.
func readRoute(ctx context.Context, log *slog.Logger, route func(*generation.Reader, *httpapi.Gate) httpapi.Handler) (any, error) {
	cfg, err := AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	ups, err := RoutesOnly()
	if err != nil {
		return nil, err
	}
	st := Store(cfg)
	return lambdahttp.Route(route(generation.NewReader(st, st, ups), Gate(cfg, log))), nil
}

// GenerationEstimate is POST /api/generations/estimate: the catalog and
// the prices, no upstream, queue or bucket.
func GenerationEstimate(ctx context.Context, log *slog.Logger) (any, error) {
	cfg, prices, err := ConfigAndPrices(ctx)
	if err != nil {
		return nil, err
	}
	return lambdahttp.Route(httpapi.GenerationEstimateRoute(generation.NewEstimator(prices, catalog.Options{}), PostGate(cfg, log))), nil
}

// Account is GET /api/account.
func Account(ctx context.Context, log *slog.Logger) (any, error) {
	cfg, err := AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	return lambdahttp.Route((&httpapi.Account{Secrets: Store(cfg), Gate: Gate(cfg, log)}).Get()), nil
}

// AccountTransactions is GET /api/account/transactions.
func AccountTransactions(ctx context.Context, log *slog.Logger) (any, error) {
	cfg, err := AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	return lambdahttp.Route(httpapi.TransactionsRoute(Gate(cfg, log), Store(cfg))), nil
}

// AccountUsage is GET /api/account/usage.
func AccountUsage(ctx context.Context, log *slog.Logger) (any, error) {
	cfg, err := AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	return lambdahttp.Route(httpapi.UsageRoute(Gate(cfg, log), Store(cfg))), nil
}

// AccountKeyCreate is POST /api/account/keys. Its gate keeps no
// idempotency record: the answer carries the key.
func AccountKeyCreate(ctx context.Context, log *slog.Logger) (any, error) {
	cfg, err := AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	return lambdahttp.Route(httpapi.KeyCreateRoute(&accounts.KeyCreator{Store: Store(cfg)}, Gate(cfg, log))), nil
}

// AccountKeysList is GET /api/account/keys.
func AccountKeysList(ctx context.Context, log *slog.Logger) (any, error) {
	cfg, err := AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	st := Store(cfg)
	return lambdahttp.Route(httpapi.KeysListRoute(&accounts.KeyLister{Keys: st, Spend: st}, Gate(cfg, log))), nil
}

// AccountKeyRevoke is DELETE /api/account/keys/{prefix}.
func AccountKeyRevoke(ctx context.Context, log *slog.Logger) (any, error) {
	cfg, err := AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	return lambdahttp.Route(httpapi.KeyRevokeRoute(&accounts.KeyRevoker{Store: Store(cfg)}, Gate(cfg, log))), nil
}

// AccountWebhookSecretRotate is POST /api/account/webhook-secret/rotate.
// Its gate keeps no idempotency record: the answer carries the secret.
func AccountWebhookSecretRotate(ctx context.Context, log *slog.Logger) (any, error) {
	cfg, err := AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	return lambdahttp.Route(httpapi.WebhookSecretRotateRoute(&accounts.WebhookSecretRotator{Store: Store(cfg)}, Gate(cfg, log))), nil
}

// OpenAPI is GET /api/openapi.json.
func OpenAPI(context.Context, *slog.Logger) (any, error) {
	return lambdahttp.Route(httpapi.OpenAPI()), nil
}

// Models is GET /api/models: the public catalog needs no AWS configuration.
func Models(ctx context.Context, log *slog.Logger) (any, error) {
	prices, err := Prices()
	if err != nil {
		return nil, err
	}
	return lambdahttp.Route((&httpapi.Models{Prices: prices, Log: log}).List()), nil
}

// Authorizer is the HTTP API's Lambda authorizer.
func Authorizer(ctx context.Context, log *slog.Logger) (any, error) {
	cfg, err := AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	return lambdahttp.Authorizer(Gate(cfg, log).Authorize), nil
}

// Sweeper settles holds left open, on a schedule.
func Sweeper(ctx context.Context, log *slog.Logger) (any, error) {
	cfg, err := AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	st := Store(cfg)
	sw := &sweeper.Sweeper{Store: st, Slots: st, Log: log}
	return func(ctx context.Context, _ events.EventBridgeEvent) (sweeper.SweepReport, error) {
		return sw.Sweep(ctx)
	}, nil
}

// LongStoryEstimate is POST /api/long-story/videos/estimate.
func LongStoryEstimate(ctx context.Context, log *slog.Logger) (any, error) {
	cfg, prices, err := ConfigAndPrices(ctx)
	if err != nil {
		return nil, err
	}
	return lambdahttp.Route(httpapi.LongVideoEstimateRoute(prices, PostGate(cfg, log))), nil
}

// LongStoryStatus is GET /api/long-story/videos/{videoId}.
func LongStoryStatus(ctx context.Context, log *slog.Logger) (any, error) {
	return longVideoReadRoute(ctx, log, httpapi.LongVideoStatusRoute)
}

// LongStoryList is GET /api/long-story/videos.
func LongStoryList(ctx context.Context, log *slog.Logger) (any, error) {
	return longVideoReadRoute(ctx, log, httpapi.LongVideosListRoute)
}

// longVideoReadRoute wires a route that only reads videos: the store.
func longVideoReadRoute(ctx context.Context, log *slog.Logger, route func(*longstory.Reader, *httpapi.Gate) httpapi.Handler) (any, error) {
	cfg, err := AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	return lambdahttp.Route(route(longstory.NewReader(Store(cfg)), Gate(cfg, log))), nil
}
