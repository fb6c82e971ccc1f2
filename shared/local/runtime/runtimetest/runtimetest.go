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

	"github.com/mediagen-dev/mediagen/shared/local/runtime"
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
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := rt.Close(ctx); err != nil {
			t.Errorf("close the runtime: %v", err)
		}
	})
	return rt
}
