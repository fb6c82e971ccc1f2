// Package lambdawiring is the Lambda wiring: it builds each function's
// handler from the production adapters (DynamoDB, SQS, S3, Secrets
// Manager, Step Functions, Polly, the hosted provider) from the
// environment the template sets. Each function builds only what its
// handler uses. The functions that use no AWS service but DynamoDB are
// wired in storewiring, which this package builds on, so that their
// binaries link none of the other clients; Functions lists them all.
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
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/mediagen-dev/mediagen/internal/adapters/netguard"
	"github.com/mediagen-dev/mediagen/internal/adapters/upstream"
	"github.com/mediagen-dev/mediagen/internal/api/routes"
	"github.com/mediagen-dev/mediagen/internal/aws/dynamostore"
	"github.com/mediagen-dev/mediagen/internal/aws/lambdawiring/storewiring"
	"github.com/mediagen-dev/mediagen/internal/aws/s3bucket"
	"github.com/mediagen-dev/mediagen/internal/aws/sqsqueue"
	"github.com/mediagen-dev/mediagen/internal/core/generation"
	"github.com/mediagen-dev/mediagen/internal/core/media"
	"github.com/mediagen-dev/mediagen/internal/core/pricing"
	"github.com/mediagen-dev/mediagen/internal/core/routing"
	"github.com/mediagen-dev/mediagen/internal/core/webhook"
)

// Environment variables read here (the table names are in dynamostore).
const (
	envPollQueueURL = "POLL_QUEUE_URL"
	envOutputBucket = "OUTPUT_BUCKET"
	envMediaBaseURL = "MEDIA_BASE_URL"
	// envMediaDistributionID is the CloudFront distribution in front of the
	// output bucket (the delete-output functions invalidate there).
	envMediaDistributionID = "MEDIA_DISTRIBUTION_ID"
	// EnvRoutingFile, envPriceFile and the JWT variables are read in
	// storewiring.
	EnvRoutingFile = storewiring.EnvRoutingFile
	// EnvUpstreamTokensSecret names the Secrets Manager secret holding
	// {"<upstream name>": "<token>"}; EnvUpstreamTokens gives that JSON
	// directly (sam local invoke only).
	EnvUpstreamTokensSecret = "UPSTREAM_TOKENS_SECRET_ARN"
	EnvUpstreamTokens       = "UPSTREAM_TOKENS"
	envPriceFile            = storewiring.EnvPriceFile
	envJWTIssuer            = storewiring.EnvJWTIssuer
	envJWTAudience          = storewiring.EnvJWTAudience
	envJWKSURL              = storewiring.EnvJWKSURL
	// envWebhookQueueURL is the queue of webhook deliveries.
	envWebhookQueueURL = "WEBHOOK_QUEUE_URL"
	// envPublicBaseURL is the API's own URL, where the provider calls back
	// (POST /api/upstream/webhook); unset, generations complete by polling.
	envPublicBaseURL = "PUBLIC_BASE_URL"
	// EnvWebhookLoopbackPorts lists ports of this machine ("8080,9090")
	// that a webhook_url may name and a delivery may reach, as serve
	// --webhook-allow opens them: for mediagen-dev lambdas, where the receiver
	// is a local server. Empty in AWS, where a webhook goes to a public
	// host only.
	EnvWebhookLoopbackPorts = "WEBHOOK_LOOPBACK_PORTS"
)

// webhookLoopbackPorts reads EnvWebhookLoopbackPorts (none when empty).
func webhookLoopbackPorts() ([]uint16, error) {
	var ports []uint16
	for _, p := range splitList(storewiring.Getenv(EnvWebhookLoopbackPorts)) {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil || n == 0 {
			return nil, fmt.Errorf("%s: %q is not a port number from 1 to 65535", EnvWebhookLoopbackPorts, p)
		}
		ports = append(ports, uint16(n))
	}
	return ports, nil
}

// upstreams builds each upstream's client of the routing file, with the
// tokens from the secret UPSTREAM_TOKENS_SECRET_ARN names ({"<upstream>":
// "<token>"}) or, for local invokes, from each upstream's token_env.
func upstreams(ctx context.Context, cfg aws.Config) (*upstream.Router, error) {
	rc, err := storewiring.Routing()
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
		return storewiring.Getenv(u.WebhookSecretEnv)
	}, UpstreamTuning)
}

// UpstreamTuning is how the functions call the providers: each try waits
// 20 s at most. A function that creates jobs outside the API's 29 s
// (SubmitScene) has a Timeout well beyond its WorstCase (deploy/ checks it).
var UpstreamTuning = upstream.Tuning{HTTP: &http.Client{Timeout: 20 * time.Second}}

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
	arn := storewiring.Getenv(arnEnv)
	if v := storewiring.Getenv(valueEnv); v != "" {
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
	// outputs is the copier's bucket, which also tags the outputs kept
	// for less than the default retention, and reads the inputs kept in
	// the bucket.
	outputs *s3bucket.Bucket
	// inputs keeps the inputs too large for their record (the generate
	// route's; the poller reads them through outputs).
	inputs *s3bucket.Bucket
}

// generationPart wires one optional adapter of generationParts.
type generationPart func(p *generationParts) error

func generationWiring(ctx context.Context, log *slog.Logger, parts ...generationPart) (generationParts, error) {
	cfg, err := storewiring.AWSConfig(ctx)
	if err != nil {
		return generationParts{}, err
	}
	ups, err := upstreams(ctx, cfg)
	if err != nil {
		return generationParts{}, err
	}
	p := generationParts{cfg: cfg, store: storewiring.Store(cfg), ups: ups, settings: generation.Settings{Log: log}}
	if base := storewiring.Getenv(envPublicBaseURL); base != "" {
		p.settings.UpstreamWebhook = strings.TrimSuffix(base, "/") + routes.UpstreamWebhookPath
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
	p.prices, err = storewiring.Prices()
	return err
}

func withWebhooks(p *generationParts) (err error) {
	p.notifier, err = notifier(p.cfg)
	return err
}

// withOutputCopier keeps the upstreams' outputs in the output bucket: only
// the poller stores outputs.
func withOutputCopier(p *generationParts) error {
	bucket, err := storewiring.Required(envOutputBucket)
	if err != nil {
		return err
	}
	mediaBase, err := storewiring.Required(envMediaBaseURL)
	if err != nil {
		return err
	}
	p.outputs = s3bucket.New(s3.NewFromConfig(p.cfg), bucket, mediaBase)
	p.copier = copier(p.outputs, p.ups.Routing.OutputHosts())
	return nil
}

// withInputObjects keeps the inputs too large for their record in the
// output bucket, under inputs/ (generation.InputObjects).
func withInputObjects(p *generationParts) error {
	bucket, err := storewiring.Required(envOutputBucket)
	if err != nil {
		return err
	}
	p.inputs = s3bucket.New(s3.NewFromConfig(p.cfg), bucket, "")
	return nil
}

// pollQueue is the queue of the generations' polls (and the scenes').
func pollQueue(cfg aws.Config) (*sqsqueue.SQSSender, error) {
	queueURL, err := storewiring.Required(envPollQueueURL)
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

// notifier enqueues webhook events on the webhook queue.
func notifier(cfg aws.Config) (webhook.Notifier, error) {
	q, err := webhookQueue(cfg)
	return webhook.Notifier{Queue: q}, err
}

func webhookQueue(cfg aws.Config) (*sqsqueue.SQSSender, error) {
	url, err := storewiring.Required(envWebhookQueueURL)
	if err != nil {
		return nil, err
	}
	return &sqsqueue.SQSSender{Client: sqs.NewFromConfig(cfg), QueueURL: url}, nil
}
