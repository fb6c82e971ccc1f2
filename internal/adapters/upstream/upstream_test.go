package upstream

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/testkit/clocktest"
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

var fast = Tuning{Attempts: 3, BaseBackoff: time.Millisecond, MaxRetryAfter: 50 * time.Millisecond}

func replicate(url string) *Replicate { return &Replicate{BaseURL: url, Token: "tok", Tuning: fast} }

func TestCreateByModelOrByBareVersionUnderEitherBaseURL(t *testing.T) {
	tests := []struct{ base, model, path, version string }{
		{"", "provider-b/beta-2", "/v1/models/provider-b/beta-2/predictions", ""},
		{"/v1", "provider-b/beta-2", "/v1/models/provider-b/beta-2/predictions", ""},
		{"/v1/", "owner/name:5c7d5dc6dd8bf75c1acaa8565735e7986bc5b66206b55cca93cb72c9bf15ccaa", "/v1/predictions",
			"5c7d5dc6dd8bf75c1acaa8565735e7986bc5b66206b55cca93cb72c9bf15ccaa"},
	}
	for _, tt := range tests {
		var path, auth string
		var body map[string]any
		srv, _ := script(t, func(w http.ResponseWriter, r *http.Request) {
			path, auth = r.URL.Path, r.Header.Get("Authorization")
			json.NewDecoder(r.Body).Decode(&body)
			status(201, `{"id":"p1","status":"starting","output":null}`)(w, r)
		})
		job, err := replicate(srv.URL+tt.base).Submit(context.Background(), tt.model, map[string]any{"prompt": "fox", "seconds": 4}, "https://hook.example/x?generation=g1")
		if err != nil || job.ID != "p1" {
			t.Fatalf("%s: Submit = %+v, %v", tt.model, job, err)
		}
		if path != tt.path || auth != "Bearer tok" {
			t.Errorf("%s under %q: request to %s with %q, want %s", tt.model, tt.base, path, auth, tt.path)
		}
		in, _ := body["input"].(map[string]any)
		if in["seconds"] != 4.0 || body["webhook"] != "https://hook.example/x?generation=g1" || !reflect.DeepEqual(body["webhook_events_filter"], []any{"completed"}) {
			t.Errorf("body = %v", body)
		}
		if v, _ := body["version"].(string); v != tt.version {
			t.Errorf("version = %q, want the bare id %q", v, tt.version)
		}
	}
}

func TestCreateIsRetriedOnlyWhenItCertainlyStartedNothing(t *testing.T) {
	refused := func() string { // a port nothing listens on
		l, _ := net.Listen("tcp", "127.0.0.1:0")
		addr := l.Addr().String()
		l.Close()
		return "http://" + addr
	}
	tests := []struct {
		name      string
		answer    func(http.ResponseWriter, *http.Request)
		calls     int32
		notStart  bool
		unknown   bool
		permanent bool
	}{
		{"503 every time", status(503, `{"detail":"busy"}`), 3, true, false, false},
		{"429 every time", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "1")
			status(429, `{"detail":"slow down"}`)(w, r)
		}, 3, true, false, false},
		{"500", status(500, `{"detail":"boom"}`), 1, false, true, false},
		{"502", status(502, `bad gateway`), 1, false, true, false},
		{"2xx that is not a prediction", status(201, `<html>`), 1, false, true, false},
		{"422", status(422, `{"title":"Input validation failed","detail":"seconds: Invalid type","status":422,"invalid_fields":[{"field":"seconds","description":"Invalid type. Expected: integer, given: string"}]}`), 1, false, false, true},
		// Reads the body, then answers only when the client has given up
		// (its 100 ms timeout) and closed the connection.
		{"hangs after the body was sent", func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			<-r.Context().Done()
		}, 1, false, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, calls := script(t, tt.answer)
			c := replicate(srv.URL)
			c.HTTP = &http.Client{Timeout: 100 * time.Millisecond}
			_, err := c.Submit(context.Background(), "o/m", map[string]any{"prompt": "x"}, "")
			var unknown *UnknownOutcomeError
			var ue *Error
			switch {
			case calls.Load() != tt.calls:
				t.Errorf("%d creates sent, want %d", calls.Load(), tt.calls)
			case errors.Is(err, ErrNotStarted) != tt.notStart:
				t.Errorf("err = %v; ErrNotStarted %v, want %v", err, errors.Is(err, ErrNotStarted), tt.notStart)
			case errors.As(err, &unknown) != tt.unknown:
				t.Errorf("err = %v; unknown outcome %v, want %v", err, errors.As(err, &unknown), tt.unknown)
			case tt.permanent && (!errors.As(err, &ue) || ue.StatusCode != 422 || ue.Message != "seconds: Invalid type; seconds: Invalid type. Expected: integer, given: string"):
				t.Errorf("err = %v, want the provider's 422 with its reason", err)
			}
		})
	}
	t.Run("connection refused", func(t *testing.T) {
		_, err := replicate(refused()).Submit(context.Background(), "o/m", map[string]any{"prompt": "x"}, "")
		if !errors.Is(err, ErrNotStarted) {
			t.Errorf("err = %v, want ErrNotStarted", err)
		}
	})
}

func TestOutputIsAStringAListOrAnObjectHoldingURLs(t *testing.T) {
	tests := []struct {
		name, output string
		want         []string
	}{
		{"list", `["https://up.example/a.png","https://up.example/b.png"]`, []string{"https://up.example/a.png", "https://up.example/b.png"}},
		{"string", `"https://up.example/b.mp4"`, []string{"https://up.example/b.mp4"}},
		{"object", `{"video":"https://up.example/v.mp4","seed":3}`, []string{"https://up.example/v.mp4"}},
		{"fal images", `{"images":[{"url":"https://f.example/1.png","content_type":"image/png"},{"url":"https://f.example/2.png"}],"seed":1}`, []string{"https://f.example/1.png", "https://f.example/2.png"}},
		{"null", `null`, nil},
	}
	for _, tt := range tests {
		got, err := outputURLs(json.RawMessage(tt.output))
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: OutputURLs = %v, %v; want %v", tt.name, got, err, tt.want)
		}
	}
	r, err := decodePrediction([]byte(`{"id":"p","status":"aborted"}`))
	if err != nil || !r.Final() {
		t.Errorf("aborted = %+v, %v; want a final state", r, err)
	}
}

func TestGivesUpAfterBoundedAttempts(t *testing.T) {
	srv, calls := script(t, status(502, `{"detail":"bad gateway"}`))
	_, err := replicate(srv.URL).Get(context.Background(), domain.UpstreamJob{ID: "p1"})
	var ue *Error
	if !errors.As(err, &ue) || ue.StatusCode != 502 || !ue.Temporary() || ue.Message != "bad gateway" {
		t.Fatalf("err = %v, want *Error 502 bad gateway", err)
	}
	if calls.Load() != 3 {
		t.Errorf("%d calls, want 3 (the configured attempts)", calls.Load())
	}
}

func TestConnectionResetAndTimeoutAreRetriedAndBounded(t *testing.T) {
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
	if _, err := replicate("http://"+l.Addr().String()).Get(context.Background(), domain.UpstreamJob{ID: "p1"}); err == nil {
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
	c := replicate(hang.URL)
	c.HTTP = &http.Client{Timeout: 50 * time.Millisecond}
	start := time.Now()
	if _, err := c.Get(context.Background(), domain.UpstreamJob{ID: "p1"}); err == nil {
		t.Fatal("Get from a hanging server succeeded")
	}
	if time.Since(start) > 3*time.Second {
		t.Errorf("a hanging upstream held the call for %v", time.Since(start))
	}
}

func TestSchemaTypesAndWebhookSecretAreFetchedOnce(t *testing.T) {
	var schemas, secrets atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/models/o/m":
			schemas.Add(1)
			w.Write([]byte(`{"latest_version":{"id":"v","openapi_schema":{"components":{"schemas":{` +
				`"Input":{"properties":{"seconds":{"type":"integer"},"aspect_ratio":{"allOf":[{"$ref":"#/components/schemas/aspect_ratio"}]}}},` +
				`"aspect_ratio":{"type":"string","enum":["16:9"]}}}}}}`))
		case "/v1/webhooks/default/secret":
			secrets.Add(1)
			w.Write([]byte(`{"key":"whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQ="}`))
		}
	}))
	defer srv.Close()
	c := replicate(srv.URL)
	for range 2 {
		types, err := c.InputTypes(context.Background(), "o/m")
		if err != nil || !reflect.DeepEqual(types, map[string]string{"seconds": "integer", "aspect_ratio": "string"}) {
			t.Fatalf("InputTypes = %v, %v", types, err)
		}
		if _, err := c.signingSecret(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if schemas.Load() != 1 || secrets.Load() != 1 {
		t.Errorf("fetched the schema %d and the secret %d times, want once each", schemas.Load(), secrets.Load())
	}
	c.WebhookSecret = "whsec_configured"
	if s, _ := c.signingSecret(context.Background()); s != "whsec_configured" {
		t.Errorf("a configured secret = %q, want it to override", s)
	}
}

func TestFalFollowsTheURLsItsSubmitAnswered(t *testing.T) {
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method + " " + r.URL.Path {
		case "POST /fal-ai/app/sub/path":
			if r.Header.Get("Authorization") != "Key k" || r.URL.Query().Get("fal_webhook") != "https://hook.example/h" {
				w.WriteHeader(401)
				return
			}
			base := srv.URL + "/fal-ai/app/requests/r1"
			json.NewEncoder(w).Encode(map[string]string{"request_id": "r1", "status_url": base + "/status", "response_url": base, "cancel_url": base + "/cancel"})
		case "GET /fal-ai/app/requests/r1/status":
			w.Write([]byte(`{"status":"COMPLETED"}`))
		case "GET /fal-ai/app/requests/r1":
			w.Write([]byte(`{"video":{"url":"https://v3.fal.media/files/x.mp4","content_type":"video/mp4"},"seed":7}`))
		case "PUT /fal-ai/app/requests/r1/cancel":
			w.WriteHeader(400)
			w.Write([]byte(`{"status":"ALREADY_COMPLETED"}`))
		default:
			w.WriteHeader(404)
		}
	}))
	defer srv.Close()
	c := &fal{BaseURL: srv.URL, Token: "k", Tuning: fast}
	job, err := c.Submit(context.Background(), "fal-ai/app/sub/path", map[string]any{"prompt": "x"}, "https://hook.example/h")
	if err != nil || job.StatusURL != srv.URL+"/fal-ai/app/requests/r1/status" {
		t.Fatalf("Submit = %+v, %v", job, err)
	}
	r, err := c.Get(context.Background(), job)
	if err != nil || r.Status != StatusSucceeded || !reflect.DeepEqual(r.Outputs, []string{"https://v3.fal.media/files/x.mp4"}) {
		t.Errorf("Get = %+v, %v", r, err)
	}
	if err := c.Cancel(context.Background(), job); err != nil {
		t.Errorf("Cancel of a completed request = %v, want nil", err)
	}
}

func TestFalWebhookSignatureIsVerifiedWithTheJWKS(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"keys": []map[string]string{{"kty": "OKP", "crv": "Ed25519", "x": base64.RawURLEncoding.EncodeToString(pub)}}})
	}))
	defer jwks.Close()
	c := &fal{JWKSURL: jwks.URL, Tuning: fast}
	body := []byte(`{"request_id":"r1","status":"OK","payload":{"images":[{"url":"https://f.example/1.png"}]}}`)
	now := time.Now()
	ts := strconv.FormatInt(now.Unix(), 10)
	sign := func(b []byte, ts string) http.Header {
		h := http.Header{}
		h.Set(falHeaderRequestID, "r1")
		h.Set(falHeaderUserID, "u1")
		h.Set(falHeaderTimestamp, ts)
		h.Set(falHeaderSignature, hex.EncodeToString(ed25519.Sign(priv, falSignedMessage("r1", "u1", ts, b))))
		return h
	}
	if err := c.VerifyWebhook(context.Background(), sign(body, ts), body, now); err != nil {
		t.Fatalf("a good signature: %v", err)
	}
	if err := c.VerifyWebhook(context.Background(), sign(body, ts), []byte(`{"request_id":"r1","status":"ERROR"}`), now); err == nil {
		t.Error("a tampered body verified")
	}
	old := strconv.FormatInt(now.Add(-time.Hour).Unix(), 10)
	if err := c.VerifyWebhook(context.Background(), sign(body, old), body, now); err == nil {
		t.Error("a stale signature verified")
	}
	r, err := c.DecodeWebhook(body)
	if err != nil || r.ID != "r1" || r.Status != StatusSucceeded || len(r.Outputs) != 1 {
		t.Errorf("DecodeWebhook = %+v, %v", r, err)
	}
}

// TestACreateRefused429IsTriedAgainAfterItsRetryAfter: the provider's
// Retry-After is waited on the client's clock, all of it and no more,
// before the next try.
func TestACreateRefused429IsTriedAgainAfterItsRetryAfter(t *testing.T) {
	srv, calls := script(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3")
		status(429, `{"detail":"slow down"}`)(w, r)
	}, status(201, `{"id":"p1","status":"starting","output":null}`))
	clk := clocktest.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	c := &Replicate{BaseURL: srv.URL, Token: "tok", Tuning: Tuning{Attempts: 2, Clock: clk}}
	type result struct {
		job domain.UpstreamJob
		err error
	}
	done := make(chan result, 1)
	go func() {
		job, err := c.Submit(context.Background(), "o/m", map[string]any{"prompt": "x"}, "")
		done <- result{job, err}
	}()
	if !clk.WaitForTimers(1, time.Minute) {
		t.Fatal("the client never waited after the 429")
	}
	clk.Advance(3*time.Second - time.Millisecond)
	if n := calls.Load(); n != 1 || clk.Timers() != 1 {
		t.Fatalf("%d creates sent %v into a 3 s Retry-After, want only the first, still waiting", n, 3*time.Second-time.Millisecond)
	}
	clk.Advance(time.Millisecond)
	select {
	case r := <-done:
		if r.err != nil || r.job.ID != "p1" || calls.Load() != 2 {
			t.Errorf("Submit = %+v, %v after %d creates; want p1 from the second", r.job, r.err, calls.Load())
		}
	case <-time.After(time.Minute):
		t.Fatal("no second try once the Retry-After had passed")
	}
}

// A job's progress is the last tqdm figure of its logs, as models print
// them on Replicate and fal.
func TestProgressOfReadsTheLastProgressLine(t *testing.T) {
	for _, c := range []struct {
		name, logs string
		want       int
	}{
		{"no logs", "", 0},
		{"no progress line", "Using seed: 42\nrendering\n", 0},
		{"one line", "  45%|████▌     | 45/100 [00:10<00:12,  4.50it/s]", 45},
		{"the last of several", "  0%|          | 0/50\n 40%|████      | 20/50\n 86%|████████▌ | 43/50 [00:09<00:01]\n", 86},
		{"done", "100%|██████████| 50/50 [00:11<00:00]\nsucceeded\n", 100},
		{"a percentage that is no bar", "denoise strength 35%\n", 0},
	} {
		if got := progressOf(c.logs); got != c.want {
			t.Errorf("%s: ProgressOf(%q) = %d, want %d", c.name, c.logs, got, c.want)
		}
	}
}
