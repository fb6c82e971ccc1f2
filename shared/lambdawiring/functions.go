package lambdawiring

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sort"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/mediagen-dev/mediagen/shared/apiview"
	"github.com/mediagen-dev/mediagen/shared/catalog"
	"github.com/mediagen-dev/mediagen/shared/generation"
	"github.com/mediagen-dev/mediagen/shared/httpapi"
	"github.com/mediagen-dev/mediagen/shared/lambdahttp"
	"github.com/mediagen-dev/mediagen/shared/longstory"
	"github.com/mediagen-dev/mediagen/shared/pricing"
	"github.com/mediagen-dev/mediagen/shared/routing"
	"github.com/mediagen-dev/mediagen/shared/sqsbatch"
	"github.com/mediagen-dev/mediagen/shared/sweeper"
	"github.com/mediagen-dev/mediagen/shared/webhook"
	"github.com/mediagen-dev/mediagen/shared/workflow"
)

// Constructor builds one function's handler. Each builds only what its
// handler uses.
type Constructor func(ctx context.Context, log *slog.Logger) (any, error)

// Each function under functions/ has a named constructor its main.go calls
// directly, so a binary links only its own handler's code. A new function is
// one constructor here, one line in Functions, and
// `lambda.Start(lambdawiring.Build("<folder>", lambdawiring.<Constructor>))` in its main.go.

// Generate is POST /api/generations/generate.
func Generate(ctx context.Context, log *slog.Logger) (any, error) {
	p, err := generationWiring(ctx, log, withGenerationPolls, withPrices)
	if err != nil {
		return nil, err
	}
	creator := generation.NewCreator(p.store, p.ups, p.queue, p.store, p.prices, p.settings)
	return lambdahttp.Route(httpapi.GenerateRoute(creator, PostGate(p.cfg, log))), nil
}

// Status is GET /api/generations/status/{id}.
func Status(ctx context.Context, log *slog.Logger) (any, error) {
	return readRoute(ctx, log, httpapi.GenerationStatusRoute)
}

// readRoute wires a route that only reads generations: the store and the
// routes (for a waiting generation's place in line); no upstream token,
// queue or bucket.
func readRoute(ctx context.Context, log *slog.Logger, route func(*generation.Reader, *httpapi.Gate) httpapi.Handler) (any, error) {
	cfg, err := AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	ups, err := routesOnly()
	if err != nil {
		return nil, err
	}
	st := Store(cfg)
	return lambdahttp.Route(route(generation.NewReader(st, st, ups), Gate(cfg, log))), nil
}

// Poller consumes the poll queue; a generation it finishes sends its
// webhook.
func Poller(ctx context.Context, log *slog.Logger) (any, error) {
	p, err := generationWiring(ctx, log, withGenerationPolls, withPrices, withWebhooks, withOutputCopier)
	if err != nil {
		return nil, err
	}
	// The same queue carries the long-form scenes' polls, which use the
	// generations' upstream clients and copier.
	scenes := longstory.ScenePoller(p.store, p.ups, p.store, p.queue, &workflow.TaskTokens{Client: sfn.NewFromConfig(p.cfg)},
		p.copier, stepSettings(log))
	poller := generation.NewPoller(p.store, p.ups, p.queue, p.store, p.copier, p.notifier, p.prices, scenes, p.settings)
	return sqsbatch.Handler(poller.HandleBatch), nil
}

// GenerationsList is GET /api/generations.
func GenerationsList(ctx context.Context, log *slog.Logger) (any, error) {
	return readRoute(ctx, log, httpapi.GenerationsListRoute)
}

// GenerationEstimate is POST /api/generations/estimate: the catalog and
// the prices, no upstream, queue or bucket.
func GenerationEstimate(ctx context.Context, log *slog.Logger) (any, error) {
	cfg, prices, err := configAndPrices(ctx)
	if err != nil {
		return nil, err
	}
	return lambdahttp.Route(httpapi.GenerationEstimateRoute(generation.NewEstimator(prices, catalog.Options{}), PostGate(cfg, log))), nil
}

// GenerationCancel is POST /api/generations/{id}/cancel.
func GenerationCancel(ctx context.Context, log *slog.Logger) (any, error) {
	p, err := generationWiring(ctx, log, withWebhooks)
	if err != nil {
		return nil, err
	}
	canceler := generation.NewCanceler(p.store, p.ups, p.store, p.notifier, p.settings)
	return lambdahttp.Route(httpapi.GenerationCancelRoute(canceler, PostGate(p.cfg, log))), nil
}

// Account is GET /api/account.
func Account(ctx context.Context, log *slog.Logger) (any, error) {
	cfg, err := AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	return lambdahttp.Route((&httpapi.Account{Secrets: Store(cfg), Gate: Gate(cfg, log)}).Get()), nil
}

// OpenAPI is GET /api/openapi.json.
func OpenAPI(context.Context, *slog.Logger) (any, error) {
	return lambdahttp.Route(httpapi.OpenAPI()), nil
}

// UpstreamWebhook is POST /api/upstream/webhook, the provider's callback:
// it completes a generation as the poller would.
func UpstreamWebhook(ctx context.Context, log *slog.Logger) (any, error) {
	// No copier and no notifier: the callback queues the job's report and
	// the poller does the rest.
	p, err := generationWiring(ctx, log, withGenerationPolls)
	if err != nil {
		return nil, err
	}
	return lambdahttp.Route(httpapi.UpstreamWebhookRoute(generation.NewCallbacks(p.store, p.ups, p.queue, p.settings), log)), nil
}

// Webhooks consumes the webhook queue: one delivery attempt per message.
func Webhooks(ctx context.Context, log *slog.Logger) (any, error) {
	cfg, err := AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	q, err := webhookQueue(cfg)
	if err != nil {
		return nil, err
	}
	st := Store(cfg)
	d := &webhook.Deliverer{Records: apiview.WebhookRecords{Store: st}, Store: st, Queue: q,
		Client: webhook.SafeClient(false), Log: log}
	return sqsbatch.Handler(d.HandleBatch), nil
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
	sw := &sweeper.Sweeper{Store: Store(cfg), Log: log}
	return func(ctx context.Context, _ events.EventBridgeEvent) (sweeper.SweepReport, error) {
		return sw.Sweep(ctx)
	}, nil
}

// The long-form routes and the workflow's task steps.
func LongStoryEstimate(ctx context.Context, log *slog.Logger) (any, error) {
	cfg, prices, err := configAndPrices(ctx)
	if err != nil {
		return nil, err
	}
	return lambdahttp.Route(httpapi.LongVideoEstimateRoute(prices, PostGate(cfg, log))), nil
}
func LongStoryCreate(ctx context.Context, log *slog.Logger) (any, error) {
	cfg, prices, err := configAndPrices(ctx)
	if err != nil {
		return nil, err
	}
	wf, err := longStoryWorkflow(cfg)
	if err != nil {
		return nil, err
	}
	creator := longstory.NewCreator(Store(cfg), wf, prices, longstory.Settings{Log: log})
	return lambdahttp.Route(httpapi.LongVideoCreateRoute(creator, PostGate(cfg, log))), nil
}
func LongStoryStatus(ctx context.Context, log *slog.Logger) (any, error) {
	return longVideoReadRoute(ctx, log, httpapi.LongVideoStatusRoute)
}
func LongStoryList(ctx context.Context, log *slog.Logger) (any, error) {
	return longVideoReadRoute(ctx, log, httpapi.LongVideosListRoute)
}

// LongStoryCancel is POST /api/long-story/videos/{videoId}/cancel: it
// stops the execution and the scenes' jobs, and sends the webhook.
func LongStoryCancel(ctx context.Context, log *slog.Logger) (any, error) {
	cfg, err := AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	wf, err := longStoryWorkflow(cfg)
	if err != nil {
		return nil, err
	}
	ups, err := Upstreams(ctx, cfg)
	if err != nil {
		return nil, err
	}
	notifier, err := Notifier(cfg)
	if err != nil {
		return nil, err
	}
	st := Store(cfg)
	canceler := longstory.NewCanceler(st, wf, ups, st, notifier, longstory.Settings{Log: log})
	return lambdahttp.Route(httpapi.LongVideoCancelRoute(canceler, PostGate(cfg, log))), nil
}

// Functions is the registry of the functions under functions/, by folder
// name, for tests, sample events and tools. It is a function, not a
// variable, so a Lambda binary that never calls it links none of the other
// functions' code.
func Functions() map[string]Constructor {
	return map[string]Constructor{
		"generate":            Generate,
		"status":              Status,
		"poller":              Poller,
		"authorizer":          Authorizer,
		"sweeper":             Sweeper,
		"long-story-estimate": LongStoryEstimate,
		"long-story-create":   LongStoryCreate,
		"long-story-status":   LongStoryStatus,
		"submit-scene":        SubmitScene,
		"narrate":             Narrate,
		"assemble":            Assemble,
		"models":              Models,
		"open-api":            OpenAPI,
		"generations-list":    GenerationsList,
		"generation-estimate": GenerationEstimate,
		"generation-cancel":   GenerationCancel,
		"long-story-list":     LongStoryList,
		"long-story-cancel":   LongStoryCancel,
		"account":             Account,
		"upstream-webhook":    UpstreamWebhook,
		"webhooks":            Webhooks,
		"finalize":            Finalize,
		"mark-failed":         MarkFailed,
	}
}

// Models is GET /api/models: the public catalog needs no AWS configuration.
func Models(ctx context.Context, log *slog.Logger) (any, error) {
	prices, err := Prices()
	if err != nil {
		return nil, err
	}
	return lambdahttp.Route((&httpapi.Models{Prices: prices, Log: log}).List()), nil
}

// Build is a function's main: it builds the handler with the function's
// logger, or ends the init with a logged error.
func Build(name string, c Constructor) any {
	return Must(c(context.Background(), Logger().With("function", name)))
}

// Handler builds the named function's handler.
func Handler(ctx context.Context, name string) (any, error) {
	build, ok := Functions()[name]
	if !ok {
		return nil, fmt.Errorf("no function %q", name)
	}
	return build(ctx, Logger().With("function", name))
}

// FunctionNames lists the registry, sorted.
func FunctionNames() []string {
	fs := Functions()
	names := make([]string, 0, len(fs))
	for n := range fs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// longVideoReadRoute wires a route that only reads videos: the store.
func longVideoReadRoute(ctx context.Context, log *slog.Logger, route func(*longstory.Reader, *httpapi.Gate) httpapi.Handler) (any, error) {
	cfg, err := AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	return lambdahttp.Route(route(longstory.NewReader(Store(cfg)), Gate(cfg, log))), nil
}

// exampleRouting writes a routing file that sends every variant to one
// Replicate upstream, for ReadsEnvironment.
func exampleRouting() (string, error) {
	raw, err := json.Marshal(routing.Single("example", routing.ProtocolReplicate, "https://example.invalid", []string{"example.invalid"}))
	if err != nil {
		return "", err
	}
	f, err := os.CreateTemp("", "routing-*.json")
	if err != nil {
		return "", err
	}
	defer f.Close()
	_, err = f.Write(raw)
	return f.Name(), err
}

// ReadsEnvironment builds the named function with a stand-in environment
// that answers every variable, and reports the variables it read. It swaps
// Getenv, so it is for tests and tools, one at a time.
func ReadsEnvironment(ctx context.Context, name string) ([]string, error) {
	read := map[string]bool{}
	saved := Getenv
	routingFile, err := exampleRouting()
	if err != nil {
		return nil, err
	}
	defer os.Remove(routingFile)
	Getenv = func(k string) string {
		read[k] = true
		switch k {
		case EnvPriceFile:
			return "" // the embedded price file
		case EnvRoutingFile:
			return routingFile
		case EnvUpstreamTokens:
			return `{"example":"token"}`
		}
		return "https://example.invalid/" + k
	}
	defer func() { Getenv = saved }()
	if _, err := Handler(ctx, name); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(read))
	for k := range read {
		names = append(names, k)
	}
	sort.Strings(names)
	return names, nil
}

// configAndPrices are what every route that prices a request starts from.
func configAndPrices(ctx context.Context) (aws.Config, *pricing.Table, error) {
	cfg, err := AWSConfig(ctx)
	if err != nil {
		return aws.Config{}, nil, err
	}
	prices, err := Prices()
	return cfg, prices, err
}
