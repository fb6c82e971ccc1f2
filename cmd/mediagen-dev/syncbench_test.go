package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/local/runtime"
)

// make bench's Prefer: wait figure: each waited image is answered
// completed in one request, no sooner than the provider took, and the
// polling client's figure sits beside it.
func TestSyncVsPolledTimesAWaitedImageToItsCompletedAnswer(t *testing.T) {
	const latency = 200 * time.Millisecond
	rt, key, stop, err := benchRuntime(t.Context(), runtime.Config{SimulatorLatency: latency, PollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	waited, polled, err := syncVsPolled(t.Context(), &http.Client{Timeout: time.Minute}, rt, key, 2, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if len(waited) != 2 || len(polled) != 2 {
		t.Fatalf("%d waited and %d polled timings, want 2 each", len(waited), len(polled))
	}
	for i := range waited {
		if waited[i] < latency || polled[i] < latency {
			t.Errorf("image %d: waited %s, polled %s; neither can be under the provider's %s", i, waited[i], polled[i], latency)
		}
	}
}
