package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mediagen-dev/mediagen/shared/domain"
	"github.com/mediagen-dev/mediagen/shared/local/lambdastack"
	"github.com/mediagen-dev/mediagen/shared/local/runtime"
	"github.com/mediagen-dev/mediagen/shared/routing"
	"github.com/mediagen-dev/mediagen/shared/store/dynamostore"
	"github.com/mediagen-dev/mediagen/shared/testsupport"
)

// serve runs the local runtime until ctx ends (Ctrl-C): on the embedded
// store, or with --dynamodb on DynamoDB tables made before by `mediagen
// tables create` (the adapter the Lambda functions use).
func serve(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var cfg runtime.Config
	fs.StringVar(&cfg.Addr, "addr", "127.0.0.1:8080", "listen address of the API and the playground (loopback unless --allow-remote)")
	fs.StringVar(&cfg.FilesAddr, "files-addr", "", "listen address of the outputs' own origin, read only (default: --addr's port + 1)")
	fs.StringVar(&cfg.S3Addr, "s3-addr", "", "listen address of the object store's S3 API, for the service only (default: --addr's port + 2)")
	fs.BoolVar(&cfg.AllowRemote, "allow-remote", false, "listen on addresses other machines can reach (prints what becomes reachable)")
	fs.StringVar(&cfg.DataDir, "data", ".mediagen", "data directory: store, outputs, dev account")
	fs.DurationVar(&cfg.SimulatorLatency, "sim-latency", 300*time.Millisecond, "upstream simulator latency before rendering")
	fs.DurationVar(&cfg.PollInterval, "poll-interval", time.Second, "first delay between polls of a job")
	fs.StringVar(&cfg.PriceFile, "price-file", os.Getenv("PRICE_FILE"), "price file (default: the embedded one)")
	fs.StringVar(&cfg.JWTIssuer, "jwt-issuer", os.Getenv("JWT_ISSUER"), "identity-provider issuer (optional)")
	fs.StringVar(&cfg.JWTAudience, "jwt-audience", os.Getenv("JWT_AUDIENCE"), "identity-provider audience")
	fs.StringVar(&cfg.JWKSURL, "jwks-url", os.Getenv("JWKS_URL"), "identity-provider JWKS URL")
	fs.StringVar(&cfg.RoutingFile, "routing", os.Getenv("ROUTING_FILE"), "routing file: which upstream runs each variant (default: the embedded one, every variant on the built-in simulator)")
	fs.StringVar(&cfg.PublicBaseURL, "public-url", os.Getenv("PUBLIC_BASE_URL"), "where an upstream off this machine can call back (a tunnel to --addr); without it they complete by polling")
	fs.StringVar(&cfg.SimulatorAddr, "sim-addr", "127.0.0.1:8090", "the built-in simulator's API address (loopback unless --allow-remote)")
	fs.StringVar(&cfg.SimulatorFilesAddr, "sim-files-addr", "", "the built-in simulator's files origin (https, its CA in <data>/simulator/ca.pem; default: 127.0.0.2 on --sim-addr's port)")
	fs.DurationVar(&cfg.AuthCacheTTL, "auth-cache-ttl", 0, "reuse the authorizer's answer for the same Authorization header this long, as API Gateway does (the template's AuthorizerCacheTtl, 60s); a revoked key is then accepted until its answer expires (0: no cache, revocation at once)")
	fs.Func("webhook-allow", "a webhook receiver on this machine, HOST:PORT (repeatable): webhooks may reach these loopback ports and no other (default: none)", func(s string) error {
		if _, err := runtime.ParseWebhookAllow(s); err != nil {
			return err
		}
		cfg.WebhookAllow = append(cfg.WebhookAllow, s)
		return nil
	})
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	lambdas := fs.Bool("lambdas", false, "run the deployed shape: template.yaml expanded by aws-sam-translator, every function's built bootstrap as its own process with its template environment and IAM role, on moto's server with IAM enforced (docs/deploy.md#the-deployed-shape-locally-serve---lambdas)")
	var df dynamoFlags
	df.register(fs)
	err := parse(fs, args)
	if errors.Is(err, errHelp) {
		return exitOK
	} else if err != nil {
		return fail(stderr, exitUsage, fmt.Errorf("serve: %w", err))
	}
	if cfg.AuthCacheTTL < 0 {
		return fail(stderr, exitUsage, fmt.Errorf("serve: --auth-cache-ttl %s: want 0 (no cache) or more", cfg.AuthCacheTTL))
	}
	if cfg.Routing, err = routing.Load(cfg.RoutingFile); err != nil {
		return fail(stderr, exitUsage, fmt.Errorf("serve: %w", err))
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fail(stderr, exitUsage, fmt.Errorf("serve: --log-level: %w", err))
	}
	if !cfg.AllowRemote {
		for _, a := range []struct{ flag, addr string }{{"--addr", cfg.Addr}, {"--files-addr", cfg.FilesAddr}, {"--s3-addr", cfg.S3Addr}, {"--sim-addr", cfg.SimulatorAddr}, {"--sim-files-addr", cfg.SimulatorFilesAddr}} {
			if a.addr == "" {
				continue
			}
			if err := runtime.CheckLoopback(a.addr); err != nil {
				return fail(stderr, exitUsage, fmt.Errorf("serve: %s %s: the local runtime listens on loopback only (127.0.0.1); "+
					"--allow-remote lets other machines reach it", a.flag, a.addr))
			}
		}
	}
	cfg.Log = domain.NewJSONLogger(stderr, &slog.HandlerOptions{Level: level})
	if *lambdas {
		if df.dynamo {
			return fail(stderr, exitUsage, errors.New("serve: --lambdas makes its own tables in moto; it takes no --dynamodb"))
		}
		return serveLambdas(ctx, cfg, stdout, stderr)
	}
	where := "data in " + cfg.DataDir
	if df.dynamo {
		client, err := df.dynamoClient(ctx)
		if err != nil {
			return fail(stderr, exitError, fmt.Errorf("serve: %w", err))
		}
		tables := df.tables()
		if err := tablesExist(ctx, client, tables); err != nil {
			return fail(stderr, exitError, fmt.Errorf("serve: %w", err))
		}
		cfg.DynamoDB = &runtime.DynamoDBConfig{Client: client, Tables: tables}
		where = fmt.Sprintf("records in DynamoDB tables %s, …; outputs in %s", tables.Accounts, cfg.DataDir)
	}
	rt, err := runtime.Start(ctx, cfg)
	if err != nil {
		return fail(stderr, exitError, fmt.Errorf("serve: %w", err))
	}
	if cfg.AllowRemote {
		fmt.Fprintf(stderr, `WARNING: --allow-remote: other machines that can reach these addresses reach
  %s  the API (with any key of this data directory), the playground and
      the dashboard;
  %s  every output whose URL they know (read only);
  %s  the object store's S3 API (signed requests with the local credentials
      local/local: read, write and delete every output);
  %s  the upstream simulator, when the routing file uses it (it renders
      media for anyone holding its token), and its files;
The local runtime has no TLS: keys and outputs cross the network in clear.
`, rt.BaseURL, rt.FilesURL, rt.Objects.Endpoint, cfg.SimulatorAddr)
	}
	simulatorLine := ""
	if sim := rt.Simulator; sim != nil {
		simulatorLine = fmt.Sprintf("  simulator: %s/v1 (Replicate), %s (fal queue), token %s\n"+
			"  simulator files: %s   (its outputs; https with its own CA)\n"+
			"  simulator CA: %s   (trust it with NODE_EXTRA_CA_CERTS or SSL_CERT_FILE)\n",
			sim.BaseURL, sim.FalURL, sim.Token, sim.FilesURL, sim.CA.File)
	}
	fmt.Fprintf(stdout, `mediagen is running (%s; Ctrl-C stops it)

  base URL: %s   (the playground: open it in a browser)
  dashboard: %s/dashboard   (the account: balance, usage, transactions, API keys)
  outputs:  %s   (read only, an origin of their own)
  API key:  %s   (dev account %s)
%s
  export MEDIAGEN_BASE_URL=%s MEDIAGEN_API_KEY=%s
  curl -s "$MEDIAGEN_BASE_URL/api/generations/generate" -H "Authorization: Bearer $MEDIAGEN_API_KEY" \
    -H 'Content-Type: application/json' -H 'accept: application/json' \
    -d '{"model":"provider-a","model_version":"theta-4-fast","input":{"prompt":"a lighthouse at dawn"},"image_count":1}'
`, where, rt.BaseURL, rt.BaseURL, rt.FilesURL, rt.Dev.APIKey, rt.Dev.UserID, simulatorLine, rt.BaseURL, rt.Dev.APIKey)
	<-ctx.Done()
	fmt.Fprintln(stdout, "stopping…")
	shutdown, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := rt.Close(shutdown); err != nil {
		return fail(stderr, exitError, fmt.Errorf("serve: stop: %w", err))
	}
	return exitOK
}

// tablesExist checks that every table of the store is there, so that serve
// stops at once with the fix rather than failing its first request.
func tablesExist(ctx context.Context, client dynamodb.DescribeTableAPIClient, t dynamostore.Tables) error {
	for _, in := range dynamostore.Schema(t) {
		if _, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: in.TableName}); err != nil {
			var missing *types.ResourceNotFoundException
			if errors.As(err, &missing) {
				return fmt.Errorf("DynamoDB table %s does not exist: run `mediagen tables create --dynamodb` with the same --endpoint-url and --table-prefix first", aws.ToString(in.TableName))
			}
			return fmt.Errorf("DynamoDB table %s: %w", aws.ToString(in.TableName), err)
		}
	}
	return nil
}

// serveLambdas runs the deployed shape (lambdastack) until ctx ends: what
// serve prints, plus each function's role, and each process as it starts.
func serveLambdas(ctx context.Context, cfg runtime.Config, stdout, stderr io.Writer) int {
	root, err := testsupport.ModuleRoot()
	if err != nil {
		return fail(stderr, exitError, fmt.Errorf("serve --lambdas builds the functions from the source tree (run it from the repository): %w", err))
	}
	dir := filepath.Join(cfg.DataDir, "lambdas")
	// moto keeps nothing across runs: each run starts on a fresh stack.
	if err := os.RemoveAll(dir); err != nil {
		return fail(stderr, exitError, fmt.Errorf("serve --lambdas: %w", err))
	}
	// --webhook-allow opens its ports to the deployed functions too
	// (WEBHOOK_LOOPBACK_PORTS); the provider's callbacks are on at the
	// API's own URL unless --public-url names another (the template's
	// PublicBaseUrl), as serve has them.
	var ports []uint16
	for _, hp := range cfg.WebhookAllow {
		port, err := runtime.ParseWebhookAllow(hp)
		if err != nil {
			return fail(stderr, exitUsage, err)
		}
		ports = append(ports, port)
	}
	params := map[string]string{}
	switch {
	case cfg.NoUpstreamWebhooks:
		params["PublicBaseUrl"] = ""
	case cfg.PublicBaseURL != "":
		params["PublicBaseUrl"] = cfg.PublicBaseURL
	}
	l, err := lambdastack.StartLocal(ctx, lambdastack.LocalConfig{
		Config: lambdastack.Config{Root: root, Dir: dir, Addr: cfg.Addr, Log: cfg.Log, Progress: stdout,
			Parameters: params, WebhookLoopbackPorts: ports},
		SimulatorLatency: cfg.SimulatorLatency, Routing: cfg.Routing})
	if err != nil {
		return fail(stderr, exitError, fmt.Errorf("serve --lambdas: %w", err))
	}
	defer l.Close()
	fns := l.Functions()
	fmt.Fprintf(stdout, "\nmediagen is running as deployed (%d functions, logs in %s; Ctrl-C stops it)\n\n", len(fns), filepath.Join(dir, "logs"))
	for _, name := range slices.Sorted(maps.Keys(fns)) {
		fn := fns[name]
		fmt.Fprintf(stdout, "  %-36s role %s, timeout %s, %d MB\n", name, fn.Role, fn.Timeout, fn.MemoryMB)
	}
	machines := l.StateMachines()
	for _, name := range slices.Sorted(maps.Keys(machines)) {
		fmt.Fprintf(stdout, "  %-36s %s (the local ASL runner; the Step Functions API at moto's endpoint)\n", name, machines[name].ARN)
	}
	rules := l.EventRules()
	for _, name := range slices.Sorted(maps.Keys(rules)) {
		fmt.Fprintf(stdout, "  %-36s event rule → %s\n", name, strings.Join(rules[name], ", "))
	}
	fmt.Fprintf(stdout, `
  base URL: %s   (the HTTP API: no playground or dashboard in the deployed shape)
  outputs:  %s   (the CDN's stand-in, TLS with a certificate of its own: curl -k)
  moto:     %s   (IAM enforced; its refusals in %s)
  API key:  %s   (dev account %s)
  simulator: %s/v1 (Replicate), %s (fal queue)
  streams:  %s   (the stream function's URL, the StreamUrl output: GET <it>api/generations/{id}/events)

  export MEDIAGEN_BASE_URL=%s MEDIAGEN_API_KEY=%s MEDIAGEN_STREAM_URL=%s
`, l.BaseURL, l.Media.URL, l.Moto.Endpoint, filepath.Join(dir, "logs", "moto-access.log"), l.Dev.APIKey, l.Dev.UserID,
		l.Simulator.BaseURL, l.Simulator.FalURL, l.FunctionURLs["EventStreamFunctionUrl"], l.BaseURL, l.Dev.APIKey,
		l.FunctionURLs["EventStreamFunctionUrl"])
	<-ctx.Done()
	fmt.Fprintln(stdout, "stopping…")
	return exitOK
}
