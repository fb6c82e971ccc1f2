package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mediagen-dev/mediagen/internal/aws/dynamostore"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/routing"
	"github.com/mediagen-dev/mediagen/internal/local/runtime"
)

// serve runs the local runtime until ctx ends (Ctrl-C): on the embedded
// store, or with --dynamodb on DynamoDB tables made before by `mediagen
// tables create` (the adapter the Lambda functions use).
func serve(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var cfg runtime.Config
	logLevel := runtime.CommonFlags(fs, &cfg)
	fs.StringVar(&cfg.FilesAddr, "files-addr", "", "listen address of the outputs' own origin, read only (default: --addr's port + 1)")
	fs.StringVar(&cfg.S3Addr, "s3-addr", "", "listen address of the object store's S3 API, for the service only (default: --addr's port + 2)")
	fs.BoolVar(&cfg.AllowRemote, "allow-remote", false, "listen on addresses other machines can reach (prints what becomes reachable)")
	fs.DurationVar(&cfg.PollInterval, "poll-interval", time.Second, "first delay between polls of a job")
	fs.StringVar(&cfg.PriceFile, "price-file", os.Getenv("PRICE_FILE"), "price file (default: the embedded one)")
	fs.StringVar(&cfg.JWTIssuer, "jwt-issuer", os.Getenv("JWT_ISSUER"), "identity-provider issuer (optional)")
	fs.StringVar(&cfg.JWTAudience, "jwt-audience", os.Getenv("JWT_AUDIENCE"), "identity-provider audience")
	fs.StringVar(&cfg.JWKSURL, "jwks-url", os.Getenv("JWKS_URL"), "identity-provider JWKS URL")
	fs.StringVar(&cfg.SimulatorAddr, "sim-addr", "127.0.0.1:8090", "the built-in simulator's API address (loopback unless --allow-remote)")
	fs.StringVar(&cfg.SimulatorFilesAddr, "sim-files-addr", "", "the built-in simulator's files origin (https, its CA in <data>/simulator/ca.pem; default: 127.0.0.2 on --sim-addr's port)")
	fs.DurationVar(&cfg.AuthCacheTTL, "auth-cache-ttl", 0, "reuse the authorizer's answer for the same Authorization header this long, as API Gateway does (the template's AuthorizerCacheTtl, 60s); a revoked key is then accepted until its answer expires (0: no cache, revocation at once)")
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
