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
	"github.com/aws/aws-sdk-go-v2/service/cloudfront"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/mediagen-dev/mediagen/internal/api/httpapi"
	"github.com/mediagen-dev/mediagen/internal/api/routes"
	"github.com/mediagen-dev/mediagen/internal/aws/cdn"
	"github.com/mediagen-dev/mediagen/internal/aws/lambdawiring/storewiring"
	"github.com/mediagen-dev/mediagen/internal/aws/s3bucket"
	"github.com/mediagen-dev/mediagen/internal/aws/sqsbatch"
	"github.com/mediagen-dev/mediagen/internal/aws/workflow"
	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/generation"
	"github.com/mediagen-dev/mediagen/internal/core/longform"
	"github.com/mediagen-dev/mediagen/internal/core/media"
	"github.com/mediagen-dev/mediagen/internal/core/routing"
	"github.com/mediagen-dev/mediagen/internal/core/sweeper"
	"github.com/mediagen-dev/mediagen/internal/core/webhook"
)

// Constructor builds one function's handler. Each builds only what its
// handler uses.
type Constructor = storewiring.Constructor

// Each function under functions/ has a named constructor its main.go calls
// directly, so a binary links only its own handler's code. The functions
// that use no AWS service but DynamoDB are in storewiring, whose binaries
// do not link this package (and so none of the SQS, S3, Step Functions,
// Secrets Manager and Polly clients); the others are here. A new function
// is one constructor in one of the two, one line in Functions, and
// `lambda.Start(<package>.Build("<folder>", <package>.<Constructor>))` in its
// main.go. A route's function is also its entry in internal/api/routes: its
// constructor, named as the route, builds the ports the route uses and
// storewiring.Route(routes.<Name>(), ports).

// Build is a function's main (storewiring.Build).
func Build(name string, c Constructor) any { return storewiring.Build(name, c) }

// AWSConfig is the function's AWS configuration (storewiring.AWSConfig).
func AWSConfig(ctx context.Context) (aws.Config, error) { return storewiring.AWSConfig(ctx) }

// Generate is POST /api/generations/generate.
func Generate(ctx context.Context, log *slog.Logger) (any, error) {
	p, err := generationWiring(ctx, log, withGenerationPolls, withPrices, withInputObjects)
	if err != nil {
		return nil, err
	}
	ports, err := webhookLoopbackPorts()
	if err != nil {
		return nil, err
	}
	if len(ports) > 0 {
		p.settings.Validation = catalog.Options{AllowLoopbackURLs: true, WebhookLoopbackPorts: ports}
	}
	// The same bucket holds the uploaded files, which it copies for the
	// generation (under inputs/), checks and presigns GETs of the copies
	// of for the provider.
	creator := generation.NewCreator(p.store, p.ups, p.queue, p.store, p.inputs, p.prices, p.settings).
		WithFiles(&media.FileInputs{Objects: p.inputs})
	return storewiring.Route(routes.Generate(), routes.Ports{GenerationCreator: creator, Gate: storewiring.PostGate(p.cfg, log)})
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
	scenes := longform.ScenePoller(p.store, p.ups, p.store, p.queue, &workflow.TaskTokens{Client: sfn.NewFromConfig(p.cfg)},
		p.copier, p.outputs, stepSettings(log))
	poller := generation.NewPoller(generation.PollerPorts{Store: p.store, Upstreams: p.ups, Queue: p.queue, Slots: p.store,
		Copier: p.copier, Outputs: p.outputs, Notifier: p.notifier, Prices: p.prices, Scenes: scenes, Inputs: p.outputs,
		Files: &media.FileInputs{Objects: p.outputs}}, p.settings)
	return sqsbatch.Handler(poller.HandleBatch), nil
}

// FileCreate is POST /api/files: it presigns a file's PUT under uploads/
// with the function's own role, which may put objects there and nowhere
// else; no table but the gate's, no queue.
func FileCreate(ctx context.Context, log *slog.Logger) (any, error) {
	cfg, bucket, err := outputObjects(ctx)
	if err != nil {
		return nil, err
	}
	return storewiring.Route(routes.FileCreate(), routes.Ports{Uploads: &media.Uploads{Signer: bucket}, Gate: storewiring.PostGate(cfg, log)})
}

// GenerationCancel is POST /api/generations/{id}/cancel.
func GenerationCancel(ctx context.Context, log *slog.Logger) (any, error) {
	p, err := generationWiring(ctx, log, withWebhooks)
	if err != nil {
		return nil, err
	}
	canceler := generation.NewCanceler(p.store, p.ups, p.store, p.notifier, p.settings)
	return storewiring.Route(routes.GenerationCancel(), routes.Ports{GenerationCanceler: canceler, Gate: storewiring.PostGate(p.cfg, log)})
}

// GenerationOutputDelete is DELETE /api/generations/{id}/output: it
// deletes the generation's files from the output bucket; no upstream, no
// queue.
func GenerationOutputDelete(ctx context.Context, log *slog.Logger) (any, error) {
	cfg, bucket, err := outputObjects(ctx)
	if err != nil {
		return nil, err
	}
	remover := generation.NewOutputRemover(storewiring.Store(cfg), bucket, outputCDN(cfg), generation.Settings{Log: log})
	return storewiring.Route(routes.GenerationOutputDelete(), routes.Ports{GenerationRemover: remover, Gate: storewiring.Gate(cfg, log)})
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
	return storewiring.Route(routes.UpstreamWebhook(), routes.Ports{UpstreamCallbacks: generation.NewCallbacks(p.store, p.ups, p.queue, p.settings), Log: log})
}

// Sweeper settles holds left open, on a schedule, and enqueues the final
// webhook event of the work whose hold it settles (so it sends to the
// webhook queue, and is wired here, not in storewiring).
func Sweeper(ctx context.Context, log *slog.Logger) (any, error) {
	cfg, err := storewiring.AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	n, err := notifier(cfg)
	if err != nil {
		return nil, err
	}
	st := storewiring.Store(cfg)
	sw := &sweeper.Sweeper{Store: st, Slots: st, Notifier: n, Log: log}
	return func(ctx context.Context, _ events.EventBridgeEvent) (sweeper.SweepReport, error) {
		return sw.Sweep(ctx)
	}, nil
}

// Webhooks consumes the webhook queue: one delivery attempt per message.
func Webhooks(ctx context.Context, log *slog.Logger) (any, error) {
	cfg, err := storewiring.AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	q, err := webhookQueue(cfg)
	if err != nil {
		return nil, err
	}
	ports, err := webhookLoopbackPorts()
	if err != nil {
		return nil, err
	}
	st := storewiring.Store(cfg)
	d := &webhook.Deliverer{Records: httpapi.WebhookRecords{Store: st}, Store: st, Queue: q,
		Client: webhook.SafeClient(ports...), Log: log}
	return sqsbatch.Handler(d.HandleBatch), nil
}

func LongStoryCreate(ctx context.Context, log *slog.Logger) (any, error) {
	cfg, prices, err := storewiring.ConfigAndPrices(ctx)
	if err != nil {
		return nil, err
	}
	wf, err := longStoryWorkflow(cfg)
	if err != nil {
		return nil, err
	}
	music, err := musicCheck(cfg)
	if err != nil {
		return nil, err
	}
	creator := longform.NewCreator(storewiring.Store(cfg), wf, prices, longform.Settings{Log: log}).CheckingMusic(music)
	return storewiring.Route(routes.LongStoryCreate(), routes.Ports{VideoCreator: creator, Gate: storewiring.PostGate(cfg, log)})
}

// LongStoryCancel is POST /api/long-story/videos/{videoId}/cancel: it
// stops the execution and the scenes' jobs, and sends the webhook.
func LongStoryCancel(ctx context.Context, log *slog.Logger) (any, error) {
	cfg, err := storewiring.AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	wf, err := longStoryWorkflow(cfg)
	if err != nil {
		return nil, err
	}
	ups, err := upstreams(ctx, cfg)
	if err != nil {
		return nil, err
	}
	notifier, err := notifier(cfg)
	if err != nil {
		return nil, err
	}
	st := storewiring.Store(cfg)
	canceler := longform.NewCanceler(st, wf, ups, st, notifier, longform.Settings{Log: log})
	return storewiring.Route(routes.LongStoryCancel(), routes.Ports{VideoCanceler: canceler, Gate: storewiring.PostGate(cfg, log)})
}

// LongStoryRegenerate is POST
// /api/long-story/videos/{videoId}/scenes/{n}/regenerate: it holds the
// scene's price, records the regenerate and starts its execution
// (<video>-r<revision>).
func LongStoryRegenerate(ctx context.Context, log *slog.Logger) (any, error) {
	cfg, prices, err := storewiring.ConfigAndPrices(ctx)
	if err != nil {
		return nil, err
	}
	wf, err := longStoryWorkflow(cfg)
	if err != nil {
		return nil, err
	}
	regenerator := longform.NewRegenerator(storewiring.Store(cfg), wf, prices, longform.Settings{Log: log})
	return storewiring.Route(routes.LongStoryRegenerate(), routes.Ports{VideoRegenerator: regenerator, Gate: storewiring.PostGate(cfg, log)})
}

// LongStoryOutputDelete is DELETE /api/long-story/videos/{videoId}/output:
// it deletes the video's files (the final video, the scenes' clips, the
// narration) from the output bucket.
func LongStoryOutputDelete(ctx context.Context, log *slog.Logger) (any, error) {
	cfg, bucket, err := outputObjects(ctx)
	if err != nil {
		return nil, err
	}
	remover := longform.NewOutputRemover(storewiring.Store(cfg), bucket, outputCDN(cfg), longform.Settings{Log: log})
	return storewiring.Route(routes.LongStoryOutputDelete(), routes.Ports{VideoRemover: remover, Gate: storewiring.Gate(cfg, log)})
}

// outputCDN is the media distribution, where the delete-output functions
// invalidate what they delete; nil without MEDIA_DISTRIBUTION_ID (sam local
// invoke: nothing caches the files).
func outputCDN(cfg aws.Config) media.Invalidator {
	id := storewiring.Getenv(envMediaDistributionID)
	if id == "" {
		return nil
	}
	return cdn.CloudFront{API: cloudfront.NewFromConfig(cfg), DistributionID: id}
}

// outputObjects is the output bucket of a function that lists and deletes
// objects and forms no URL (so it needs no MEDIA_BASE_URL).
func outputObjects(ctx context.Context) (aws.Config, *s3bucket.Bucket, error) {
	cfg, err := storewiring.AWSConfig(ctx)
	if err != nil {
		return aws.Config{}, nil, err
	}
	name, err := storewiring.Required(envOutputBucket)
	if err != nil {
		return aws.Config{}, nil, err
	}
	return cfg, s3bucket.New(s3.NewFromConfig(cfg), name, ""), nil
}

// Handler builds the named function's handler.
func Handler(ctx context.Context, name string) (any, error) {
	build, ok := Functions()[name]
	if !ok {
		return nil, fmt.Errorf("no function %q", name)
	}
	return build(ctx, storewiring.Logger().With("function", name))
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
	saved := storewiring.Getenv
	routingFile, err := exampleRouting()
	if err != nil {
		return nil, err
	}
	defer os.Remove(routingFile)
	storewiring.Getenv = func(k string) string {
		read[k] = true
		switch k {
		case envPriceFile:
			return "" // the embedded price file
		case EnvRoutingFile:
			return routingFile
		case EnvUpstreamTokens:
			return `{"example":"token"}`
		case EnvWebhookLoopbackPorts:
			return "" // none, as in AWS
		}
		return "https://example.invalid/" + k
	}
	defer func() { storewiring.Getenv = saved }()
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
