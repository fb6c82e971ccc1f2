// Package runtime is the local runtime: one process hosting the very
// handlers the Lambda functions run, with local adapters wired in their
// place: the embedded store (or DynamoDB through the Lambdas' own adapter),
// an in-process queue delivering SQS events to the poller and an
// S3-compatible object store, and the upstreams the routing file names: by
// default the built-in simulator, on addresses of its own (simulator.go).
// The API and the playground share one loopback address; the outputs are
// served from a file origin of their own, and the store's S3 API (for the
// service alone) listens on a third.
package runtime

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen"
	"github.com/mediagen-dev/mediagen/deploy"
	"github.com/mediagen-dev/mediagen/internal/adapters/ffmpeg"
	"github.com/mediagen-dev/mediagen/internal/adapters/netguard"
	"github.com/mediagen-dev/mediagen/internal/adapters/upstream"
	"github.com/mediagen-dev/mediagen/internal/api/httpapi"
	"github.com/mediagen-dev/mediagen/internal/api/jwtauth"
	"github.com/mediagen-dev/mediagen/internal/api/lambdahttp"
	"github.com/mediagen-dev/mediagen/internal/api/playground"
	"github.com/mediagen-dev/mediagen/internal/api/routes"
	"github.com/mediagen-dev/mediagen/internal/aws/dynamostore"
	"github.com/mediagen-dev/mediagen/internal/aws/lambdawiring"
	"github.com/mediagen-dev/mediagen/internal/aws/sqsbatch"
	"github.com/mediagen-dev/mediagen/internal/core/accounts"
	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/clock"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/generation"
	"github.com/mediagen-dev/mediagen/internal/core/longform"
	"github.com/mediagen-dev/mediagen/internal/core/media"
	"github.com/mediagen-dev/mediagen/internal/core/pricing"
	"github.com/mediagen-dev/mediagen/internal/core/routing"
	"github.com/mediagen-dev/mediagen/internal/core/store"
	"github.com/mediagen-dev/mediagen/internal/core/sweeper"
	"github.com/mediagen-dev/mediagen/internal/core/webhook"
	"github.com/mediagen-dev/mediagen/internal/local/apigw"
	"github.com/mediagen-dev/mediagen/internal/local/costs"
	"github.com/mediagen-dev/mediagen/internal/local/espeak"
	"github.com/mediagen-dev/mediagen/internal/local/localsqs"
	"github.com/mediagen-dev/mediagen/internal/local/objectstore"
	"github.com/mediagen-dev/mediagen/internal/local/sqlitestore"
	"github.com/mediagen-dev/mediagen/internal/local/stepfunctions"
	"github.com/mediagen-dev/mediagen/internal/local/workflowtokens"
	"github.com/mediagen-dev/mediagen/statemachines"
)

// Config tunes the local runtime; zero values take the defaults.
type Config struct {
	Addr string // default 127.0.0.1:8080
	// FilesAddr is the outputs' own origin (read only: GET and HEAD of the
	// keys the API hands out); default Addr's host and port + 1 (0 stays 0).
	FilesAddr string
	// S3Addr is the object store's S3 API, which only the service uses;
	// default Addr's host and port + 2 (0 stays 0).
	S3Addr string
	// AllowRemote admits addresses other than loopback. Without it Start
	// refuses them: the runtime is for this machine.
	AllowRemote bool
	DataDir     string // default .mediagen
	// SimulatorLatency is how long the simulator waits before rendering.
	SimulatorLatency time.Duration
	// PollInterval is the first delay between polls of a job.
	PollInterval time.Duration
	// QueueVisibility is the wait before a failed poll is redelivered.
	QueueVisibility time.Duration
	// SweepEvery is how often the sweeper runs.
	SweepEvery time.Duration
	// PriceFile overrides the embedded price file.
	PriceFile string
	// DevCredits is the dev account's first grant.
	DevCredits decimal.Decimal
	// WorkflowWaitScale scales the workflow's Wait states and retry
	// intervals (tests make them short); default 1.
	WorkflowWaitScale float64
	// RoutingFile is the routing file ("" is the embedded default, every
	// variant on the built-in simulator); Routing, when set, is used as it
	// is instead.
	RoutingFile string
	Routing     *routing.Config
	// SimulatorAddr is the built-in simulator's API address (default
	// 127.0.0.1:0).
	SimulatorAddr string
	// SimulatorFilesAddr is its files origin's address (default: see
	// SimulatorConfig.FilesAddr). The files are served over https with a
	// CA kept in <DataDir>/simulator/ca.pem, which the output copier
	// trusts (here only: never in a Lambda build).
	SimulatorFilesAddr string
	// UpstreamCAs are CAs the output copier trusts besides the system's
	// and the built-in simulator's: a simulator elsewhere used as a
	// remote upstream (its ca.pem). A process can also add them with
	// SSL_CERT_FILE or SSL_CERT_DIR.
	UpstreamCAs []*x509.Certificate
	// UpstreamTimeout bounds one try of a call to an upstream (default: the
	// deployed functions', lambdawiring.UpstreamTuning).
	UpstreamTimeout time.Duration
	// PublicBaseURL is where an upstream off this machine can call back
	// (a tunnel to this runtime); without it only upstreams on loopback
	// (the simulator) are given callbacks, and the others complete by
	// polling.
	PublicBaseURL string
	// NoUpstreamWebhooks leaves the provider's completion callbacks off, so
	// that generations complete by polling only (as with a provider that
	// cannot call back).
	NoUpstreamWebhooks bool
	// WebhookAllow are the receivers on this machine ("HOST:PORT", a
	// loopback host) webhooks may reach (serve --webhook-allow): a webhook
	// to another loopback port is refused at create time (400), and
	// delivery dials no other. Default none; the rule holds under
	// AllowRemote too.
	WebhookAllow []string
	// WebhookBackoff is the wait before each retry of a webhook delivery;
	// default webhook.DefaultBackoff (tests make it short).
	WebhookBackoff []time.Duration
	// Timeouts bound the API server's requests and answers (zero fields:
	// apigw.DefaultTimeouts'); tests shorten Read to see a slow body cut
	// off.
	Timeouts apigw.Timeouts
	// AuthCacheTTL is how long the gateway reuses the Lambda authorizer's
	// answer for the same Authorization header, as API Gateway does with
	// the template's AuthorizerCacheTtl (60 s there): within it a revoked
	// key is still let through, and the authorizer is not invoked (nor
	// counted by Costs). Default 0: every request is authorized afresh, so
	// revocation takes effect at once.
	AuthCacheTTL time.Duration
	// AuthCacheClock is the authorizer cache's clock (default time.Now);
	// tests move it past AuthCacheTTL instead of sleeping.
	AuthCacheClock func() time.Time
	// Clock is the service's clock (default time.Now): the status views,
	// the records' times, deadlines and output expiry, the sweeper, and
	// the outputs' lifecycle (ExpireOutputs). Tests move it past the
	// retention instead of waiting 30 days.
	Clock func() time.Time
	// WaitClock is the clock a Prefer: wait on generate waits on (default
	// the wall clock): tests move it past the 25 s cap instead of waiting.
	WaitClock clock.Clock
	// StreamClock is the event streams' clock (their polls and
	// heartbeats; default the wall clock): tests move it instead of
	// waiting.
	StreamClock clock.Clock
	// WrapCopyBucket, when set, wraps the bucket the poller copies the
	// generations' outputs into: tests stop the copy at a chosen output
	// to race a cancel or a delete with it.
	WrapCopyBucket func(media.Bucket) media.Bucket
	// JWT, when its issuer is set, admits identity-provider tokens on the
	// status route.
	JWTIssuer, JWTAudience, JWKSURL string
	// DynamoDB, when set, keeps the records in DynamoDB through the adapter
	// the Lambda functions use (dynamostore), on tables made before
	// (`mediagen tables create`), instead of the embedded store.
	DynamoDB *DynamoDBConfig
	Log      *slog.Logger
}

// DynamoDBConfig is the DynamoDB the runtime keeps its records in.
type DynamoDBConfig struct {
	Client dynamostore.API
	Tables dynamostore.Tables
	// LedgerBudget, when set, bounds a ledger write's retries instead of
	// dynamostore.LedgerBudget (tests on the one-request-at-a-time stand-in).
	LedgerBudget time.Duration
	// Unmetered sends the handlers' requests straight to Client, past the
	// cost meter, which reads each item a write names before and after it
	// (Costs stays zero): a test of load on DynamoDB's semantics, such as
	// the burst, then sends DynamoDB what the Lambda functions would.
	Unmetered bool
}

// The queue consumers' RecursiveLoop settings, as template.yaml gives them
// (deploy/ holds the template to these): the local queues apply Lambda's
// recursive-loop guard with them.
const (
	pollerRecursiveLoop   = localsqs.RecursiveLoopAllow
	webhooksRecursiveLoop = localsqs.RecursiveLoopAllow
)

// Bucket is the local output bucket.
const Bucket = "mediagen-outputs"

// DevAccount is the account a new user starts with; its key is kept in the
// data directory (local only) so every start can print it.
type DevAccount struct {
	UserID string `json:"user_id"`
	APIKey string `json:"api_key"`
}

// Runtime is a running local service.
type Runtime struct {
	// closing is set while Close stops the workflows: a stop for the
	// shutdown is not an abort (Step Functions would run on), so the
	// safety net leaves those executions for the restart to resume.
	closing atomic.Bool

	BaseURL string
	// FilesURL is the outputs' origin, the base of every output URL.
	FilesURL string
	Dev      DevAccount

	// Store is the store the handlers use, as the Lambdas' wiring would
	// (the DynamoDB adapter's requests are counted by Costs).
	Store store.Store
	// Embedded is the embedded store when the runtime runs on it (nil on
	// DynamoDB).
	Embedded *sqlitestore.Store
	Objects  *objectstore.Store
	Queue    *localsqs.Queue
	// WebhookQueue holds webhook deliveries, as the WebhookQueue in SQS.
	WebhookQueue *localsqs.Queue
	Generations  *generation.Service
	Workflow     *stepfunctions.Workflow
	// Simulator is the built-in simulator, on addresses of its own (nil
	// when the routing file does not use it).
	Simulator *Simulator
	Upstreams *upstream.Router
	// Costs counts the AWS requests the deployed system would make for the
	// work done here (see internal/local/costs).
	Costs *costs.Meter

	// sweeper settles the holds a crash left open: every SweepEvery, and
	// at once at a restart for the long videos that ended before the stop.
	sweeper *sweeper.Sweeper

	srv    *http.Server
	cancel context.CancelFunc
	wg     sync.WaitGroup
	log    *slog.Logger
	clock  func() time.Time
}

// Start opens the data directory, starts every part and begins serving.
func Start(ctx context.Context, cfg Config) (*Runtime, error) {
	cfg = withDefaults(cfg)
	log := cfg.Log
	hookPorts, err := preflight(cfg)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	r := &Runtime{BaseURL: "http://" + ln.Addr().String(), log: log, Costs: &costs.Meter{}, clock: cfg.Clock}
	ok := false
	defer func() {
		if !ok {
			ln.Close()
			r.closeParts()
		}
	}()

	st, err := r.openStore(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if r.Objects, err = objectstore.Serve(ctx, objectstore.Config{Dir: filepath.Join(cfg.DataDir, "s3"), Bucket: Bucket,
		APIAddr: cfg.S3Addr, FilesAddr: cfg.FilesAddr, Wrap: r.Costs.S3, Now: cfg.Clock,
		CORS: &objectstore.CORSRule{AllowedOrigins: media.UploadCORS.AllowedOrigins, AllowedMethods: media.UploadCORS.AllowedMethods,
			AllowedHeaders: media.UploadCORS.AllowedHeaders, MaxAgeSeconds: media.UploadCORS.MaxAgeSeconds}}); err != nil {
		return nil, err
	}
	r.FilesURL = r.Objects.FilesURL
	rc, err := r.startUpstreams(cfg)
	if err != nil {
		return nil, err
	}
	prices := pricing.Default()
	if cfg.PriceFile != "" {
		if prices, err = pricing.LoadFile(cfg.PriceFile); err != nil {
			return nil, err
		}
	}
	ports, err := r.wire(cfg, st, rc, prices, hookPorts)
	if err != nil {
		return nil, err
	}
	mux, err := r.mount(cfg, ports)
	if err != nil {
		return nil, err
	}
	if r.Dev, err = ensureDevAccount(ctx, r.Store, cfg.DataDir, cfg.DevCredits); err != nil {
		return nil, err
	}

	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.cancel = cancel
	r.wg.Add(3)
	go func() { defer r.wg.Done(); r.Queue.Run(runCtx) }()
	go func() { defer r.wg.Done(); r.WebhookQueue.Run(runCtx) }()
	go func() { defer r.wg.Done(); r.sweepLoop(runCtx, cfg.SweepEvery) }()
	if err := r.resume(ctx); err != nil {
		return nil, err
	}
	r.srv = cfg.Timeouts.Server(mux)
	go func() {
		if err := r.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("local server stopped", "error", err)
		}
	}()
	ok = true
	return r, nil
}

// preflight checks what Start needs before it starts anything: ffmpeg and
// espeak-ng, the webhook receivers allowed (their ports), and addresses on
// this machine unless remote access is allowed.
func preflight(cfg Config) ([]uint16, error) {
	if err := (ffmpeg.Runner{}).Available(); err != nil {
		return nil, fmt.Errorf("the upstream simulator renders media with ffmpeg: %w", err)
	}
	if err := (espeak.Narrator{}).Available(); err != nil {
		return nil, fmt.Errorf("long-form narration: %w", err)
	}
	var hookPorts []uint16
	for _, hp := range cfg.WebhookAllow {
		port, err := ParseWebhookAllow(hp)
		if err != nil {
			return nil, err
		}
		hookPorts = append(hookPorts, port)
	}
	if !cfg.AllowRemote {
		for _, addr := range []string{cfg.Addr, cfg.FilesAddr, cfg.S3Addr, cfg.SimulatorAddr} {
			if addr == "" {
				continue
			}
			if err := CheckLoopback(addr); err != nil {
				return nil, err
			}
		}
	}
	return hookPorts, nil
}

// openStore opens the store (r.Store) and returns what the handlers use: on
// DynamoDB, the adapter on a client whose requests the meter counts, while
// r.Store reads past the meter.
func (r *Runtime) openStore(ctx context.Context, cfg Config) (store.Store, error) {
	if d := cfg.DynamoDB; d != nil {
		r.Store = dynamostore.New(d.Client, d.Tables, dynamostore.WithLedgerBudget(d.LedgerBudget))
		if d.Unmetered {
			return r.Store, nil
		}
		return dynamostore.New(costs.MeterDynamoDB(d.Client, d.Tables, r.Costs), d.Tables, dynamostore.WithLedgerBudget(d.LedgerBudget)), nil
	}
	var err error
	if r.Embedded, err = sqlitestore.Open(ctx, cfg.DataDir); err != nil {
		return nil, err
	}
	// The server counts rate limits in memory, which holds exactly only
	// while no one else counts on the directory: a second server there
	// is refused rather than let clients split their requests between
	// two counts (the admin command counts nothing, and runs beside).
	switch err := r.Embedded.CountInProcess(); {
	case errors.Is(err, errors.ErrUnsupported):
		r.log.Info("rate limits are counted in the database: this system cannot lock the data directory", "error", err)
	case err != nil:
		return nil, fmt.Errorf("data directory %s: is another mediagen serve running on it? %w", cfg.DataDir, err)
	}
	r.Store = r.Embedded
	return r.Embedded, nil
}

// startUpstreams reads the routing file, starts the built-in simulator when
// it names it, and makes the upstreams' clients (r.Upstreams).
func (r *Runtime) startUpstreams(cfg Config) (*routing.Config, error) {
	rc := cfg.Routing
	if rc == nil {
		var err error
		if rc, err = routing.Load(cfg.RoutingFile); err != nil {
			return nil, err
		}
	}
	if rc.UsesBuiltin() {
		sim, err := StartSimulator(SimulatorConfig{Addr: cfg.SimulatorAddr, FilesAddr: cfg.SimulatorFilesAddr,
			Latency: cfg.SimulatorLatency, WorkDir: filepath.Join(cfg.DataDir, "upstream"),
			CADir: filepath.Join(cfg.DataDir, "simulator"), Log: r.log.With("component", "simulator")})
		if err != nil {
			return nil, err
		}
		r.Simulator = sim
		r.Simulator.Bind(rc)
	}
	ups, err := upstream.NewRouter(rc, tokens(r.Simulator), webhookSecrets,
		upstream.Tuning{HTTP: &http.Client{Timeout: cfg.UpstreamTimeout}})
	if err != nil {
		return nil, fmt.Errorf("routing: %w", err)
	}
	r.Upstreams = ups
	return rc, nil
}

// wire builds the work's side, each part once and complete: the poll and
// webhook queues and their consumers (the poller, the deliverer), the
// long-form workflow with its tasks, and the routes' ports on them.
func (r *Runtime) wire(cfg Config, st store.Store, rc *routing.Config, prices *pricing.Table, hookPorts []uint16) (routes.Ports, error) {
	log := cfg.Log
	outputs := r.Objects.MediaBucket()
	var copyBucket media.Bucket = outputs
	if cfg.WrapCopyBucket != nil {
		copyBucket = cfg.WrapCopyBucket(outputs)
	}
	copier := &media.Copier{Bucket: copyBucket, HTTP: &http.Client{Timeout: 5 * time.Minute},
		AllowedHosts: rc.OutputHosts(), MaxBytes: 512 << 20, AllowLoopback: true, RootCAs: r.Simulator.trust(cfg.UpstreamCAs)}
	settings := generation.Settings{
		Validation:   catalog.Options{AllowLoopbackURLs: true, WebhookLoopbackPorts: hookPorts},
		PollInterval: cfg.PollInterval,
		PollLease:    cfg.QueueVisibility,
		Now:          cfg.Clock,
		Timers:       cfg.WaitClock,
		Log:          log,
	}
	switch {
	case cfg.NoUpstreamWebhooks:
	case cfg.PublicBaseURL != "":
		settings.UpstreamWebhook = strings.TrimSuffix(cfg.PublicBaseURL, "/") + routes.UpstreamWebhookPath
	case allOnLoopback(rc):
		settings.UpstreamWebhook = r.BaseURL + routes.UpstreamWebhookPath
	}

	// Each queue exists before its consumer, as in AWS, where the event
	// source mapping ties them: the poller and the webhook deliverer send to
	// their own queues. A queue hands its batches to its consumer, built
	// once, complete, below.
	var pollBatches, deliverBatches localsqs.BatchHandler
	r.Queue = localsqs.New(r.Costs.SQSConsumer("poller", func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		return pollBatches(ctx, ev)
	}), localsqs.Config{Visibility: cfg.QueueVisibility, Log: log.With("component", "queue"),
		Function: "PollerFunction", RecursiveLoop: pollerRecursiveLoop})
	queue := r.Costs.SQSSender(r.Queue)
	r.WebhookQueue = localsqs.New(r.Costs.SQSConsumer("webhooks", func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		return deliverBatches(ctx, ev)
	}), localsqs.Config{Visibility: cfg.QueueVisibility, Log: log.With("component", "webhook-queue"),
		Function: "WebhooksFunction", RecursiveLoop: webhooksRecursiveLoop})
	webhookQueue := r.Costs.SQSSender(r.WebhookQueue)
	deliverer := &webhook.Deliverer{Records: httpapi.WebhookRecords{Store: st, Now: cfg.Clock}, Store: st, Queue: webhookQueue,
		Client: webhook.SafeClient(hookPorts...), Backoff: cfg.WebhookBackoff, Log: log.With("component", "webhooks")}
	deliverBatches = sqsbatch.Handler(deliverer.HandleBatch)
	notifier := webhook.Notifier{Queue: webhookQueue}
	r.sweeper = &sweeper.Sweeper{Store: r.Store, Slots: r.Store, Notifier: notifier, Now: cfg.Clock, Log: log.With("component", "sweeper")}

	// The workflow's tasks, each built by the constructor its Lambda
	// function uses; the scenes' polls share the poller's queue, as in AWS.
	stepSettings := longform.StepSettings{PollInterval: cfg.PollInterval, WorkDir: filepath.Join(cfg.DataDir, "tmp"), Now: cfg.Clock, Log: log}
	if err := os.MkdirAll(stepSettings.WorkDir, 0o755); err != nil {
		return routes.Ports{}, fmt.Errorf("scratch dir: %w", err)
	}
	// A music_url given as a URL is fetched through the egress guard, on
	// loopback too (local use), trusting the simulator's CA and
	// UpstreamCAs.
	music := &media.Downloader{HTTP: &http.Client{Timeout: time.Minute}, MaxBytes: longform.MaxMusicURLBytes,
		AllowLoopback: true, RootCAs: r.Simulator.trust(cfg.UpstreamCAs)}
	// The uploads: presigned by the bucket's S3 API, as S3 presigns them.
	files := &media.FileInputs{Objects: outputs, Now: cfg.Clock}
	tasks := map[string]any{
		"SubmitSceneFunctionArn": longform.SubmitSceneStep(st, r.Upstreams, st, queue, stepSettings),
		"NarrateFunctionArn":     longform.NarrateStep(outputs, espeak.Narrator{}, st, stepSettings),
		"AssembleFunctionArn":    longform.AssembleStep(outputs, st, outputs, ffmpeg.Runner{}, music, files, stepSettings),
		"FinalizeFunctionArn":    longform.FinalizeStep(outputs, outputs, st, notifier, outputs, stepSettings),
		"MarkFailedFunctionArn":  longform.MarkFailedStep(st, notifier, r.Upstreams, st, outputs, stepSettings),
	}
	var err error
	if r.Workflow, err = longStoryWorkflow(tasks, cfg.WorkflowWaitScale, log, r.Costs, r.closing.Load); err != nil {
		return routes.Ports{}, err
	}
	scenes := longform.ScenePoller(st, r.Upstreams, st, queue, workflowtokens.TaskTokens{Workflow: r.Workflow}, copier, outputs, stepSettings)
	r.Generations = generation.NewPoller(generation.PollerPorts{Store: st, Upstreams: r.Upstreams, Queue: queue, Slots: st,
		Copier: copier, Outputs: outputs, Notifier: notifier, Prices: prices, Scenes: scenes, Inputs: outputs, Files: files}, settings)
	pollBatches = sqsbatch.Handler(r.Generations.HandleBatch)

	gate := &httpapi.Gate{Store: st, Log: log, Idempotency: &httpapi.Idempotency{Store: st, Log: log}, Now: cfg.Clock}
	if cfg.JWTIssuer != "" {
		gate.Tokens = &jwtauth.Verifier{Issuer: cfg.JWTIssuer, Audience: cfg.JWTAudience, JWKSURL: cfg.JWKSURL}
	}
	storySettings := longform.Settings{Validation: settings.Validation, Now: cfg.Clock, Log: log}
	return routes.Ports{Gate: gate, Log: log, Prices: prices,
		GenerationCreator:  generation.NewCreator(st, r.Upstreams, queue, st, outputs, prices, settings).WithFiles(files),
		GenerationReader:   generation.NewReader(st, st, r.Upstreams),
		GenerationEstimate: generation.NewEstimator(prices, settings.Validation),
		GenerationCanceler: generation.NewCanceler(st, r.Upstreams, st, notifier, settings),
		GenerationRemover:  generation.NewOutputRemover(st, outputs, nil, settings),
		UpstreamCallbacks:  generation.NewCallbacks(st, r.Upstreams, queue, settings),
		Uploads:            &media.Uploads{Signer: outputs, Now: cfg.Clock},
		VideoCreator: longform.NewCreator(st, r.Workflow, prices, storySettings).CheckingMusic(
			&longform.MusicCheck{Fetch: music, Files: files, FFmpeg: ffmpeg.Runner{}, WorkDir: stepSettings.WorkDir}),
		VideoReader:      longform.NewReader(st),
		VideoCanceler:    longform.NewCanceler(st, r.Workflow, r.Upstreams, st, notifier, storySettings),
		VideoRegenerator: longform.NewRegenerator(st, r.Workflow, prices, storySettings),
		VideoRemover:     longform.NewOutputRemover(st, outputs, nil, storySettings),
		VoiceLister:      &longform.VoiceLister{Narrator: espeak.Narrator{}, Files: outputs, WorkDir: stepSettings.WorkDir, Log: log},
		Streams:          httpapi.Streams{Clock: cfg.StreamClock, Leases: st},
		Secrets:          st, Journal: st, Usage: st,
		KeyCreator:    &accounts.KeyCreator{Store: st},
		KeyLister:     &accounts.KeyLister{Keys: st, Spend: st},
		KeyRevoker:    &accounts.KeyRevoker{Store: st},
		SecretRotator: &accounts.WebhookSecretRotator{Store: st},
	}, nil
}

// mount serves the API's routes (routes.Table) on ports as the gateway
// does, behind the Lambda authorizer or public as the table says, beside
// the playground; anything else is answered 404.
func (r *Runtime) mount(cfg Config, ports routes.Ports) (http.Handler, error) {
	var guarded, public []apigw.Route
	for _, rt := range routes.Table() {
		h, err := rt.Build(ports)
		if err != nil {
			return nil, err
		}
		mounted := apigw.Route{Method: rt.Method, Path: rt.Path, Handler: lambdahttp.Route(h)}
		if rt.Auth == routes.Public {
			public = append(public, mounted)
		} else {
			guarded = append(guarded, mounted)
		}
	}
	mux := http.NewServeMux()
	apigw.Mount(mux, r.Costs.Routes(guarded), &apigw.LambdaAuthorizer{Func: r.Costs.Authorizer(lambdahttp.Authorizer(ports.Gate.Authorize)),
		CacheTTL: cfg.AuthCacheTTL, Now: cfg.AuthCacheClock}, cfg.Timeouts, cfg.Log)
	apigw.Mount(mux, r.Costs.Routes(public), nil, cfg.Timeouts, cfg.Log)
	// The event streams: in AWS the stream function's URL serves them; here
	// the same function is served on this origin, at the routes' paths.
	var streams []lambdahttp.StreamRoute
	for _, rt := range routes.StreamTable() {
		h, err := rt.Build(ports)
		if err != nil {
			return nil, err
		}
		streams = append(streams, lambdahttp.StreamRoute{Method: rt.Method, Path: rt.Path, Handler: h})
	}
	playground.Mount(mux)
	mux.HandleFunc("/", notFound)
	// A stream's path would conflict with the API's patterns on one mux
	// (GET /api/generations/{id}/events and GET
	// /api/generations/status/{id} both match .../status/events): in AWS
	// they are two hosts. Here the stream function takes the paths of its
	// routes first, as its URL would, and the API the rest.
	streamURL := apigw.FunctionURL(r.Costs.FunctionURL(lambdahttp.StreamFunction(streams)), cfg.Log)
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		for _, rt := range streams {
			if _, ok := lambdahttp.MatchPath(rt.Path, req.URL.EscapedPath()); ok && req.Method == rt.Method {
				streamURL.ServeHTTP(w, req)
				return
			}
		}
		mux.ServeHTTP(w, req)
	}), nil
}
func withDefaults(cfg Config) Config {
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:8080"
	}
	if cfg.FilesAddr == "" {
		cfg.FilesAddr = portAfter(cfg.Addr, 1)
	}
	if cfg.S3Addr == "" {
		cfg.S3Addr = portAfter(cfg.Addr, 2)
	}
	if cfg.DataDir == "" {
		cfg.DataDir = ".mediagen"
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = time.Second
	}
	if cfg.UpstreamTimeout == 0 {
		cfg.UpstreamTimeout = lambdawiring.UpstreamTuning.HTTP.Timeout
	}
	if cfg.QueueVisibility == 0 {
		cfg.QueueVisibility = 5 * time.Second
	}
	if cfg.SweepEvery == 0 {
		cfg.SweepEvery = time.Minute
	}
	d := apigw.DefaultTimeouts
	for _, t := range []struct {
		dst *time.Duration
		def time.Duration
	}{
		{&cfg.Timeouts.ReadHeader, d.ReadHeader}, {&cfg.Timeouts.Read, d.Read}, {&cfg.Timeouts.Write, d.Write}, {&cfg.Timeouts.Idle, d.Idle},
		{&cfg.Timeouts.Integration, d.Integration},
	} {
		if *t.dst == 0 {
			*t.dst = t.def
		}
	}
	if cfg.DevCredits.IsZero() {
		cfg.DevCredits = decimal.NewFromInt(1000)
	}
	// Whatever logger is given, no line of it carries a value past
	// domain.MaxLogValue.
	cfg.Log = domain.Bounded(cfg.Log)
	return cfg
}

// inFlightLister lists the work a stopped runtime left in flight. It is no
// part of store.Store: on DynamoDB it is a Scan, which no Lambda function
// makes; each adapter the runtime runs on has it (its restart.go).
type inFlightLister interface {
	ProcessingGenerations(ctx context.Context, limit int) ([]domain.Generation, error)
	ProcessingLongVideos(ctx context.Context, limit int) ([]domain.LongVideo, error)
}

var (
	_ inFlightLister = (*sqlitestore.Store)(nil)
	_ inFlightLister = (*dynamostore.Store)(nil)
)

// resume takes up again whatever was in flight when the runtime last
// stopped, which is whatever holds credits: a stop (a kill, or the cancel
// of a clean one) can come between a record's final write and its hold's
// settlement, and a record already final is not processing. So every open
// hold is looked at, beside the records still processing: a generation's
// gets a poll (which settles a final one and takes up the chain of one in
// flight), a long video's final one is settled here and one in flight has
// its workflow started again.
func (r *Runtime) resume(ctx context.Context) error {
	inFlight, ok := r.Store.(inFlightLister)
	if !ok {
		return fmt.Errorf("resume: the store %T cannot list the work in flight", r.Store)
	}
	holds, err := r.Store.OpenHolds(ctx, everHeld)
	if err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	gs, err := inFlight.ProcessingGenerations(ctx, 10000)
	if err != nil {
		return fmt.Errorf("resume polling: %w", err)
	}
	polls := map[string]bool{}
	var toPoll []string
	poll := func(id string) {
		if !polls[id] {
			polls[id] = true
			toPoll = append(toPoll, id)
		}
	}
	for _, g := range gs {
		poll(g.UUID)
	}
	settled := 0
	for _, h := range holds {
		switch h.Kind {
		case domain.WorkLongVideo:
			n, err := r.settleEndedVideo(ctx, h)
			if err != nil {
				return err
			}
			settled += n
		default:
			poll(h.WorkID)
		}
	}
	for _, id := range toPoll {
		body, _ := json.Marshal(generation.PollMessage{GenerationID: id, Resume: true})
		if err := r.Queue.Send(ctx, body, 0); err != nil {
			return fmt.Errorf("resume polling %s: %w", id, err)
		}
	}
	if len(toPoll) > 0 || settled > 0 {
		r.log.Info("resumed the work in flight", "generations_polled", len(toPoll), "long_videos_settled", settled,
			"open_holds", len(holds))
	}
	// Step Functions would have kept running; the local runner starts the
	// workflows cut off by the stop again (every step is idempotent).
	vs, err := inFlight.ProcessingLongVideos(ctx, 10000)
	if err != nil {
		return fmt.Errorf("resume long videos: %w", err)
	}
	for _, v := range vs {
		input, err := longform.InputOf(v)
		if err != nil {
			return err
		}
		if err := r.Workflow.Start(ctx, v.ID, input); err != nil {
			return fmt.Errorf("resume long video %s: %w", v.ID, err)
		}
	}
	if len(vs) > 0 {
		r.log.Info("restarted long-video workflows in flight", "count", len(vs))
	}
	return nil
}

// everHeld bounds OpenHolds above every hold's creation time, whatever the
// service's clock says.
var everHeld = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)

// settleEndedVideo settles the hold of a long video that ended before the
// stop let its workflow settle it, and enqueues its webhook event, as the
// sweeper does (1); it leaves one still processing to its restarted
// workflow, and one not recorded or a regenerate's to the sweeper (0).
func (r *Runtime) settleEndedVideo(ctx context.Context, h domain.OpenHold) (int, error) {
	settled, err := r.sweeper.SettleEnded(ctx, h)
	if err != nil {
		return 0, fmt.Errorf("resume: settle long video %s: %w", h.WorkID, err)
	}
	if !settled {
		return 0, nil
	}
	return 1, nil
}

func (r *Runtime) sweepLoop(ctx context.Context, every time.Duration) {
	sw := r.sweeper
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := sw.Sweep(ctx); err != nil {
				r.log.Warn("sweep failed", "error", err)
			}
			if _, err := r.ExpireOutputs(ctx); err != nil {
				r.log.Warn("output expiry failed", "error", err)
			}
		}
	}
}

// ExpireOutputs applies the output bucket's lifecycle rules as S3 does
// (template.yaml), at the runtime's clock: every object under
// media.ExpiringPrefixes is deleted once domain.DefaultRetentionDays have
// passed since it was written (rounded up to midnight UTC), or its tagged
// retention's days when an account keeps outputs less long. Like S3 it
// leaves the records alone: their views stop listing URLs at
// output_expires_at, before the files go. The inputs kept in the bucket
// (media.InputsPrefix) go after media.InputRetentionDays, the uploaded
// files (media.UploadsPrefix) after media.UploadRetentionDays. The sweep runs
// it every SweepEvery; tests call it.
func (r *Runtime) ExpireOutputs(ctx context.Context) (int, error) {
	var rules []objectstore.ExpiryRule
	for _, p := range media.ExpiringPrefixes {
		rules = append(rules, objectstore.ExpiryRule{Prefix: p, Days: domain.DefaultRetentionDays})
	}
	for _, days := range domain.RetentionChoices {
		if days != domain.DefaultRetentionDays {
			rules = append(rules, objectstore.ExpiryRule{Tag: domain.RetentionTag, Value: strconv.Itoa(days), Days: days})
		}
	}
	rules = append(rules, objectstore.ExpiryRule{Prefix: media.InputsPrefix, Days: media.InputRetentionDays},
		objectstore.ExpiryRule{Prefix: media.UploadsPrefix, Days: media.UploadRetentionDays})
	n, err := r.Objects.Expire(ctx, domain.Now(r.clock), rules)
	if n > 0 {
		r.log.Info("expired outputs deleted", "objects", n)
	}
	return n, err
}

// Close stops serving, lets deliveries in flight finish and closes the store.
func (r *Runtime) Close(ctx context.Context) error {
	var err error
	if r.srv != nil {
		if err = r.srv.Shutdown(ctx); err != nil {
			err = errors.Join(err, r.srv.Close()) // ctx ended: cut what is left
		}
	}
	if r.Workflow != nil {
		r.closing.Store(true)
		r.Workflow.StopAll()
	}
	if r.cancel != nil {
		r.cancel()
	}
	if r.Workflow != nil {
		// The stopped executions' invocations run on, as in AWS, until
		// the runner closes: they end before what they use does.
		r.Workflow.Close()
	}
	r.wg.Wait()
	return errors.Join(err, r.closeParts())
}

func (r *Runtime) closeParts() error {
	var errs []error
	if r.Simulator != nil {
		r.Simulator.Close()
	}
	if r.Objects != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		errs = append(errs, r.Objects.Close(ctx))
		cancel()
	}
	if r.Embedded != nil {
		errs = append(errs, r.Embedded.Close())
	}
	return errors.Join(errs...)
}

// longStoryWorkflow loads statemachines/long-story.asl.json with each task
// placeholder bound to the handler its Lambda function runs (handlers, by
// placeholder). An execution
// that ends failed, timed out or aborted raises the event EventBridge
// raises in AWS, and the safety-net rule's target (MarkFailed) takes it.
func longStoryWorkflow(handlers map[string]any, waitScale float64, log *slog.Logger, meter *costs.Meter, shuttingDown func() bool) (*stepfunctions.Workflow, error) {
	subs, resources := map[string]string{}, map[string]stepfunctions.TaskFunc{}
	for _, name := range statemachines.LongStoryTasks {
		fn, ok := handlers[name]
		if !ok {
			return nil, fmt.Errorf("long-story workflow: no local handler for %s", name)
		}
		arn := "arn:aws:lambda:local:000000000000:function:" + strings.TrimSuffix(name, "FunctionArn")
		subs[name], resources[arn] = arn, meter.Task(arn, stepfunctions.Handler(fn))
	}
	timeouts, err := taskTimeouts(subs)
	if err != nil {
		return nil, fmt.Errorf("long-story workflow: %w", err)
	}
	safetyNet := resources[subs["MarkFailedFunctionArn"]]
	wlog := log.With("component", "workflow")
	m, err := stepfunctions.Load("long-story", statemachines.LongStory, stepfunctions.Config{
		Substitutions: subs, Resources: resources, WaitScale: waitScale, Log: wlog, FunctionTimeouts: timeouts,
		OnTransition: func() { meter.AddTransitions(1) },
		OnExecutionEnd: func(end stepfunctions.ExecutionEnd) {
			if end.Status == "SUCCEEDED" || shuttingDown() {
				return
			}
			event, err := end.EventBridgeEvent()
			if err == nil {
				_, err = safetyNet(context.Background(), event)
			}
			if err != nil {
				wlog.Error("the safety net could not take the execution's end", "execution", end.ExecutionArn, "status", end.Status, "error", err)
			}
		}})
	if err != nil {
		return nil, fmt.Errorf("long-story workflow: %w", err)
	}
	return &stepfunctions.Workflow{Machine: m}, nil
}

// taskTimeouts gives each task function (by its ARN in subs, keyed by its
// placeholder) the Timeout template.yaml gives it: the runner fails an
// invocation past it with Sandbox.Timedout, as Lambda does. The template's
// DefinitionSubstitutions name each placeholder's function, <name minus
// Arn> (deploy/ checks it).
func taskTimeouts(subs map[string]string) (map[string]time.Duration, error) {
	doc, err := deploy.Parse(mediagen.Template)
	if err != nil {
		return nil, fmt.Errorf("template.yaml: %w", err)
	}
	tpl, err := deploy.FromDocument(doc)
	if err != nil {
		return nil, fmt.Errorf("template.yaml: %w", err)
	}
	timeouts := make(map[string]time.Duration, len(subs))
	for name, arn := range subs {
		d, err := tpl.FunctionTimeout(strings.TrimSuffix(name, "Arn"))
		if err != nil {
			return nil, fmt.Errorf("template.yaml: %w", err)
		}
		timeouts[arn] = d
	}
	return timeouts, nil
}

// ensureDevAccount makes the dev account on first start and reads it after.
func ensureDevAccount(ctx context.Context, st store.Store, dir string, credits decimal.Decimal) (DevAccount, error) {
	path := filepath.Join(dir, "dev-account.json")
	if raw, err := os.ReadFile(path); err == nil {
		var dev DevAccount
		if err := json.Unmarshal(raw, &dev); err != nil {
			return DevAccount{}, fmt.Errorf("read %s: %w", path, err)
		}
		if _, err := st.GetAccount(ctx, dev.UserID); err == nil {
			return dev, nil
		} else if !errors.Is(err, domain.ErrNotFound) {
			return DevAccount{}, err
		}
	}
	svc := &accounts.Service{Store: st}
	created, err := svc.CreateAccount(ctx, accounts.NewAccount{Plan: domain.PlanPro, Credits: credits})
	if err != nil {
		return DevAccount{}, fmt.Errorf("create the dev account: %w", err)
	}
	dev := DevAccount{UserID: created.UserID, APIKey: created.APIKey}
	raw, _ := json.Marshal(dev)
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		return DevAccount{}, fmt.Errorf("keep the dev account in %s: %w", path, err)
	}
	return dev, nil
}

// notFound answers a request no route takes (an unknown path, or a known
// one with another method) with the error envelope, whose request_id every
// error carries, and the gateway's request id header.
func notFound(w http.ResponseWriter, r *http.Request) {
	id := apigw.NewRequestID()
	w.Header().Set(apigw.RequestIDHeader, id)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{
		"code": "not_found", "message": "no route " + r.Method + " " + r.URL.Path}, "request_id": id})
}

// allOnLoopback reports whether every upstream is on this machine, so that
// it can call the runtime back on its loopback address.
func allOnLoopback(rc *routing.Config) bool {
	for _, name := range rc.Names() {
		u, err := url.Parse(rc.Upstreams[name].BaseURL)
		if err != nil {
			return false
		}
		ip, err := netip.ParseAddr(u.Hostname())
		if u.Hostname() != "localhost" && (err != nil || !ip.IsLoopback()) {
			return false
		}
	}
	return true
}

// webhookSecrets gives an upstream's configured webhook signing secret
// (its webhook_secret_env), "" to fetch it from the upstream.
func webhookSecrets(u *routing.Upstream) string {
	if u.WebhookSecretEnv == "" {
		return ""
	}
	return os.Getenv(u.WebhookSecretEnv)
}

func randomToken() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("mint upstream token: %w", err)
	}
	return "r8_" + hex.EncodeToString(b), nil
}

// portAfter is addr's host with its port + n; a port 0 (any free port)
// stays 0.
func portAfter(addr string, n int) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	p, err := strconv.Atoi(port)
	if err != nil || p == 0 {
		return net.JoinHostPort(host, "0")
	}
	return net.JoinHostPort(host, strconv.Itoa(p+n))
}

// ErrNotLoopback is an address that other machines could reach.
var ErrNotLoopback = errors.New("not a loopback address")

// ParseWebhookAllow reads a --webhook-allow receiver, "HOST:PORT" with a
// loopback host, as the port of this machine webhooks may reach.
func ParseWebhookAllow(hostport string) (uint16, error) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return 0, fmt.Errorf("webhook receiver %q: want HOST:PORT, such as 127.0.0.1:9000: %w", hostport, err)
	}
	a, err := netip.ParseAddr(host)
	if !strings.EqualFold(host, "localhost") && (err != nil || !netguard.Loopback(a)) {
		return 0, fmt.Errorf("webhook receiver %q: the host must be this machine (127.0.0.1, ::1 or localhost); others are reached by https on a public address", hostport)
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("webhook receiver %q: the port must be a number from 1 to 65535", hostport)
	}
	return uint16(n), nil
}

// CheckLoopback refuses a listen address that other machines could reach:
// its host must be localhost or a loopback IP (an empty host or 0.0.0.0
// listens on every interface).
func CheckLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	if strings.EqualFold(host, "localhost") {
		return nil
	}
	if a, err := netip.ParseAddr(host); err == nil && netguard.Loopback(a) {
		return nil
	}
	return fmt.Errorf("%w: %q listens beyond this machine; use 127.0.0.1 (or allow remote access explicitly)", ErrNotLoopback, addr)
}
