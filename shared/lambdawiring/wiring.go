// Package lambdawiring is the Lambda wiring: it builds each function's
// handler from the production adapters (DynamoDB, SQS, S3, Secrets
// Manager, the hosted provider) from the environment the template sets.
// Each function builds only what its handler uses.
package lambdawiring

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/mediagen-dev/mediagen/shared/generation"
	"github.com/mediagen-dev/mediagen/shared/httpapi"
	"github.com/mediagen-dev/mediagen/shared/jwtauth"
	"github.com/mediagen-dev/mediagen/shared/media"
	"github.com/mediagen-dev/mediagen/shared/netguard"
	"github.com/mediagen-dev/mediagen/shared/pricing"
	"github.com/mediagen-dev/mediagen/shared/routing"
	"github.com/mediagen-dev/mediagen/shared/s3bucket"
	"github.com/mediagen-dev/mediagen/shared/sqsqueue"
	"github.com/mediagen-dev/mediagen/shared/store/dynamostore"
	"github.com/mediagen-dev/mediagen/shared/upstream"
	"github.com/mediagen-dev/mediagen/shared/webhook"
)

// Environment variables read here (the table names are in dynamostore).
const (
	EnvPollQueueURL = "POLL_QUEUE_URL"
	EnvOutputBucket = "OUTPUT_BUCKET"
	EnvMediaBaseURL = "MEDIA_BASE_URL"
	// EnvRoutingFile is the routing file's path in the package; empty is
	// the embedded default, which names the local simulator and is refused.
	EnvRoutingFile = "ROUTING_FILE"
	// EnvUpstreamTokensSecret names the Secrets Manager secret holding
	// {"<upstream name>": "<token>"}; EnvUpstreamTokens gives that JSON
	// directly (sam local invoke only).
	EnvUpstreamTokensSecret = "UPSTREAM_TOKENS_SECRET_ARN"
	EnvUpstreamTokens       = "UPSTREAM_TOKENS"
	EnvPriceFile            = "PRICE_FILE"
	EnvJWTIssuer            = "JWT_ISSUER"
	EnvJWTAudience          = "JWT_AUDIENCE"
	EnvJWKSURL              = "JWKS_URL"
	// EnvWebhookQueueURL is the queue of webhook deliveries.
	EnvWebhookQueueURL = "WEBHOOK_QUEUE_URL"
	// EnvPublicBaseURL is the API's own URL, where the provider calls back
	// (POST /api/upstream/webhook); unset, generations complete by polling.
	EnvPublicBaseURL = "PUBLIC_BASE_URL"
)

// Getenv is how the wiring reads its environment. Tests replace it to learn
// which variables each function reads.
var Getenv = os.Getenv

// Logger is the JSON logger every function uses.
func Logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(os.Stdout, nil))
}

func required(name string) (string, error) {
	v := Getenv(name)
	if v == "" {
		return "", fmt.Errorf("environment variable %s is not set", name)
	}
	return v, nil
}

// Store is the DynamoDB store on the template's tables.
func Store(cfg aws.Config) *dynamostore.Store {
	return dynamostore.New(dynamodb.NewFromConfig(cfg), dynamostore.TablesFromEnv(Getenv))
}

// Gate authenticates requests against the store, and tokens when the
// identity provider is configured. A GET route's gate stops there.
func Gate(cfg aws.Config, log *slog.Logger) *httpapi.Gate { return gateOn(Store(cfg), log) }

func gateOn(st *dynamostore.Store, log *slog.Logger) *httpapi.Gate {
	g := &httpapi.Gate{Store: st, Log: log}
	if iss := Getenv(EnvJWTIssuer); iss != "" {
		g.Tokens = &jwtauth.Verifier{Issuer: iss, Audience: Getenv(EnvJWTAudience), JWKSURL: Getenv(EnvJWKSURL)}
	}
	return g
}

// PostGate is Gate for a POST route: it also honours Idempotency-Key.
func PostGate(cfg aws.Config, log *slog.Logger) *httpapi.Gate {
	st := Store(cfg)
	g := gateOn(st, log)
	g.Idempotency = &httpapi.Idempotency{Store: st, Log: log}
	return g
}

// Prices is the price file named by PRICE_FILE, or the embedded one.
func Prices() (*pricing.Table, error) {
	if path := Getenv(EnvPriceFile); path != "" {
		return pricing.LoadFile(path)
	}
	return pricing.Default(), nil
}

// Routing reads the routing file ROUTING_FILE names.
func Routing() (*routing.Config, error) {
	path := Getenv(EnvRoutingFile)
	if path == "" {
		return nil, fmt.Errorf("environment variable %s is not set (the embedded routing file runs only on the local simulator)", EnvRoutingFile)
	}
	return routing.Load(path)
}

// Upstreams builds each upstream's client of the routing file, with the
// tokens from the secret UPSTREAM_TOKENS_SECRET_ARN names ({"<upstream>":
// "<token>"}) or, for local invokes, from each upstream's token_env.
func Upstreams(ctx context.Context, cfg aws.Config) (*upstream.Router, error) {
	rc, err := Routing()
	if err != nil {
		return nil, err
	}
	tokens, err := tokenSecret(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return upstream.NewRouter(rc, func(u *routing.Upstream) (string, error) {
		if t := tokens[u.Name]; t != "" {
			return t, nil
		}
		return "", fmt.Errorf("no token: the upstream tokens secret has no key %q", u.Name)
	}, func(u *routing.Upstream) string {
		if u.WebhookSecretEnv == "" {
			return ""
		}
		return Getenv(u.WebhookSecretEnv)
	}, upstream.Tuning{HTTP: &http.Client{Timeout: 20 * time.Second}})
}

// routesOnly is the routing file without tokens, for the functions that
// only read routes and caps (status, lists).
func routesOnly() (*upstream.Router, error) {
	rc, err := Routing()
	if err != nil {
		return nil, err
	}
	return upstream.NewRouter(rc, func(*routing.Upstream) (string, error) { return "", nil }, nil, upstream.Tuning{})
}

// tokenSecret reads the upstreams' tokens: one JSON object in one secret
// (or, for sam local invoke, in UPSTREAM_TOKENS).
func tokenSecret(ctx context.Context, cfg aws.Config) (map[string]string, error) {
	raw, err := secretValue(ctx, cfg, EnvUpstreamTokens, EnvUpstreamTokensSecret, "upstream tokens")
	if err != nil {
		return nil, err
	}
	var tokens map[string]string
	if err := json.Unmarshal([]byte(raw), &tokens); err != nil {
		return nil, errors.New(`the upstream tokens secret is not a JSON object {"<upstream>": "<token>"}`)
	}
	return tokens, nil
}

// secretValue reads a secret from the variable valueEnv (local runs) or
// from the Secrets Manager secret whose ARN arnEnv names.
func secretValue(ctx context.Context, cfg aws.Config, valueEnv, arnEnv, what string) (string, error) {
	arn := Getenv(arnEnv)
	if v := Getenv(valueEnv); v != "" {
		return v, nil
	}
	if arn == "" {
		return "", fmt.Errorf("environment variable %s is not set", arnEnv)
	}
	out, err := secretsmanager.NewFromConfig(cfg).GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(arn)})
	if err != nil {
		return "", fmt.Errorf("read the %s: %w", what, err)
	}
	v := strings.TrimSpace(aws.ToString(out.SecretString))
	if v == "" {
		return "", fmt.Errorf("the %s is empty", what)
	}
	return v, nil
}

// generationParts are the adapters of the generation use cases but the
// estimate and the reads: always the store, the upstreams' clients (their
// tokens from the secret) and the settings; the rest only when a
// generationPart asks for it, so a function reads no variable it does not
// use.
type generationParts struct {
	cfg      aws.Config
	store    *dynamostore.Store
	ups      *upstream.Router
	settings generation.Settings
	queue    *sqsqueue.SQSSender
	prices   *pricing.Table
	notifier webhook.Notifier
	copier   *media.Copier
}

// generationPart wires one optional adapter of generationParts.
type generationPart func(p *generationParts) error

func generationWiring(ctx context.Context, log *slog.Logger, parts ...generationPart) (generationParts, error) {
	cfg, err := AWSConfig(ctx)
	if err != nil {
		return generationParts{}, err
	}
	ups, err := Upstreams(ctx, cfg)
	if err != nil {
		return generationParts{}, err
	}
	p := generationParts{cfg: cfg, store: Store(cfg), ups: ups, settings: generation.Settings{Log: log}}
	if base := Getenv(EnvPublicBaseURL); base != "" {
		p.settings.UpstreamWebhook = strings.TrimSuffix(base, "/") + "/api/upstream/webhook"
	}
	for _, part := range parts {
		if err := part(&p); err != nil {
			return generationParts{}, err
		}
	}
	return p, nil
}

// withGenerationPolls is the queue of the generations' polls (and the
// scenes').
func withGenerationPolls(p *generationParts) (err error) {
	p.queue, err = pollQueue(p.cfg)
	return err
}

func withPrices(p *generationParts) (err error) {
	p.prices, err = Prices()
	return err
}

func withWebhooks(p *generationParts) (err error) {
	p.notifier, err = Notifier(p.cfg)
	return err
}

// withOutputCopier keeps the upstreams' outputs in the output bucket: only
// the poller stores outputs.
func withOutputCopier(p *generationParts) error {
	bucket, err := required(EnvOutputBucket)
	if err != nil {
		return err
	}
	mediaBase, err := required(EnvMediaBaseURL)
	if err != nil {
		return err
	}
	p.copier = copier(s3bucket.New(s3.NewFromConfig(p.cfg), bucket, mediaBase), p.ups.Routing.OutputHosts())
	return nil
}

// pollQueue is the queue of the generations' polls (and the scenes').
func pollQueue(cfg aws.Config) (*sqsqueue.SQSSender, error) {
	queueURL, err := required(EnvPollQueueURL)
	if err != nil {
		return nil, err
	}
	return &sqsqueue.SQSSender{Client: sqs.NewFromConfig(cfg), QueueURL: queueURL}, nil
}

// copier keeps upstream outputs in the bucket, fetching them only from the
// upstreams' output hosts (the routing file's output_hosts).
func copier(bucket *s3bucket.Bucket, hosts []string) *media.Copier {
	return &media.Copier{Bucket: bucket, HTTP: &http.Client{Timeout: 5 * time.Minute}, AllowedHosts: hosts, MaxBytes: 512 << 20,
		AllowLoopback: allLoopback(hosts)}
}

// allLoopback reports whether every output host is this machine: only a
// local invoke against a local upstream is configured so, and only then
// may fetches reach loopback.
func allLoopback(hosts []string) bool {
	for _, entry := range hosts {
		h := entry
		if host, _, err := net.SplitHostPort(entry); err == nil {
			h = host
		}
		if a, err := netip.ParseAddr(strings.Trim(h, "[]")); !strings.EqualFold(h, "localhost") && (err != nil || !netguard.Loopback(a)) {
			return false
		}
	}
	return len(hosts) > 0
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Must ends a function's init with a logged error: Lambda reports the init
// failure and retries on the next invoke.
func Must[T any](v T, err error) T {
	if err != nil {
		Logger().Error("function init failed", "error", err)
		os.Exit(1)
	}
	return v
}

// Notifier enqueues webhook events on the webhook queue.
func Notifier(cfg aws.Config) (webhook.Notifier, error) {
	q, err := webhookQueue(cfg)
	return webhook.Notifier{Queue: q}, err
}

func webhookQueue(cfg aws.Config) (*sqsqueue.SQSSender, error) {
	url, err := required(EnvWebhookQueueURL)
	if err != nil {
		return nil, err
	}
	return &sqsqueue.SQSSender{Client: sqs.NewFromConfig(cfg), QueueURL: url}, nil
}
