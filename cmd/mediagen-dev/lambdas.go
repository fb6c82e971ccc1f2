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

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/routing"
	"github.com/mediagen-dev/mediagen/internal/local/lambdastack"
	"github.com/mediagen-dev/mediagen/internal/local/runtime"
	"github.com/mediagen-dev/mediagen/internal/testkit/testsupport"
)

// lambdas runs the deployed shape until ctx ends (docs/deploy.md): the
// flags it shares with mediagen serve mean what they mean there.
func lambdas(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("lambdas", flag.ContinueOnError)
	var cfg runtime.Config
	logLevel := runtime.CommonFlags(fs, &cfg)
	err := parse(fs, args)
	if errors.Is(err, errHelp) {
		return exitOK
	} else if err != nil {
		return fail(stderr, exitUsage, fmt.Errorf("lambdas: %w", err))
	}
	if err := runtime.CheckLoopback(cfg.Addr); err != nil {
		return fail(stderr, exitUsage, fmt.Errorf("lambdas: --addr %s: the deployed shape listens on loopback only", cfg.Addr))
	}
	if cfg.Routing, err = routing.Load(cfg.RoutingFile); err != nil {
		return fail(stderr, exitUsage, fmt.Errorf("lambdas: %w", err))
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fail(stderr, exitUsage, fmt.Errorf("lambdas: --log-level: %w", err))
	}
	cfg.Log = domain.NewJSONLogger(stderr, &slog.HandlerOptions{Level: level})
	return serveLambdas(ctx, cfg, stdout, stderr)
}

// serveLambdas runs the deployed shape (lambdastack) until ctx ends: what
// serve prints, plus each function's role, and each process as it starts.
func serveLambdas(ctx context.Context, cfg runtime.Config, stdout, stderr io.Writer) int {
	root, err := testsupport.ModuleRoot()
	if err != nil {
		return fail(stderr, exitError, fmt.Errorf("mediagen-dev lambdas builds the functions from the source tree (run it from the repository): %w", err))
	}
	dir := filepath.Join(cfg.DataDir, "lambdas")
	// moto keeps nothing across runs: each run starts on a fresh stack.
	if err := os.RemoveAll(dir); err != nil {
		return fail(stderr, exitError, fmt.Errorf("mediagen-dev lambdas: %w", err))
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
		return fail(stderr, exitError, fmt.Errorf("mediagen-dev lambdas: %w", err))
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
