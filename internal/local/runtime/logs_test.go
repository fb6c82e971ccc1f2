package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/accounts"
	"github.com/mediagen-dev/mediagen/internal/core/apikey"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/testkit/jwttest"
)

// logBuffer collects every log line of a run.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestNoSecretEverReachesTheLogs runs the service through a full session
// (accounts and keys, generations that complete and fail, status by key and
// by token, a long-form video, bad and revoked keys, forged tokens) with
// every log line captured, then searches them for each secret: no API key
// (nor its secret part), no token (nor its signature), no upstream token.
func TestNoSecretEverReachesTheLogs(t *testing.T) {
	is, err := jwttest.New()
	if err != nil {
		t.Fatal(err)
	}
	defer is.Close()
	logs := &logBuffer{}
	cfg := storyConfig()
	cfg.Log = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg.JWTIssuer, cfg.JWTAudience, cfg.JWKSURL = is.Issuer, is.Audience, is.JWKSURL()
	cfg.WebhookBackoff = []time.Duration{50 * time.Millisecond}
	recv := newHookReceiver(t, 1) // one refused attempt, then delivered: both logged
	cfg.WebhookAllow = []string{hostPort(t, recv.srv.URL)}
	rt := start(t, cfg)

	ctx := context.Background()
	svc := &accounts.Service{Store: rt.Store}
	owner := newAccount(t, rt, domain.PlanEnterprise, 1000)
	second, err := svc.CreateKey(ctx, owner.UserID)
	if err != nil {
		t.Fatal(err)
	}
	unknown, _ := apikey.New()
	token := is.Token(owner.UserID)
	forged := is.SignRS256(is.Claims(owner.UserID), "rotated-away")
	secrets := map[string]string{
		"the dev account's API key": rt.Dev.APIKey, "an API key": owner.APIKey, "a second API key": second.APIKey,
		"an unknown API key": unknown.Plain, "a token": token, "a forged token": forged,
	}
	for name, s := range map[string]string{"an API key": owner.APIKey, "a second API key": second.APIKey, "the dev account's API key": rt.Dev.APIKey} {
		// The secret part follows the prefix; it may hold '_' itself.
		if prefix, _, err := apikey.Parse(s); err == nil {
			secrets[name+"'s secret part"] = strings.TrimPrefix(s, prefix+"_")
		}
	}
	for name, s := range map[string]string{"a token": token, "a forged token": forged} {
		secrets[name+"'s signature"] = s[strings.LastIndexByte(s, '.')+1:]
	}

	signing := call(t, rt, http.MethodGet, "/api/account", owner.APIKey, nil).str("webhooks", "signing_secret")
	if signing == "" {
		t.Fatal("no webhook signing secret")
	}
	secrets["the webhook signing secret"] = signing
	secrets["the webhook signing key"] = strings.TrimPrefix(signing, "whsec_")
	hooked := gen("theta-4-fast", map[string]any{"prompt": "a logged heron"})
	hooked["webhook_url"] = recv.srv.URL
	call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, hooked)
	done := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, gen("theta-4-fast", map[string]any{"prompt": "a logged cat"}))
	failed := call(t, rt, http.MethodPost, "/api/generations/generate", second.APIKey, gen("zeta", map[string]any{"prompt": "[simulate:fail] a refused dog"}))
	story := call(t, rt, http.MethodPost, "/api/long-story/videos", owner.APIKey,
		storyBody("A logged day", "en", true, "noir", []storyScene{{1, "Rain on a window"}}))
	for _, a := range []answer{done, failed, story} {
		if a.status != http.StatusOK {
			t.Fatalf("HTTP %d %s", a.status, a.body)
		}
	}
	waitFinal(t, rt, owner.APIKey, done.str("uuid"), time.Minute)
	waitFinal(t, rt, token, failed.str("uuid"), time.Minute)
	waitStory(t, rt, owner.APIKey, story.str("id"))
	call(t, rt, http.MethodGet, "/api/long-story/videos/"+story.str("id"), token, nil)
	call(t, rt, http.MethodPost, "/api/long-story/videos/estimate", owner.APIKey, map[string]any{"model": "beta-2", "scene_count": 2})
	call(t, rt, http.MethodGet, "/api/generations/status/1", unknown.Plain, nil)
	call(t, rt, http.MethodGet, "/api/generations/status/1", forged, nil)
	call(t, rt, http.MethodGet, "/api/generations/status/1", "mgk_"+strings.Repeat("x", 80), malformed(nil))
	call(t, rt, http.MethodPost, "/api/generations/generate", token, malformed(gen("zeta", map[string]any{"prompt": "by token"})))
	prefix, _, _ := apikey.Parse(second.APIKey)
	if _, err := svc.RevokeKey(ctx, prefix); err != nil {
		t.Fatal(err)
	}
	call(t, rt, http.MethodGet, "/api/generations/status/1", second.APIKey, nil)
	call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, `{"model":"provider-a","model_version":"zeta","input":{"prompt":"`+owner.APIKey+`"}}`+"x")

	closeCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	rt.Close(closeCtx) // flush what the background parts log at shutdown
	out := logs.String()
	lines := strings.Count(out, "\n")
	if lines < 20 {
		t.Fatalf("only %d log lines captured; the run did not log through the configured logger", lines)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("a log line is not JSON: %.200s", line)
		}
	}
	recv.wait(t, 2) // the webhook was signed, refused once and delivered
	for name, s := range secrets {
		if strings.Contains(out, s) {
			i := strings.Index(out, s)
			t.Errorf("%s appears in the logs: …%s…", name, out[max(0, i-200):min(len(out), i+len(s)+50)])
		}
	}
	upstreamToken := regexp.MustCompile(`r8_[0-9a-f]{16,}`)
	if m := upstreamToken.FindString(out); m != "" {
		t.Errorf("the upstream token appears in the logs: %s", m)
	}
	if strings.Contains(strings.ToLower(out), "bearer ") {
		t.Error("an Authorization header value appears in the logs")
	}
	t.Logf("searched %d log lines", lines)
}

// TestRefusedCredentialsLogBoundedThrottledLines: with a JWKS configured, a
// token whose kid is 500 KB writes no line past the bound; an unknown API
// key sent 30 times in a minute logs one WARN line, and the first after
// the minute (on the service's clock) says how many were held back.
func TestRefusedCredentialsLogBoundedThrottledLines(t *testing.T) {
	is, err := jwttest.New()
	if err != nil {
		t.Fatal(err)
	}
	defer is.Close()
	logs := &logBuffer{}
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	cfg := runtimeConfig()
	cfg.Log = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg.JWTIssuer, cfg.JWTAudience, cfg.JWKSURL = is.Issuer, is.Audience, is.JWKSURL()
	cfg.Clock = func() time.Time { return time.Unix(0, clock.Load()) }
	rt := start(t, cfg)

	hugeKid := is.SignRS256(is.Claims(rt.Dev.UserID), strings.Repeat("k", 500<<10))
	if a := call(t, rt, http.MethodGet, "/api/generations/status/1", hugeKid, nil); a.status != http.StatusUnauthorized {
		t.Errorf("a token with a 500 KB kid: HTTP %d, want 401", a.status)
	}
	unknown, _ := apikey.New()
	for range 30 {
		if a := call(t, rt, http.MethodGet, "/api/account", unknown.Plain, nil); a.status != http.StatusUnauthorized {
			t.Fatalf("an unknown key: HTTP %d, want 401", a.status)
		}
	}
	clock.Add(int64(time.Minute))
	call(t, rt, http.MethodGet, "/api/account", unknown.Plain, nil)

	var refusedKey []map[string]any
	sawToken := false
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if len(line) > 3*domain.MaxLogValue {
			t.Errorf("a %d-byte log line: %.200s…", len(line), line)
		}
		var entry map[string]any
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			continue
		}
		switch entry["msg"] {
		case "unknown api key":
			refusedKey = append(refusedKey, entry)
		case "token refused":
			sawToken = true
			if entry["level"] != "WARN" {
				t.Errorf("token refused logged at %v, want WARN", entry["level"])
			}
		}
	}
	if !sawToken {
		t.Error("the refused token was not logged")
	}
	if len(refusedKey) != 2 {
		t.Fatalf("%d lines for 31 refusals of one key over a minute, want 2: %v", len(refusedKey), refusedKey)
	}
	if refusedKey[0]["level"] != "WARN" || refusedKey[1]["suppressed"] != float64(29) {
		t.Errorf("the lines are %v; want WARN, the second with suppressed 29", refusedKey)
	}
}
