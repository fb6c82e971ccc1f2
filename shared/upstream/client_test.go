package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// script answers each request with the next of a list of responses.
func script(t *testing.T, answers ...func(w http.ResponseWriter, r *http.Request)) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(n.Add(1)) - 1
		if i >= len(answers) {
			i = len(answers) - 1
		}
		answers[i](w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func status(code int, body string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		w.Write([]byte(body))
	}
}

const succeeded = `{"id":"p1","status":"succeeded","output":["https://up.example/a.mp4"],"error":null}`

func fastClient(url string) *Client {
	return &Client{BaseURL: url, Token: "tok", Attempts: 3, BaseBackoff: time.Millisecond, MaxRetryAfter: 50 * time.Millisecond}
}

func TestCreateSendsModelInputAndToken(t *testing.T) {
	var got struct {
		path, auth string
		body       map[string]any
	}
	srv, _ := script(t, func(w http.ResponseWriter, r *http.Request) {
		got.path, got.auth = r.URL.Path, r.Header.Get("Authorization")
		json.NewDecoder(r.Body).Decode(&got.body)
		status(201, `{"id":"p1","status":"starting","output":null}`)(w, r)
	})
	p, err := fastClient(srv.URL).Create(context.Background(), "provider-b/beta-2", map[string]any{"prompt": "fox"}, "https://hook.example/x")
	if err != nil {
		t.Fatal(err)
	}
	if p.ID != "p1" || p.Status != StatusStarting || p.Final() {
		t.Errorf("prediction = %+v", p)
	}
	if got.path != "/v1/models/provider-b/beta-2/predictions" || got.auth != "Bearer tok" {
		t.Errorf("request to %s with %q", got.path, got.auth)
	}
	if in, _ := got.body["input"].(map[string]any); in["prompt"] != "fox" || got.body["webhook"] != "https://hook.example/x" {
		t.Errorf("body = %v", got.body)
	}
}

func TestOutputIsOneURLOrAList(t *testing.T) {
	tests := []struct {
		name, body string
		want       []string
	}{
		{"list", succeeded, []string{"https://up.example/a.mp4"}},
		{"single", `{"id":"p1","status":"succeeded","output":"https://up.example/b.png"}`, []string{"https://up.example/b.png"}},
		{"null", `{"id":"p1","status":"processing","output":null}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := script(t, status(200, tt.body))
			p, err := fastClient(srv.URL).Get(context.Background(), "p1")
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Outputs) != len(tt.want) || (len(tt.want) > 0 && p.Outputs[0] != tt.want[0]) {
				t.Errorf("outputs = %v, want %v", p.Outputs, tt.want)
			}
		})
	}
}

func TestRetriesTransientFailuresThenSucceeds(t *testing.T) {
	tests := []struct {
		name   string
		first  func(http.ResponseWriter, *http.Request)
		before time.Duration // the least time the retry must wait
	}{
		{"500", status(500, `{"detail":"boom"}`), 0},
		{"503", status(503, `oops`), 0},
		{"429 with Retry-After", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "1") // one second, capped to 50ms by the client
			status(429, `{"detail":"slow down"}`)(w, r)
		}, 40 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, calls := script(t, tt.first, status(200, succeeded))
			start := time.Now()
			p, err := fastClient(srv.URL).Get(context.Background(), "p1")
			if err != nil || p.Status != StatusSucceeded {
				t.Fatalf("Get = %+v, %v", p, err)
			}
			if calls.Load() != 2 {
				t.Errorf("%d calls, want 2", calls.Load())
			}
			if waited := time.Since(start); waited < tt.before {
				t.Errorf("retried after %v, want at least %v", waited, tt.before)
			}
		})
	}
}

func TestGivesUpAfterBoundedAttempts(t *testing.T) {
	srv, calls := script(t, status(502, `{"detail":"bad gateway"}`))
	_, err := fastClient(srv.URL).Get(context.Background(), "p1")
	var ue *Error
	if !errors.As(err, &ue) || ue.StatusCode != 502 || !ue.Temporary() || ue.Message != "bad gateway" {
		t.Fatalf("err = %v, want *Error 502 bad gateway", err)
	}
	if calls.Load() != 3 {
		t.Errorf("%d calls, want 3 (the configured attempts)", calls.Load())
	}
}

func TestDoesNotRetryClientErrorsOrMalformedAnswers(t *testing.T) {
	tests := []struct {
		name  string
		answr func(http.ResponseWriter, *http.Request)
		check func(error) bool
	}{
		{"401", status(401, `{"detail":"bad token"}`), func(err error) bool {
			var ue *Error
			return errors.As(err, &ue) && ue.StatusCode == 401 && !ue.Temporary()
		}},
		{"422", status(422, `{"detail":"prompt is required"}`), func(err error) bool {
			var ue *Error
			return errors.As(err, &ue) && ue.Message == "prompt is required"
		}},
		{"not json", status(200, `<html>`), func(err error) bool { return errors.Is(err, ErrMalformed) }},
		{"no id", status(200, `{"status":"succeeded"}`), func(err error) bool { return errors.Is(err, ErrMalformed) }},
		{"unknown status", status(200, `{"id":"p","status":"exploded"}`), func(err error) bool { return errors.Is(err, ErrMalformed) }},
		{"output object", status(200, `{"id":"p","status":"succeeded","output":{"a":1}}`), func(err error) bool { return errors.Is(err, ErrMalformed) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, calls := script(t, tt.answr)
			_, err := fastClient(srv.URL).Get(context.Background(), "p1")
			if !tt.check(err) {
				t.Errorf("err = %v", err)
			}
			if calls.Load() != 1 {
				t.Errorf("%d calls, want 1", calls.Load())
			}
		})
	}
}

func TestConnectionResetAndTimeoutAreRetriedAndBounded(t *testing.T) {
	// A server that accepts and closes every connection at once.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	c := fastClient("http://" + l.Addr().String())
	if _, err := c.Get(context.Background(), "p1"); err == nil {
		t.Fatal("Get from a resetting server succeeded")
	}
	if accepted.Load() != 3 {
		t.Errorf("%d connections, want 3 attempts", accepted.Load())
	}

	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	defer hang.Close()
	c = fastClient(hang.URL)
	c.HTTP = &http.Client{Timeout: 50 * time.Millisecond}
	start := time.Now()
	if _, err := c.Get(context.Background(), "p1"); err == nil {
		t.Fatal("Get from a hanging server succeeded")
	}
	if time.Since(start) > 3*time.Second {
		t.Errorf("a hanging upstream held the call for %v", time.Since(start))
	}
}
