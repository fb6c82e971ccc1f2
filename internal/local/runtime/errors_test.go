package runtime_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/accounts"
	"github.com/mediagen-dev/mediagen/internal/core/apikey"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/local/runtime"
	"github.com/mediagen-dev/mediagen/internal/local/sqlitestore"
	"github.com/mediagen-dev/mediagen/internal/testkit/waitfor"
)

// checkEnvelope asserts the error envelope and returns its code.
func checkEnvelope(t *testing.T, a answer, status int) string {
	t.Helper()
	if a.status != status {
		t.Errorf("HTTP %d, want %d: %s", a.status, status, a.body)
	}
	e, _ := a.decoded["error"].(map[string]any)
	code, _ := e["code"].(string)
	msg, _ := e["message"].(string)
	if code == "" || msg == "" || a.str("request_id") == "" {
		t.Errorf("body %s is not the error envelope {error:{code,message},request_id}", a.body)
	}
	if ct := a.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	return code
}

// unchanged asserts that the account's money and records did not move.
func unchanged(t *testing.T, rt *runtime.Runtime, before domain.Account, records int) {
	t.Helper()
	after := account(t, rt, before.UserID)
	if !after.Balance.Equal(before.Balance) || !after.Held.Equal(before.Held) || !after.Captured.Equal(before.Captured) {
		t.Errorf("credits moved: balance %s→%s held %s→%s", before.Balance, after.Balance, before.Held, after.Held)
	}
	n, err := rt.Embedded.CountGenerations(context.Background(), before.UserID)
	if err != nil {
		t.Fatal(err)
	}
	if n != records {
		t.Errorf("%d generation records, want %d", n, records)
	}
}

func gen(version string, input map[string]any) map[string]any {
	models := map[string]string{"alpha-3.1-fast": "provider-a", "beta-2": "provider-b", "zeta-pro": "provider-a",
		"theta-4-fast": "provider-a", "zeta": "provider-a", "gamma-v2.1": "provider-c", "video-01": "provider-d"}
	return map[string]any{"model": models[version], "model_version": version, "input": input}
}

func TestBadRequestsAnswer400WithEveryBadFieldAndChangeNothing(t *testing.T) {
	rt := start(t, runtimeConfig())
	owner := newAccount(t, rt, domain.PlanEnterprise, 1000)
	before := account(t, rt, owner.UserID)
	tests := []struct {
		name   string
		body   any
		fields []string // every one must be named in details
	}{
		{"not JSON", `{"model":`, []string{"body"}},
		{"a JSON array", `[]`, []string{"body"}},
		{"no model", map[string]any{"model_version": "beta-2", "input": map[string]any{"prompt": "x"}}, []string{"model"}},
		{"unknown model", map[string]any{"model": "provider-z", "model_version": "beta-2", "input": map[string]any{"prompt": "x"}}, []string{"model"}},
		{"version under the wrong model", map[string]any{"model": "provider-a", "model_version": "beta-2", "input": map[string]any{"prompt": "x", "seconds": "4", "aspect_ratio": "portrait"}}, []string{"model_version"}},
		{"unknown version", map[string]any{"model": "provider-b", "model_version": "beta-3", "input": map[string]any{"prompt": "x"}}, []string{"model_version"}},
		{"no input", map[string]any{"model": "provider-b", "model_version": "beta-2"}, []string{"input"}},
		{"unknown top-level field", map[string]any{"model": "provider-a", "model_version": "zeta", "input": map[string]any{"prompt": "x"}, "webhook": "x"}, []string{"webhook"}},
		{"unknown input field", gen("zeta", map[string]any{"prompt": "x", "style": "noir"}), []string{"input.style"}},
		{"missing required fields", gen("beta-2", map[string]any{"prompt": "x"}), []string{"input.seconds", "input.aspect_ratio"}},
		{"bad enum", gen("alpha-3.1-fast", map[string]any{"prompt": "x", "duration": "5"}), []string{"input.duration"}},
		{"boolean as a string", gen("alpha-3.1-fast", map[string]any{"prompt": "x", "generate_audio": "yes"}), []string{"input.generate_audio"}},
		{"prompt as a number", gen("zeta", map[string]any{"prompt": 42}), []string{"input.prompt"}},
		{"empty prompt", gen("zeta", map[string]any{"prompt": "   "}), []string{"input.prompt"}},
		{"alpha prompt one past 20,000", gen("alpha-3.1-fast", map[string]any{"prompt": strings.Repeat("a", 20001)}), []string{"input.prompt"}},
		{"zeta-pro prompt under 3", gen("zeta-pro", map[string]any{"prompt": "ab"}), []string{"input.prompt"}},
		{"zeta-pro prompt one past 50,000", gen("zeta-pro", map[string]any{"prompt": strings.Repeat("é", 50001)}), []string{"input.prompt"}},
		{"image_count 5", map[string]any{"model": "provider-a", "model_version": "zeta", "input": map[string]any{"prompt": "x"}, "image_count": 5}, []string{"image_count"}},
		{"image_count on a video", map[string]any{"model": "provider-d", "model_version": "video-01", "input": map[string]any{"prompt": "x"}, "image_count": 2}, []string{"image_count"}},
		{"num_images and image_count differ", map[string]any{"model": "provider-a", "model_version": "zeta-pro", "input": map[string]any{"prompt": "xyz", "num_images": "2"}, "image_count": 3}, []string{"image_count"}},
		{"http image URL", gen("gamma-v2.1", map[string]any{"prompt": "x", "start_image": "http://example.com/a.png"}), []string{"input.start_image"}},
		{"several bad fields at once", gen("alpha-3.1-fast", map[string]any{"duration": "5", "resolution": "4K", "aspect_ratio": "1:1", "colour": "red"}),
			[]string{"input.prompt", "input.duration", "input.resolution", "input.aspect_ratio", "input.colour"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, malformed(tt.body))
			if code := checkEnvelope(t, a, http.StatusBadRequest); code != "invalid_request" {
				t.Errorf("code %q, want invalid_request", code)
			}
			e := a.decoded["error"].(map[string]any)
			details, _ := e["details"].([]any)
			named := map[string]bool{}
			for _, d := range details {
				m, _ := d.(map[string]any)
				f, _ := m["field"].(string)
				named[f] = true
				if msg, _ := m["message"].(string); msg == "" {
					t.Errorf("detail %v has no message", d)
				}
			}
			for _, f := range tt.fields {
				if !named[f] {
					t.Errorf("details %v do not name %s", details, f)
				}
			}
		})
	}
	unchanged(t, rt, before, 0)
	// Allowed values are named in the answer.
	a := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, malformed(gen("alpha-3.1-fast", map[string]any{"prompt": "x", "duration": "5"})))
	if !strings.Contains(string(a.body), `\"4\"`) && !strings.Contains(string(a.body), "4, 6, 8") {
		t.Errorf("a bad enum's answer does not name the allowed values: %s", a.body)
	}
}

func TestBadCredentialsAnswer401(t *testing.T) {
	rt := start(t, runtimeConfig())
	owner := newAccount(t, rt, domain.PlanPro, 100)
	revoked := newAccount(t, rt, domain.PlanPro, 100)
	prefix, _, _ := apikey.Parse(revoked.APIKey)
	if _, err := (&accounts.Service{Store: rt.Store}).RevokeKey(context.Background(), prefix); err != nil {
		t.Fatal(err)
	}
	unknown, _ := apikey.New()
	body := gen("zeta", map[string]any{"prompt": "a fox"})
	tests := []struct{ name, header string }{
		{"missing", ""},
		{"not bearer", "Basic " + owner.APIKey},
		{"malformed key", "Bearer mgk_short"},
		{"unknown key", "Bearer " + unknown.Plain},
		{"revoked key", "Bearer " + revoked.APIKey},
		{"a token where tokens are not accepted", "Bearer aaa.bbb.ccc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, r := range []struct{ method, path string }{
				{http.MethodPost, "/api/generations/generate"},
				{http.MethodGet, "/api/generations/status/1"},
			} {
				req, _ := http.NewRequest(r.method, rt.BaseURL+r.path, strings.NewReader(`{"model":"provider-a","model_version":"zeta","input":{"prompt":"a fox"}}`))
				if tt.header != "" {
					req.Header.Set("Authorization", tt.header)
				}
				req.Header.Set("Content-Type", "application/json")
				a := send(t, req, true)
				if tt.header == "" {
					// No identity source: the gateway's own 401, before any
					// Lambda (TestAMissingKeyIsTheGatewaysOwn401).
					if a.status != http.StatusUnauthorized || a.str("message") != "Unauthorized" {
						t.Errorf("%s %s: HTTP %d %s, want the gateway's 401", r.method, r.path, a.status, a.body)
					}
					continue
				}
				if code := checkEnvelope(t, a, http.StatusUnauthorized); code != "unauthorized" {
					t.Errorf("%s %s: code %q", r.method, r.path, code)
				}
			}
		})
	}
	a := call(t, rt, http.MethodPost, "/api/generations/generate", unknown.Plain, body)
	checkEnvelope(t, a, http.StatusUnauthorized)
	unchanged(t, rt, account(t, rt, revoked.UserID), 0)
}

func TestShortBalanceAnswers402AndCreatesNothing(t *testing.T) {
	rt := start(t, runtimeConfig())
	owner := newAccount(t, rt, domain.PlanPro, 1)
	before := account(t, rt, owner.UserID)
	a := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey,
		gen("beta-2", map[string]any{"prompt": "a long shot", "seconds": "12", "aspect_ratio": "landscape"}))
	if code := checkEnvelope(t, a, http.StatusPaymentRequired); code != "insufficient_credits" {
		t.Errorf("code %q", code)
	}
	unchanged(t, rt, before, 0)
}

func TestUnknownAndOthersGenerationsAnswer404(t *testing.T) {
	rt := start(t, runtimeConfig())
	owner := newAccount(t, rt, domain.PlanPro, 100)
	other := newAccount(t, rt, domain.PlanPro, 100)
	a := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, gen("theta-4-fast", map[string]any{"prompt": "mine"}))
	if a.status != http.StatusOK {
		t.Fatalf("HTTP %d %s", a.status, a.body)
	}
	id := strconv.Itoa(int(a.decoded["id"].(float64)))
	missing := call(t, rt, http.MethodGet, "/api/generations/status/00000000-0000-4000-8000-000000000000", owner.APIKey, nil)
	checkEnvelope(t, missing, http.StatusNotFound)
	for _, ref := range []string{a.str("uuid"), id} {
		b := call(t, rt, http.MethodGet, "/api/generations/status/"+ref, other.APIKey, nil)
		checkEnvelope(t, b, http.StatusNotFound)
		if strings.Contains(string(b.body), "mine") || strings.Contains(string(b.body), owner.UserID) {
			t.Errorf("another owner's 404 leaks the generation: %s", b.body)
		}
		e1, _ := b.decoded["error"].(map[string]any)
		e2, _ := missing.decoded["error"].(map[string]any)
		if e1["message"] != e2["message"] || e1["code"] != e2["code"] {
			t.Errorf("another owner's 404 %v differs from a missing one's %v", e1, e2)
		}
	}
	bad := call(t, rt, http.MethodGet, "/api/generations/status/not-an-id", owner.APIKey, nil)
	checkEnvelope(t, bad, http.StatusBadRequest)
}

// TestASecondServerOnADataDirIsRefused: the server counts rate limits in
// memory, which holds exactly only while it alone counts on its data
// directory, so a second server there does not start (and the first one
// goes on serving).
func TestASecondServerOnADataDirIsRefused(t *testing.T) {
	cfg := runtimeConfig()
	cfg.DataDir = t.TempDir()
	rt := start(t, cfg)
	cfg.Addr, cfg.Log = "127.0.0.1:0", slog.New(slog.NewJSONHandler(io.Discard, nil))
	second, err := runtime.Start(context.Background(), cfg)
	if err == nil {
		waitfor.Close(t, second.Close)
		t.Fatal("a second server started on the data directory")
	}
	if !errors.Is(err, sqlitestore.ErrDataDirInUse) {
		t.Errorf("the second server failed with %v, want ErrDataDirInUse", err)
	}
	owner := newAccount(t, rt, domain.PlanPro, 100)
	if a := call(t, rt, http.MethodGet, "/api/generations/status/1", owner.APIKey, nil); a.status != http.StatusNotFound || a.header.Get("X-RateLimit-Remaining") != "99" {
		t.Errorf("the first server then answered HTTP %d, remaining %q", a.status, a.header.Get("X-RateLimit-Remaining"))
	}
}

func TestRateLimitAnswers429AtThePlanLimitWithHeaders(t *testing.T) {
	// The service's clock stands still halfway through a minute: every
	// request counts in that one window, however slowly the machine runs.
	minute := time.Now().Truncate(time.Minute).Add(time.Minute)
	cfg := runtimeConfig()
	cfg.Clock = func() time.Time { return minute.Add(30 * time.Second) }
	rt := start(t, cfg)
	free := newAccount(t, rt, domain.PlanFree, 100)
	for i := 1; i <= domain.RateLimitFree; i++ {
		a := call(t, rt, http.MethodGet, "/api/generations/status/1", free.APIKey, nil)
		if a.status != http.StatusNotFound {
			t.Fatalf("request %d: HTTP %d", i, a.status)
		}
		if got := a.header.Get("X-RateLimit-Limit"); got != "10" {
			t.Errorf("X-RateLimit-Limit %q, want 10", got)
		}
		if got := a.header.Get("X-RateLimit-Remaining"); got != strconv.Itoa(domain.RateLimitFree-i) {
			t.Errorf("request %d: X-RateLimit-Remaining %q", i, got)
		}
		if got, want := a.header.Get("X-RateLimit-Reset"), strconv.FormatInt(minute.Add(time.Minute).Unix(), 10); got != want {
			t.Errorf("X-RateLimit-Reset %q, want %s: the end of this minute", got, want)
		}
	}
	before := account(t, rt, free.UserID)
	a := call(t, rt, http.MethodPost, "/api/generations/generate", free.APIKey, gen("zeta", map[string]any{"prompt": "one too many"}))
	if code := checkEnvelope(t, a, http.StatusTooManyRequests); code != "rate_limited" {
		t.Errorf("code %q", code)
	}
	if got := a.header.Get("Retry-After"); got != "30" {
		t.Errorf("Retry-After %q, want 30 (seconds to the end of the minute)", got)
	}
	if a.header.Get("X-RateLimit-Remaining") != "0" {
		t.Errorf("X-RateLimit-Remaining %q on a 429", a.header.Get("X-RateLimit-Remaining"))
	}
	unchanged(t, rt, before, 0)
	// Another account is not limited by this one's use.
	pro := newAccount(t, rt, domain.PlanPro, 100)
	if b := call(t, rt, http.MethodGet, "/api/generations/status/1", pro.APIKey, nil); b.header.Get("X-RateLimit-Limit") != "100" || b.status != http.StatusNotFound {
		t.Errorf("pro account: HTTP %d limit %q", b.status, b.header.Get("X-RateLimit-Limit"))
	}
}
