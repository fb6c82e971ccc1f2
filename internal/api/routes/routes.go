// Package routes is the HTTP API's route table: for each route its method
// and path, the function that serves it (functions/<Function>), whether the
// gateway's Lambda authorizer guards it, the scope an API key needs, and the
// constructor of its handler from the use cases (Ports).
//
// It is the one list of the routes. Both composition roots build handlers
// from it: the Lambda wiring (each route's function builds the ports its
// route uses and its own route, routes.Generate and so on: a binary that
// called Table would link every route's handler) and the local runtime
// (which builds every port once and mounts Table). The cost meter names each route's
// function from it, and the deploy tests and the events check template.yaml,
// api/openapi.yaml and functions/ against it.
//
// The package imports the use cases and httpapi only: no adapter, no AWS
// SDK, no local package.
package routes

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/mediagen-dev/mediagen/internal/api/httpapi"
	"github.com/mediagen-dev/mediagen/internal/core/accounts"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/generation"
	"github.com/mediagen-dev/mediagen/internal/core/longform"
	"github.com/mediagen-dev/mediagen/internal/core/media"
	"github.com/mediagen-dev/mediagen/internal/core/pricing"
)

// Auth is what the gateway asks of a request before its route runs.
type Auth int

const (
	// authorizer: the API's default Lambda authorizer (template.yaml's
	// HttpApi DefaultAuthorizer) checks the credentials first.
	authorizer Auth = iota
	// Public: no authorizer (the event's Auth: {authorizer: NONE}). The
	// provider's callback proves itself with its signature instead.
	Public
)

func (a Auth) String() string {
	if a == Public {
		return "none"
	}
	return "authorizer"
}

// Route is one route of the HTTP API.
type Route struct {
	Method, Path string
	// Function is the folder under functions/ of the Lambda function that
	// serves the route (its logical ID in template.yaml is LogicalID).
	Function string
	Auth     Auth
	// Scope is what an API key must hold to call the route; "" for a
	// public route. (The handler enforces it: httpapi's Access.)
	Scope domain.Scope
	// handler builds the route's handler from the ports it uses.
	handler func(Ports) httpapi.Handler
	// uses says which ports handler reads are missing (need).
	uses func(Ports) error
}

// Key is the route's key as API Gateway writes it: "GET /api/models".
func (r Route) Key() string { return r.Method + " " + r.Path }

// LogicalID is the function's logical ID in template.yaml: the folder in
// CamelCase with "Function" after it (long-story-create:
// LongStoryCreateFunction).
func (r Route) LogicalID() string { return LogicalID(r.Function) }

// Name is the Go name of the route's function here (routes.Generate) and
// of its function's constructor in the Lambda wiring (lambdawiring.Generate,
// storewiring.Status): the folder in CamelCase, "api" as API.
func (r Route) Name() string {
	return strings.ReplaceAll(strings.TrimSuffix(r.LogicalID(), "Function"), "Api", "API")
}

// LogicalID is the template's logical ID of the function in
// functions/<folder>.
func LogicalID(folder string) string {
	var b strings.Builder
	for _, part := range strings.Split(folder, "-") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String() + "Function"
}

// Ports are the use cases the routes run on. A composition root fills the
// ones of the routes it builds: the local runtime all of them, a Lambda
// function those of its route.
type Ports struct {
	// Gate authenticates and counts the requests of the routes behind the
	// authorizer (with Idempotency set on the POST routes that keep
	// Idempotency-Keys).
	Gate *httpapi.Gate
	Log  *slog.Logger
	// Prices is the price table (the models and the long-form estimate).
	Prices *pricing.Table

	GenerationCreator  *generation.Creator
	GenerationReader   *generation.Reader
	GenerationEstimate *generation.Estimator
	GenerationCanceler *generation.Canceler
	GenerationRemover  *generation.OutputRemover
	UpstreamCallbacks  *generation.Callbacks
	// Uploads presigns the files' uploads (POST /api/files).
	Uploads *media.Uploads

	VideoCreator  *longform.Creator
	VideoReader   *longform.Reader
	VideoCanceler *longform.Canceler
	// VideoRegenerator re-renders one scene of a completed video.
	VideoRegenerator *longform.Regenerator
	VideoRemover     *longform.OutputRemover
	VoiceLister      *longform.VoiceLister

	Secrets httpapi.SecretStore
	Journal httpapi.JournalReader
	Usage   httpapi.UsageReader
	// Streams are the event streams' settings (their clock).
	Streams httpapi.Streams

	KeyCreator    *accounts.KeyCreator
	KeyLister     *accounts.KeyLister
	KeyRevoker    *accounts.KeyRevoker
	SecretRotator *accounts.WebhookSecretRotator
}

// errMissingPort is a Ports without a port its route uses.
var errMissingPort = errors.New("missing port")

// Build is the route's handler on p. It fails when p lacks a port the
// route uses, so a function wired without one fails at its start, not at
// its first request.
func (r Route) Build(p Ports) (httpapi.Handler, error) {
	if err := r.uses(p); err != nil {
		return nil, fmt.Errorf("route %s: %w", r.Key(), err)
	}
	return r.handler(p), nil
}

// need is errMissingPort naming the port when v, the port, is nil. (It
// compares, and does not reflect on Ports: reflection would make every
// use case's methods reachable in every function, for deploy/internal/reach
// and the linker alike.)
func need[T comparable](name string, v T) error {
	var none T
	if v == none {
		return fmt.Errorf("%w %s", errMissingPort, name)
	}
	return nil
}

// UpstreamWebhookPath is the provider's callback (UpstreamWebhook), which
// the service gives the provider with each job.
const UpstreamWebhookPath = "/api/upstream/webhook"

// Table lists every route of the API. A Lambda function calls its own
// route's function instead (Generate, Status, ...), so that its binary
// links only its route's handler.
func Table() []Route {
	return []Route{
		Generate(),
		Status(),
		GenerationsList(),
		GenerationEstimate(),
		GenerationCancel(),
		GenerationOutputDelete(),
		FileCreate(),
		LongStoryEstimate(),
		LongStoryCreate(),
		LongStoryStatus(),
		LongStoryList(),
		LongStoryCancel(),
		LongStoryRegenerate(),
		LongStoryOutputDelete(),
		LongStoryVoices(),
		Account(),
		AccountTransactions(),
		AccountUsage(),
		AccountKeyCreate(),
		AccountKeysList(),
		AccountKeyRevoke(),
		AccountWebhookSecretRotate(),
		Models(),
		OpenAPI(),
		UpstreamWebhook(),
	}
}

// Generate is POST /api/generations/generate (functions/generate).
func Generate() Route {
	return Route{Method: http.MethodPost, Path: "/api/generations/generate", Function: "generate", Auth: authorizer, Scope: domain.ScopeGenerate,
		handler: func(p Ports) httpapi.Handler { return httpapi.GenerateRoute(p.GenerationCreator, p.Gate) },
		uses: func(p Ports) error {
			return errors.Join(need("Gate", p.Gate), need("GenerationCreator", p.GenerationCreator))
		}}
}

// Status is GET /api/generations/status/{id} (functions/status).
func Status() Route {
	return Route{Method: http.MethodGet, Path: "/api/generations/status/{id}", Function: "status", Auth: authorizer, Scope: domain.ScopeRead,
		handler: func(p Ports) httpapi.Handler { return httpapi.GenerationStatusRoute(p.GenerationReader, p.Gate) },
		uses: func(p Ports) error {
			return errors.Join(need("Gate", p.Gate), need("GenerationReader", p.GenerationReader))
		}}
}

// GenerationsList is GET /api/generations (functions/generations-list).
func GenerationsList() Route {
	return Route{Method: http.MethodGet, Path: "/api/generations", Function: "generations-list", Auth: authorizer, Scope: domain.ScopeRead,
		handler: func(p Ports) httpapi.Handler { return httpapi.GenerationsListRoute(p.GenerationReader, p.Gate) },
		uses: func(p Ports) error {
			return errors.Join(need("Gate", p.Gate), need("GenerationReader", p.GenerationReader))
		}}
}

// GenerationEstimate is POST /api/generations/estimate (functions/generation-estimate).
func GenerationEstimate() Route {
	return Route{Method: http.MethodPost, Path: "/api/generations/estimate", Function: "generation-estimate", Auth: authorizer, Scope: domain.ScopeRead,
		handler: func(p Ports) httpapi.Handler { return httpapi.GenerationEstimateRoute(p.GenerationEstimate, p.Gate) },
		uses: func(p Ports) error {
			return errors.Join(need("Gate", p.Gate), need("GenerationEstimate", p.GenerationEstimate))
		}}
}

// GenerationCancel is POST /api/generations/{id}/cancel (functions/generation-cancel).
func GenerationCancel() Route {
	return Route{Method: http.MethodPost, Path: "/api/generations/{id}/cancel", Function: "generation-cancel", Auth: authorizer, Scope: domain.ScopeGenerate,
		handler: func(p Ports) httpapi.Handler { return httpapi.GenerationCancelRoute(p.GenerationCanceler, p.Gate) },
		uses: func(p Ports) error {
			return errors.Join(need("Gate", p.Gate), need("GenerationCanceler", p.GenerationCanceler))
		}}
}

// GenerationOutputDelete is DELETE /api/generations/{id}/output (functions/generation-output-delete).
func GenerationOutputDelete() Route {
	return Route{Method: http.MethodDelete, Path: "/api/generations/{id}/output", Function: "generation-output-delete", Auth: authorizer, Scope: domain.ScopeGenerate,
		handler: func(p Ports) httpapi.Handler { return httpapi.GenerationOutputDeleteRoute(p.GenerationRemover, p.Gate) },
		uses: func(p Ports) error {
			return errors.Join(need("Gate", p.Gate), need("GenerationRemover", p.GenerationRemover))
		}}
}

// FileCreate is POST /api/files (functions/file-create): a file id and
// a presigned PUT URL for the file's bytes.
func FileCreate() Route {
	return Route{Method: http.MethodPost, Path: "/api/files", Function: "file-create", Auth: authorizer, Scope: domain.ScopeGenerate,
		handler: func(p Ports) httpapi.Handler { return httpapi.FileCreateRoute(p.Uploads, p.Gate) },
		uses: func(p Ports) error {
			return errors.Join(need("Gate", p.Gate), need("Uploads", p.Uploads))
		}}
}

// LongStoryEstimate is POST /api/long-story/videos/estimate (functions/long-story-estimate).
func LongStoryEstimate() Route {
	return Route{Method: http.MethodPost, Path: "/api/long-story/videos/estimate", Function: "long-story-estimate", Auth: authorizer, Scope: domain.ScopeRead,
		handler: func(p Ports) httpapi.Handler { return httpapi.LongVideoEstimateRoute(p.Prices, p.Gate) },
		uses: func(p Ports) error {
			return errors.Join(need("Gate", p.Gate), need("Prices", p.Prices))
		}}
}

// LongStoryCreate is POST /api/long-story/videos (functions/long-story-create).
func LongStoryCreate() Route {
	return Route{Method: http.MethodPost, Path: "/api/long-story/videos", Function: "long-story-create", Auth: authorizer, Scope: domain.ScopeGenerate,
		handler: func(p Ports) httpapi.Handler { return httpapi.LongVideoCreateRoute(p.VideoCreator, p.Gate) },
		uses: func(p Ports) error {
			return errors.Join(need("Gate", p.Gate), need("VideoCreator", p.VideoCreator))
		}}
}

// LongStoryStatus is GET /api/long-story/videos/{videoId} (functions/long-story-status).
func LongStoryStatus() Route {
	return Route{Method: http.MethodGet, Path: "/api/long-story/videos/{videoId}", Function: "long-story-status", Auth: authorizer, Scope: domain.ScopeRead,
		handler: func(p Ports) httpapi.Handler { return httpapi.LongVideoStatusRoute(p.VideoReader, p.Gate) },
		uses: func(p Ports) error {
			return errors.Join(need("Gate", p.Gate), need("VideoReader", p.VideoReader))
		}}
}

// LongStoryList is GET /api/long-story/videos (functions/long-story-list).
func LongStoryList() Route {
	return Route{Method: http.MethodGet, Path: "/api/long-story/videos", Function: "long-story-list", Auth: authorizer, Scope: domain.ScopeRead,
		handler: func(p Ports) httpapi.Handler { return httpapi.LongVideosListRoute(p.VideoReader, p.Gate) },
		uses: func(p Ports) error {
			return errors.Join(need("Gate", p.Gate), need("VideoReader", p.VideoReader))
		}}
}

// LongStoryCancel is POST /api/long-story/videos/{videoId}/cancel (functions/long-story-cancel).
func LongStoryCancel() Route {
	return Route{Method: http.MethodPost, Path: "/api/long-story/videos/{videoId}/cancel", Function: "long-story-cancel", Auth: authorizer, Scope: domain.ScopeGenerate,
		handler: func(p Ports) httpapi.Handler { return httpapi.LongVideoCancelRoute(p.VideoCanceler, p.Gate) },
		uses: func(p Ports) error {
			return errors.Join(need("Gate", p.Gate), need("VideoCanceler", p.VideoCanceler))
		}}
}

// LongStoryRegenerate is POST
// /api/long-story/videos/{videoId}/scenes/{n}/regenerate
// (functions/long-story-regenerate): one scene made again, charged alone.
func LongStoryRegenerate() Route {
	return Route{Method: http.MethodPost, Path: "/api/long-story/videos/{videoId}/scenes/{n}/regenerate", Function: "long-story-regenerate", Auth: authorizer, Scope: domain.ScopeGenerate,
		handler: func(p Ports) httpapi.Handler { return httpapi.LongVideoRegenerateRoute(p.VideoRegenerator, p.Gate) },
		uses: func(p Ports) error {
			return errors.Join(need("Gate", p.Gate), need("VideoRegenerator", p.VideoRegenerator))
		}}
}

// LongStoryOutputDelete is DELETE /api/long-story/videos/{videoId}/output (functions/long-story-output-delete).
func LongStoryOutputDelete() Route {
	return Route{Method: http.MethodDelete, Path: "/api/long-story/videos/{videoId}/output", Function: "long-story-output-delete", Auth: authorizer, Scope: domain.ScopeGenerate,
		handler: func(p Ports) httpapi.Handler { return httpapi.LongVideoOutputDeleteRoute(p.VideoRemover, p.Gate) },
		uses: func(p Ports) error {
			return errors.Join(need("Gate", p.Gate), need("VideoRemover", p.VideoRemover))
		}}
}

// Account is GET /api/account (functions/account).
func Account() Route {
	return Route{Method: http.MethodGet, Path: "/api/account", Function: "account", Auth: authorizer, Scope: domain.ScopeRead,
		handler: func(p Ports) httpapi.Handler { return (&httpapi.Account{Secrets: p.Secrets, Gate: p.Gate}).Get() },
		uses: func(p Ports) error {
			return errors.Join(need("Gate", p.Gate), need("Secrets", p.Secrets))
		}}
}

// AccountTransactions is GET /api/account/transactions (functions/account-transactions).
func AccountTransactions() Route {
	return Route{Method: http.MethodGet, Path: "/api/account/transactions", Function: "account-transactions", Auth: authorizer, Scope: domain.ScopeRead,
		handler: func(p Ports) httpapi.Handler { return httpapi.TransactionsRoute(p.Gate, p.Journal) },
		uses: func(p Ports) error {
			return errors.Join(need("Gate", p.Gate), need("Journal", p.Journal))
		}}
}

// AccountUsage is GET /api/account/usage (functions/account-usage).
func AccountUsage() Route {
	return Route{Method: http.MethodGet, Path: "/api/account/usage", Function: "account-usage", Auth: authorizer, Scope: domain.ScopeRead,
		handler: func(p Ports) httpapi.Handler { return httpapi.UsageRoute(p.Gate, p.Usage) },
		uses: func(p Ports) error {
			return errors.Join(need("Gate", p.Gate), need("Usage", p.Usage))
		}}
}

// AccountKeyCreate is POST /api/account/keys (functions/account-key-create).
func AccountKeyCreate() Route {
	return Route{Method: http.MethodPost, Path: "/api/account/keys", Function: "account-key-create", Auth: authorizer, Scope: domain.ScopeAdmin,
		handler: func(p Ports) httpapi.Handler { return httpapi.KeyCreateRoute(p.KeyCreator, p.Gate) },
		uses: func(p Ports) error {
			return errors.Join(need("Gate", p.Gate), need("KeyCreator", p.KeyCreator))
		}}
}

// AccountKeysList is GET /api/account/keys (functions/account-keys-list).
func AccountKeysList() Route {
	return Route{Method: http.MethodGet, Path: "/api/account/keys", Function: "account-keys-list", Auth: authorizer, Scope: domain.ScopeAdmin,
		handler: func(p Ports) httpapi.Handler { return httpapi.KeysListRoute(p.KeyLister, p.Gate) },
		uses: func(p Ports) error {
			return errors.Join(need("Gate", p.Gate), need("KeyLister", p.KeyLister))
		}}
}

// AccountKeyRevoke is DELETE /api/account/keys/{prefix} (functions/account-key-revoke).
func AccountKeyRevoke() Route {
	return Route{Method: http.MethodDelete, Path: "/api/account/keys/{prefix}", Function: "account-key-revoke", Auth: authorizer, Scope: domain.ScopeAdmin,
		handler: func(p Ports) httpapi.Handler { return httpapi.KeyRevokeRoute(p.KeyRevoker, p.Gate) },
		uses: func(p Ports) error {
			return errors.Join(need("Gate", p.Gate), need("KeyRevoker", p.KeyRevoker))
		}}
}

// AccountWebhookSecretRotate is POST /api/account/webhook-secret/rotate (functions/account-webhook-secret-rotate).
func AccountWebhookSecretRotate() Route {
	return Route{Method: http.MethodPost, Path: "/api/account/webhook-secret/rotate", Function: "account-webhook-secret-rotate", Auth: authorizer, Scope: domain.ScopeAdmin,
		handler: func(p Ports) httpapi.Handler { return httpapi.WebhookSecretRotateRoute(p.SecretRotator, p.Gate) },
		uses: func(p Ports) error {
			return errors.Join(need("Gate", p.Gate), need("SecretRotator", p.SecretRotator))
		}}
}

// LongStoryVoices is GET /api/long-story/voices
// (functions/long-story-voices).
func LongStoryVoices() Route {
	return Route{Method: http.MethodGet, Path: "/api/long-story/voices", Function: "long-story-voices", Auth: authorizer, Scope: domain.ScopeRead,
		handler: func(p Ports) httpapi.Handler { return httpapi.LongVideoVoicesRoute(p.VoiceLister, p.Gate) },
		uses: func(p Ports) error {
			return errors.Join(need("Gate", p.Gate), need("VoiceLister", p.VoiceLister))
		}}
}

// Models is GET /api/models (functions/models).
func Models() Route {
	return Route{Method: http.MethodGet, Path: "/api/models", Function: "models", Auth: Public, Scope: "",
		handler: func(p Ports) httpapi.Handler { return (&httpapi.Models{Prices: p.Prices, Log: p.Log}).List() },
		uses: func(p Ports) error {
			return errors.Join(need("Prices", p.Prices), need("Log", p.Log))
		}}
}

// OpenAPI is GET /api/openapi.json (functions/open-api).
func OpenAPI() Route {
	return Route{Method: http.MethodGet, Path: "/api/openapi.json", Function: "open-api", Auth: Public, Scope: "",
		handler: func(Ports) httpapi.Handler { return httpapi.OpenAPI() },
		uses:    func(Ports) error { return nil }}
}

// UpstreamWebhook is POST /api/upstream/webhook (functions/upstream-webhook).
func UpstreamWebhook() Route {
	return Route{Method: http.MethodPost, Path: UpstreamWebhookPath, Function: "upstream-webhook", Auth: Public, Scope: "",
		handler: func(p Ports) httpapi.Handler { return httpapi.UpstreamWebhookRoute(p.UpstreamCallbacks, p.Log) },
		uses: func(p Ports) error {
			return errors.Join(need("UpstreamCallbacks", p.UpstreamCallbacks), need("Log", p.Log))
		}}
}

// StreamFunction is the folder of the function that serves the event
// streams (StreamTable) through its function URL.
const StreamFunction = "event-stream"

// StreamRoute is a route whose answer is streamed (text/event-stream). An
// HTTP API cannot stream: it buffers a function's whole answer. So these
// routes are not the HTTP API's: one function (StreamFunction) serves
// them all behind a Lambda function URL with InvokeMode RESPONSE_STREAM,
// matching the path itself, and checks the API key in the function as
// the authorizer does (a function URL has no Lambda authorizer).
type StreamRoute struct {
	Method, Path string
	// Scope is what an API key must hold to call the route.
	Scope   domain.Scope
	handler func(Ports) httpapi.StreamHandler
	uses    func(Ports) error
}

// Key is the route's key: "GET /api/generations/{id}/events".
func (r StreamRoute) Key() string { return r.Method + " " + r.Path }

// Function is the folder of the function that serves the route.
func (r StreamRoute) Function() string { return StreamFunction }

// Build is the route's handler on p; it fails when p lacks a port the
// route uses.
func (r StreamRoute) Build(p Ports) (httpapi.StreamHandler, error) {
	if err := r.uses(p); err != nil {
		return nil, fmt.Errorf("route %s: %w", r.Key(), err)
	}
	return r.handler(p), nil
}

// StreamTable lists the streaming routes (the function URL's).
func StreamTable() []StreamRoute {
	return []StreamRoute{generationEvents(), longStoryEvents()}
}

// generationEvents is GET /api/generations/{id}/events: the generation's
// status view at each change, until it is final.
func generationEvents() StreamRoute {
	return StreamRoute{Method: http.MethodGet, Path: "/api/generations/{id}/events", Scope: domain.ScopeRead,
		handler: func(p Ports) httpapi.StreamHandler {
			return httpapi.GenerationEventsRoute(p.GenerationReader, p.Gate, p.Streams)
		},
		uses: func(p Ports) error {
			return errors.Join(need("Gate", p.Gate), need("GenerationReader", p.GenerationReader), need("Streams.Leases", p.Streams.Leases))
		}}
}

// longStoryEvents is GET /api/long-story/videos/{videoId}/events: the
// video's status view (each scene's state with it) at each change, until
// it is final.
func longStoryEvents() StreamRoute {
	return StreamRoute{Method: http.MethodGet, Path: "/api/long-story/videos/{videoId}/events", Scope: domain.ScopeRead,
		handler: func(p Ports) httpapi.StreamHandler {
			return httpapi.LongVideoEventsRoute(p.VideoReader, p.Gate, p.Streams)
		},
		uses: func(p Ports) error {
			return errors.Join(need("Gate", p.Gate), need("VideoReader", p.VideoReader), need("Streams.Leases", p.Streams.Leases))
		}}
}

// Functions maps each route's key to its function's folder.
func Functions() map[string]string {
	out := map[string]string{}
	for _, r := range Table() {
		out[r.Key()] = r.Function
	}
	return out
}
