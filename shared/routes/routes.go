// Package routes is the HTTP API's route table: for each route its method
// and path, the function that serves it (functions/<Function>), whether the
// gateway's Lambda authorizer guards it, the scope an API key needs, and the
// constructor of its handler from the use cases (Ports).
//
// It is the one list of the routes. Both composition roots build handlers
// from it: the Lambda wiring (each route's function builds the ports its
// route uses and calls Build) and the local runtime (which builds every
// port once and mounts the table). The cost meter names each route's
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
	"reflect"
	"strings"

	"github.com/mediagen-dev/mediagen/shared/accounts"
	"github.com/mediagen-dev/mediagen/shared/domain"
	"github.com/mediagen-dev/mediagen/shared/generation"
	"github.com/mediagen-dev/mediagen/shared/httpapi"
	"github.com/mediagen-dev/mediagen/shared/longstory"
	"github.com/mediagen-dev/mediagen/shared/pricing"
)

// Auth is what the gateway asks of a request before its route runs.
type Auth int

const (
	// Authorizer: the API's default Lambda authorizer (template.yaml's
	// HttpApi DefaultAuthorizer) checks the credentials first.
	Authorizer Auth = iota
	// Public: no authorizer (the event's Auth: {Authorizer: NONE}). The
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
	// uses names the ports handler reads; Build refuses Ports without them.
	uses []string
}

// Key is the route's key as API Gateway writes it: "GET /api/models".
func (r Route) Key() string { return r.Method + " " + r.Path }

// LogicalID is the function's logical ID in template.yaml: the folder in
// CamelCase with "Function" after it (long-story-create:
// LongStoryCreateFunction).
func (r Route) LogicalID() string { return LogicalID(r.Function) }

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

	VideoCreator  *longstory.Creator
	VideoReader   *longstory.Reader
	VideoCanceler *longstory.Canceler
	VideoRemover  *longstory.OutputRemover

	Secrets       httpapi.SecretStore
	Journal       httpapi.JournalReader
	Usage         httpapi.UsageReader
	KeyCreator    *accounts.KeyCreator
	KeyLister     *accounts.KeyLister
	KeyRevoker    *accounts.KeyRevoker
	SecretRotator *accounts.WebhookSecretRotator
}

// ErrMissingPort is a Ports without a port its route uses.
var ErrMissingPort = errors.New("missing port")

// Build is the route's handler on p. It fails when p lacks a port the
// route uses, so a function wired without one fails at its start, not at
// its first request.
func (r Route) Build(p Ports) (httpapi.Handler, error) {
	v := reflect.ValueOf(p)
	for _, name := range r.uses {
		f := v.FieldByName(name)
		if !f.IsValid() {
			return nil, fmt.Errorf("route %s uses %s, which is no field of routes.Ports", r.Key(), name)
		}
		if f.IsNil() {
			return nil, fmt.Errorf("route %s: %w %s", r.Key(), ErrMissingPort, name)
		}
	}
	return r.handler(p), nil
}

// Table lists every route of the API. It is a function, not a variable, so
// a binary that never calls it links none of the other routes' code.
func Table() []Route {
	const (
		get, post, del = http.MethodGet, http.MethodPost, http.MethodDelete
		read, generate = domain.ScopeRead, domain.ScopeGenerate
		admin          = domain.ScopeAdmin
	)
	return []Route{
		{post, "/api/generations/generate", "generate", Authorizer, generate,
			func(p Ports) httpapi.Handler { return httpapi.GenerateRoute(p.GenerationCreator, p.Gate) },
			[]string{"Gate", "GenerationCreator"}},
		{get, "/api/generations/status/{id}", "status", Authorizer, read,
			func(p Ports) httpapi.Handler { return httpapi.GenerationStatusRoute(p.GenerationReader, p.Gate) },
			[]string{"Gate", "GenerationReader"}},
		{get, "/api/generations", "generations-list", Authorizer, read,
			func(p Ports) httpapi.Handler { return httpapi.GenerationsListRoute(p.GenerationReader, p.Gate) },
			[]string{"Gate", "GenerationReader"}},
		{post, "/api/generations/estimate", "generation-estimate", Authorizer, read,
			func(p Ports) httpapi.Handler { return httpapi.GenerationEstimateRoute(p.GenerationEstimate, p.Gate) },
			[]string{"Gate", "GenerationEstimate"}},
		{post, "/api/generations/{id}/cancel", "generation-cancel", Authorizer, generate,
			func(p Ports) httpapi.Handler { return httpapi.GenerationCancelRoute(p.GenerationCanceler, p.Gate) },
			[]string{"Gate", "GenerationCanceler"}},
		{del, "/api/generations/{id}/output", "generation-output-delete", Authorizer, generate,
			func(p Ports) httpapi.Handler { return httpapi.GenerationOutputDeleteRoute(p.GenerationRemover, p.Gate) },
			[]string{"Gate", "GenerationRemover"}},
		{post, "/api/long-story/videos/estimate", "long-story-estimate", Authorizer, read,
			func(p Ports) httpapi.Handler { return httpapi.LongVideoEstimateRoute(p.Prices, p.Gate) },
			[]string{"Gate", "Prices"}},
		{post, "/api/long-story/videos", "long-story-create", Authorizer, generate,
			func(p Ports) httpapi.Handler { return httpapi.LongVideoCreateRoute(p.VideoCreator, p.Gate) },
			[]string{"Gate", "VideoCreator"}},
		{get, "/api/long-story/videos/{videoId}", "long-story-status", Authorizer, read,
			func(p Ports) httpapi.Handler { return httpapi.LongVideoStatusRoute(p.VideoReader, p.Gate) },
			[]string{"Gate", "VideoReader"}},
		{get, "/api/long-story/videos", "long-story-list", Authorizer, read,
			func(p Ports) httpapi.Handler { return httpapi.LongVideosListRoute(p.VideoReader, p.Gate) },
			[]string{"Gate", "VideoReader"}},
		{post, "/api/long-story/videos/{videoId}/cancel", "long-story-cancel", Authorizer, generate,
			func(p Ports) httpapi.Handler { return httpapi.LongVideoCancelRoute(p.VideoCanceler, p.Gate) },
			[]string{"Gate", "VideoCanceler"}},
		{del, "/api/long-story/videos/{videoId}/output", "long-story-output-delete", Authorizer, generate,
			func(p Ports) httpapi.Handler { return httpapi.LongVideoOutputDeleteRoute(p.VideoRemover, p.Gate) },
			[]string{"Gate", "VideoRemover"}},
		{get, "/api/account", "account", Authorizer, read,
			func(p Ports) httpapi.Handler { return (&httpapi.Account{Secrets: p.Secrets, Gate: p.Gate}).Get() },
			[]string{"Gate", "Secrets"}},
		{get, "/api/account/transactions", "account-transactions", Authorizer, read,
			func(p Ports) httpapi.Handler { return httpapi.TransactionsRoute(p.Gate, p.Journal) },
			[]string{"Gate", "Journal"}},
		{get, "/api/account/usage", "account-usage", Authorizer, read,
			func(p Ports) httpapi.Handler { return httpapi.UsageRoute(p.Gate, p.Usage) },
			[]string{"Gate", "Usage"}},
		{post, "/api/account/keys", "account-key-create", Authorizer, admin,
			func(p Ports) httpapi.Handler { return httpapi.KeyCreateRoute(p.KeyCreator, p.Gate) },
			[]string{"Gate", "KeyCreator"}},
		{get, "/api/account/keys", "account-keys-list", Authorizer, admin,
			func(p Ports) httpapi.Handler { return httpapi.KeysListRoute(p.KeyLister, p.Gate) },
			[]string{"Gate", "KeyLister"}},
		{del, "/api/account/keys/{prefix}", "account-key-revoke", Authorizer, admin,
			func(p Ports) httpapi.Handler { return httpapi.KeyRevokeRoute(p.KeyRevoker, p.Gate) },
			[]string{"Gate", "KeyRevoker"}},
		{post, "/api/account/webhook-secret/rotate", "account-webhook-secret-rotate", Authorizer, admin,
			func(p Ports) httpapi.Handler { return httpapi.WebhookSecretRotateRoute(p.SecretRotator, p.Gate) },
			[]string{"Gate", "SecretRotator"}},
		{get, "/api/models", "models", Public, "",
			func(p Ports) httpapi.Handler { return (&httpapi.Models{Prices: p.Prices, Log: p.Log}).List() },
			[]string{"Prices", "Log"}},
		{get, "/api/openapi.json", "open-api", Public, "",
			func(Ports) httpapi.Handler { return httpapi.OpenAPI() },
			nil},
		{post, "/api/upstream/webhook", "upstream-webhook", Public, "",
			func(p Ports) httpapi.Handler { return httpapi.UpstreamWebhookRoute(p.UpstreamCallbacks, p.Log) },
			[]string{"UpstreamCallbacks", "Log"}},
	}
}

// OfFunction is the route served by functions/<folder>.
func OfFunction(folder string) (Route, bool) {
	for _, r := range Table() {
		if r.Function == folder {
			return r, true
		}
	}
	return Route{}, false
}

// Functions maps each route's key to its function's folder.
func Functions() map[string]string {
	out := map[string]string{}
	for _, r := range Table() {
		out[r.Key()] = r.Function
	}
	return out
}
