package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/client"
	"github.com/mediagen-dev/mediagen/internal/local/runtime"
	"github.com/mediagen-dev/mediagen/internal/testkit/clocktest"
	"github.com/mediagen-dev/mediagen/internal/testkit/runtimetest"
)

// countingTransport counts the requests to each kind of route.
type countingTransport struct {
	mu             sync.Mutex
	status, events int
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	switch {
	case strings.HasSuffix(r.URL.Path, "/events"):
		c.events++
	case strings.Contains(r.URL.Path, "/status/"):
		c.status++
	}
	c.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

func (c *countingTransport) counts() (status, events int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.status, c.events
}

// FollowGeneration reads the generation's event stream, not its status
// route: each view the stream sends reaches progress, and the final one
// (here a cancel's) is the answer.
func TestFollowGenerationReadsTheEventStream(t *testing.T) {
	rt := runtimetest.Start(t, runtime.Config{})
	counter := &countingTransport{}
	c := client.New(rt.BaseURL, rt.Dev.APIKey)
	c.HTTP = &http.Client{Transport: counter, Timeout: time.Minute}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	g, err := c.Generate(ctx, client.GenerateRequest{Model: "provider-a", ModelVersion: "theta-4-fast",
		Input: map[string]any{"prompt": "a pier [simulate:hold]"}})
	if err != nil {
		t.Fatal(err)
	}
	seen := make(chan client.GenerationStatus, 100)
	done := make(chan client.GenerationStatus, 1)
	go func() {
		st, err := c.FollowGeneration(ctx, g.UUID, fast, func(s client.GenerationStatus) { seen <- s })
		if err != nil {
			t.Errorf("FollowGeneration: %v", err)
		}
		done <- st
	}()
	if first := <-seen; first.Status != client.StatusProcessing || first.ID != g.UUID {
		t.Fatalf("first view %+v, want %s processing", first, g.UUID)
	}
	if _, err := c.CancelGeneration(ctx, g.UUID); err != nil {
		t.Fatal(err)
	}
	st := <-done
	if st.Status != client.StatusCanceled {
		t.Errorf("FollowGeneration answered %+v, want the canceled view", st)
	}
	if status, events := counter.counts(); status != 0 || events != 1 {
		t.Errorf("%d status reads and %d streams opened; want the one stream and no polling", status, events)
	}
}

// Where the service has no stream (a deployment whose stream URL the
// client was not given: API Gateway answers 404 {"message":"Not Found"}),
// FollowGeneration polls the status route instead.
func TestFollowGenerationPollsWhereThereIsNoStream(t *testing.T) {
	rt := runtimetest.Start(t, runtime.Config{})
	gateway := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"message":"Not Found"}`))
	}))
	defer gateway.Close()
	counter := &countingTransport{}
	c := client.New(rt.BaseURL, rt.Dev.APIKey)
	c.HTTP = &http.Client{Transport: counter, Timeout: time.Minute}
	c.StreamURL = gateway.URL
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	g, err := c.Generate(ctx, client.GenerateRequest{Model: "provider-a", ModelVersion: "theta-4-fast",
		Input: map[string]any{"prompt": "an owl"}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.FollowGeneration(ctx, g.UUID, fast, nil)
	if err != nil || st.Status != client.StatusCompleted {
		t.Fatalf("FollowGeneration = %+v, %v; want completed", st, err)
	}
	if status, _ := counter.counts(); status == 0 {
		t.Error("no status read: the client did not fall back to polling")
	}
}

// A stream whose key is revoked while it streams ends with the service's
// error event: FollowGeneration returns that 401 (the *APIError the API
// answers a revoked key), without resuming, and no view but the stream's
// real ones reaches progress.
func TestFollowGenerationEndsWithTheStreamsErrorEvent(t *testing.T) {
	clk := clocktest.New(time.Now().UTC().Truncate(time.Second))
	rt := runtimetest.Start(t, runtime.Config{StreamClock: clk})
	owner := client.New(rt.BaseURL, rt.Dev.APIKey)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	key, err := owner.CreateKey(ctx, client.KeyRequest{Name: "watcher", Scopes: []string{"read"}})
	if err != nil {
		t.Fatal(err)
	}
	g, err := owner.Generate(ctx, client.GenerateRequest{Model: "provider-a", ModelVersion: "theta-4-fast",
		Input: map[string]any{"prompt": "a pier [simulate:hold]"}})
	if err != nil {
		t.Fatal(err)
	}
	defer owner.CancelGeneration(context.Background(), g.UUID)
	c := client.New(rt.BaseURL, key.APIKey)
	seen := make(chan client.GenerationStatus, 1000)
	done := make(chan error, 1)
	go func() {
		_, err := c.FollowGeneration(ctx, g.UUID, fast, func(s client.GenerationStatus) { seen <- s })
		done <- err
	}()
	if first := <-seen; first.Status != client.StatusProcessing {
		t.Fatalf("first view %+v, want processing", first)
	}
	if _, err := owner.RevokeKey(ctx, key.Prefix); err != nil {
		t.Fatal(err)
	}
	var followErr error
	for ended := false; !ended; {
		select {
		case followErr = <-done:
			ended = true
		default:
			if clk.WaitForTimers(1, 50*time.Millisecond) {
				clk.Advance(time.Second)
			}
		}
	}
	var apiErr *client.APIError
	if !errors.As(followErr, &apiErr) || apiErr.Status != http.StatusUnauthorized || apiErr.Code != "unauthorized" {
		t.Errorf("FollowGeneration ended with %v; want the 401 unauthorized of the revoked key", followErr)
	}
	close(seen)
	for s := range seen {
		if s.Status == "" {
			t.Errorf("progress saw an empty view %+v (the error event read as a view)", s)
		}
	}
}
