// Package runtimetest starts a local runtime for the tests of other packages
// (the client, the mediagen commands, the browser tests): on a free loopback
// port, in a temporary directory, with fast polling, closed when the test
// ends.
package runtimetest

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/local/runtime"
	"github.com/mediagen-dev/mediagen/internal/testkit/testsupport"
	"github.com/mediagen-dev/mediagen/internal/testkit/waitfor"
)

// Start runs a local runtime for the test; zero fields of cfg take fast
// test defaults. MEDIAGEN_TEST_LOGS=1 shows its logs.
func Start(t testing.TB, cfg runtime.Config) *runtime.Runtime {
	t.Helper()
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 100 * time.Millisecond
	}
	if cfg.QueueVisibility == 0 {
		cfg.QueueVisibility = 200 * time.Millisecond
	}
	if cfg.WorkflowWaitScale == 0 {
		cfg.WorkflowWaitScale = 0.05
	}
	if cfg.Timeouts.Integration == 0 {
		// API Gateway's 30 s is for a route's own time; under -race on a
		// loaded 2-core machine a status read has taken longer, and a 503
		// then makes clients send it again (tests counting requests see
		// double). Tests of the 503 itself set their own, shorter bound.
		cfg.Timeouts.Integration = 10 * time.Minute
	}
	if cfg.Log == nil {
		var w io.Writer = io.Discard
		if os.Getenv("MEDIAGEN_TEST_LOGS") != "" {
			w = os.Stderr
		}
		cfg.Log = slog.New(slog.NewJSONHandler(w, nil))
	}
	rt, err := runtime.Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("start the local runtime: %v", err)
	}
	t.Cleanup(func() { waitfor.Close(t, rt.Close) })
	return rt
}

// DynamoDB is a fresh set of the store's tables on moto's server (started
// for the test and stopped when it ends, or the run's DYNAMODB_ENDPOINT),
// for a runtime on DynamoDB (runtime.Config.DynamoDB).
func DynamoDB(t testing.TB) *runtime.DynamoDBConfig {
	t.Helper()
	cfg, _ := DynamoDBStandIn(t)
	return cfg
}

// DynamoDBStandIn is DynamoDB with the stand-in's proxy, whose counts show
// the conflicts a test's load met.
func DynamoDBStandIn(t testing.TB) (*runtime.DynamoDBConfig, *testsupport.ConflictProxy) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	server, err := testsupport.StartDynamoDB(ctx)
	if err != nil {
		t.Fatalf("a runtime on DynamoDB needs moto's server: %v", err)
	}
	t.Cleanup(server.Stop)
	tables, err := server.NewTables(ctx, "rt")
	if err != nil {
		t.Fatal(err)
	}
	return &runtime.DynamoDBConfig{Client: server.Client(), Tables: tables, LedgerBudget: testsupport.StandInLedgerBudget}, server.Proxy
}
