package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// scripted answers each request with the next of its answers (the last one
// repeats) and records what it received.
type scripted struct {
	mu       sync.Mutex
	answers  []answer
	requests []*http.Request
	bodies   []string
}

type answer struct {
	status int
	header map[string]string
	body   string
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	n := len(s.requests)
	s.requests = append(s.requests, r)
	s.bodies = append(s.bodies, string(body))
	a := s.answers[min(n, len(s.answers)-1)]
	s.mu.Unlock()
	for k, v := range a.header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.status)
	fmt.Fprint(w, a.body)
}

// testClient is a client of the scripted server that records its waits
// instead of sleeping.
func testClient(t *testing.T, answers ...answer) (*Client, *scripted, *[]time.Duration) {
	t.Helper()
	s := &scripted{answers: answers}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	c := New(srv.URL, "mgk_test_key")
	var waits []time.Duration
	c.Sleep = func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		return ctx.Err()
	}
	return c, s, &waits
}

const (
	rateLimited = `{"error":{"code":"rate_limited","message":"the pro plan allows 100 requests per minute; retry after 3 s"},"request_id":"r1"}`
	unavailable = `{"error":{"code":"upstream_unavailable","message":"the generation provider did not accept the job; no credits were charged, please retry"},"request_id":"r2"}`
	statusJSON  = `{"id":"3348f3aa-5fd0-4758-860a-3ebaf4cfbcc7","status":"%s","output":[],"created_at":"2026-01-02T03:04:05.000000","model":"provider-a/zeta"}`
)

func TestRetriesHonourRetryAfterAndRepeatTheSameRequest(t *testing.T) {
	c, s, waits := testClient(t,
		answer{429, map[string]string{"Retry-After": "3"}, rateLimited},
		answer{503, nil, `Service Unavailable`},
		answer{200, nil, `{"id":7,"uuid":"u","status":"processing","credits_used":"2.60","output_data":{"urls":[]}}`},
	)
	g, err := c.Generate(context.Background(), GenerateRequest{Model: "provider-a", ModelVersion: "zeta", Input: map[string]any{"prompt": "a fox"}})
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if g.ID != 7 || g.CreditsUsed != "2.60" {
		t.Errorf("Generate answered %+v", g)
	}
	if len(s.requests) != 3 {
		t.Fatalf("%d requests, want 3 (429, 503, then 200)", len(s.requests))
	}
	if (*waits)[0] != 3*time.Second {
		t.Errorf("waited %v after the 429, want its Retry-After of 3s", (*waits)[0])
	}
	// The second try's backoff: RetryBase doubled once, plus up to half
	// of that as jitter.
	if w := (*waits)[1]; w < 2*DefaultRetryBase || w > 3*DefaultRetryBase {
		t.Errorf("waited %v after the 503 (no Retry-After), want %v to %v", w, 2*DefaultRetryBase, 3*DefaultRetryBase)
	}
	key := s.requests[0].Header.Get("Idempotency-Key")
	for i, r := range s.requests {
		if r.Header.Get("Idempotency-Key") != key || key == "" {
			t.Errorf("try %d has Idempotency-Key %q, want the first try's %q", i, r.Header.Get("Idempotency-Key"), key)
		}
		if s.bodies[i] != s.bodies[0] || r.Header.Get("Authorization") != "Bearer mgk_test_key" {
			t.Errorf("try %d sent %q with %q, want the same body and key", i, s.bodies[i], r.Header.Get("Authorization"))
		}
	}
}

func TestRetriesStop(t *testing.T) {
	tests := []struct {
		name      string
		answers   []answer
		requests  int
		wantCode  string
		wantRetry time.Duration
	}{
		{"a 400 is not retried", []answer{{400, nil, `{"error":{"code":"invalid_request","message":"the request is invalid","details":[{"field":"input.seconds","message":"is required"}]},"request_id":"r"}`}},
			1, "invalid_request", 0},
		{"a Retry-After beyond the bound is not waited for", []answer{{429, map[string]string{"Retry-After": "3600"}, rateLimited}},
			1, "rate_limited", time.Hour},
		{"after MaxRetries", []answer{{503, nil, `Service Unavailable`}}, DefaultMaxRetries + 1, "http_503", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, s, _ := testClient(t, tt.answers...)
			_, err := c.Generation(context.Background(), "42")
			var apiErr *APIError
			if !errors.As(err, &apiErr) {
				t.Fatalf("error %v is not an *APIError", err)
			}
			if apiErr.Code != tt.wantCode || apiErr.RetryAfter != tt.wantRetry || apiErr.Status != tt.answers[0].status {
				t.Errorf("got %+v, want code %s, status %d, RetryAfter %v", apiErr, tt.wantCode, tt.answers[0].status, tt.wantRetry)
			}
			if len(s.requests) != tt.requests {
				t.Errorf("%d requests, want %d", len(s.requests), tt.requests)
			}
		})
	}
}

func TestAPIErrorCarriesTheEnvelope(t *testing.T) {
	c, _, _ := testClient(t, answer{400, nil, `{"error":{"code":"invalid_request","message":"the request has several invalid fields","details":[{"field":"input.aspect_ratio","message":"is required"},{"field":"input.seconds","message":"is required"}]},"request_id":"abc"}`})
	_, err := c.Generate(context.Background(), GenerateRequest{Model: "provider-b", ModelVersion: "beta-2", Input: map[string]any{"prompt": "p"}})
	var apiErr *APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("error %v is not an *APIError", err)
	}
	if apiErr.RequestID != "abc" || len(apiErr.Details) != 2 || apiErr.Details[1].Field != "input.seconds" {
		t.Errorf("got %+v", apiErr)
	}
	want := "400 invalid_request: the request has several invalid fields (input.aspect_ratio: is required; input.seconds: is required)"
	if apiErr.Error() != want {
		t.Errorf("Error() = %q, want %q", apiErr.Error(), want)
	}
}

func TestWaitPollsWithBackoffUntilFinal(t *testing.T) {
	c, s, waits := testClient(t,
		answer{200, nil, fmt.Sprintf(statusJSON, "processing")},
		answer{200, nil, fmt.Sprintf(statusJSON, "processing")},
		answer{200, nil, fmt.Sprintf(statusJSON, "processing")},
		answer{200, nil, fmt.Sprintf(statusJSON, "completed")},
	)
	var seen []string
	st, err := c.WaitGeneration(context.Background(), "3348f3aa-5fd0-4758-860a-3ebaf4cfbcc7",
		WaitOptions{Interval: time.Second, MaxInterval: 2 * time.Second}, func(s GenerationStatus) { seen = append(seen, s.Status) })
	if err != nil || st.Status != StatusCompleted {
		t.Fatalf("WaitGeneration = %+v, %v", st, err)
	}
	if want := []string{"processing", "processing", "processing", "completed"}; fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Errorf("progress saw %v, want %v", seen, want)
	}
	if want := []time.Duration{time.Second, 1500 * time.Millisecond, 2 * time.Second}; fmt.Sprint(*waits) != fmt.Sprint(want) {
		t.Errorf("waited %v between polls, want %v", *waits, want)
	}
	if len(s.requests) != 4 || s.requests[0].URL.Path != "/api/generations/status/3348f3aa-5fd0-4758-860a-3ebaf4cfbcc7" {
		t.Errorf("%d requests, first %s", len(s.requests), s.requests[0].URL.Path)
	}
}

func TestCancelingTheContextStopsWaiting(t *testing.T) {
	s := &scripted{answers: []answer{{200, nil, fmt.Sprintf(statusJSON, "processing")}}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	c := New(srv.URL, "k") // real sleeps: the cancel must end one
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.WaitGeneration(ctx, "1", WaitOptions{Interval: time.Hour}, func(GenerationStatus) { cancel() })
		done <- err
	}()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("WaitGeneration after cancel = %v, want context.Canceled", err)
	}
}

func TestRetryAfterAcceptsAnHTTPDate(t *testing.T) {
	at := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	if d := retryAfter(at); d < 80*time.Second || d > 90*time.Second {
		t.Errorf("retryAfter(%q) = %v, want about 90s", at, d)
	}
	if d := retryAfter("soon"); d != 0 {
		t.Errorf("retryAfter(soon) = %v, want 0", d)
	}
}
