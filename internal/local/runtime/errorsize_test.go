package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/local/runtime"
	"github.com/mediagen-dev/mediagen/internal/local/simulator"
	"github.com/mediagen-dev/mediagen/internal/testkit/runtimetest"
)

// smallAnswer bounds the answer to a bad request, whatever its size.
const smallAnswer = 8 << 10

// TestHugeFieldNamesGetSmallAnswersAndKeepSmallAnswers: a 5.2 MB unknown
// field name, at the top of a body or inside it, on every route that
// reports unknown fields, is answered with a small 400 (the name clipped),
// and with an Idempotency-Key the store keeps no more than that answer, on
// both stores. A repeat gets the same small answer.
func TestHugeFieldNamesGetSmallAnswersAndKeepSmallAnswers(t *testing.T) {
	huge := strings.Repeat("n", 5_200_000)
	gen := map[string]any{"model": "provider-a", "model_version": "theta-4-fast", "input": map[string]any{"prompt": "a fox"}}
	with := func(m map[string]any, k string, v any) map[string]any {
		out := map[string]any{}
		for key, val := range m {
			out[key] = val
		}
		out[k] = v
		return out
	}
	story := map[string]any{"prompt": "a harbour", "language_code": "en", "scenes": []any{map[string]any{"scene_number": 1, "prompt": "boats"}}}
	routes := []struct {
		name, path string
		body       map[string]any
		keeps      bool // the route keeps its answers under an Idempotency-Key
	}{
		{"generate, top level", "/api/generations/generate", with(gen, huge, 1), true},
		{"generate, in input", "/api/generations/generate", with(gen, "input", map[string]any{"prompt": "a fox", huge: 1}), true},
		{"generation estimate", "/api/generations/estimate", with(gen, huge, 1), true},
		{"long-form create, top level", "/api/long-story/videos", with(story, huge, 1), true},
		{"long-form create, in a scene", "/api/long-story/videos", with(story, "scenes", []any{map[string]any{"scene_number": 1, "prompt": "boats", huge: 1}}), true},
		{"long-form estimate", "/api/long-story/videos/estimate", map[string]any{"model": "beta-2", "scene_count": 2, huge: 1}, true},
		{"key creation", "/api/account/keys", map[string]any{"name": "ci", huge: 1}, false},
	}
	stores := []struct {
		name string
		cfg  func(t *testing.T) runtime.Config
	}{
		{"embedded", func(*testing.T) runtime.Config { return runtimeConfig() }},
		{"dynamodb", func(t *testing.T) runtime.Config { return runtime.Config{DynamoDB: runtimetest.DynamoDB(t)} }},
	}
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			rt := start(t, st.cfg(t))
			owner := newAccount(t, rt, domain.PlanEnterprise, 1000)
			before := account(t, rt, owner.UserID)
			for i, r := range routes {
				t.Run(r.name, func(t *testing.T) {
					key := fmt.Sprintf("huge-%d", i)
					for try := 0; try < 2; try++ {
						a := callHeaders(t, rt, http.MethodPost, r.path, owner.APIKey, malformed(r.body), map[string]string{"Idempotency-Key": key})
						if checkEnvelope(t, a, http.StatusBadRequest) != "invalid_request" || len(a.body) > smallAnswer {
							t.Fatalf("try %d: HTTP %d, %d bytes, want a 400 under %d bytes", try, a.status, len(a.body), smallAnswer)
						}
						if !strings.Contains(string(a.body), strings.Repeat("n", catalog.MaxEchoRunes)+"…") || strings.Contains(string(a.body), strings.Repeat("n", catalog.MaxEchoRunes+1)) {
							t.Errorf("try %d: %s, want the name clipped to %d characters", try, a.body, catalog.MaxEchoRunes)
						}
						if replayed := a.header.Get("Idempotent-Replayed") == "true"; replayed != (r.keeps && try == 1) {
							t.Errorf("try %d: Idempotent-Replayed %v", try, replayed)
						}
					}
					// What the store keeps for the key: at most the small answer.
					kept, claimed, err := rt.Store.ClaimIdempotencyKey(context.Background(), domain.IdempotencyRecord{UserID: owner.UserID, Key: key,
						Fingerprint: "probe", CreatedAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour)})
					if err != nil {
						t.Fatal(err)
					}
					if r.keeps && (claimed || kept.StatusCode != http.StatusBadRequest) {
						t.Errorf("the key keeps status %d (claimed %v), want the 400 kept", kept.StatusCode, claimed)
					}
					if len(kept.Body) > smallAnswer {
						t.Errorf("the store keeps %d bytes for the key, want under %d", len(kept.Body), smallAnswer)
					}
				})
			}
			// Nothing was made or charged, on either store.
			after := account(t, rt, owner.UserID)
			if !after.Balance.Equal(before.Balance) || !after.Held.IsZero() {
				t.Errorf("balance %s→%s, held %s: want nothing charged", before.Balance, after.Balance, after.Held)
			}
			for _, list := range []string{"/api/generations", "/api/long-story/videos", "/api/account/keys"} {
				l := call(t, rt, http.MethodGet, list, owner.APIKey, nil)
				if items, _ := l.decoded["data"].([]any); l.status != http.StatusOK || (list != "/api/account/keys" && len(items) != 0) || (list == "/api/account/keys" && len(items) != 1) {
					t.Errorf("GET %s: HTTP %d %s, want nothing new", list, l.status, l.body)
				}
			}
		})
	}
}

// internals matches what an answer must not show: an address with a port,
// a dial error, or Go's error chain words.
var internals = regexp.MustCompile(`\d{1,3}(\.\d{1,3}){3}:\d+|\[[0-9a-fA-F:]+\]:\d+|localhost:\d+|dial tcp|connect:|connection refused|context deadline exceeded|Post "|Get "|https?://`)

// closedPort is a loopback address where nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestAnUnreachableUpstreamIsNamedNotItsAddress: with every variant routed
// to an upstream on a closed port, a create answers 502
// upstream_unavailable naming the upstream and the failed record, and
// neither the answer nor the record's status view shows the dial error.
func TestAnUnreachableUpstreamIsNamedNotItsAddress(t *testing.T) {
	t.Setenv("MEDIAGEN_TEST_DEAD_TOKEN", "token")
	variants := map[string]any{}
	for _, v := range catalog.All() {
		variants[v.Model+"/"+v.Version] = []any{map[string]any{"upstream": "dead", "model": v.Model + "/" + v.Version, "types": map[string]string{}}}
	}
	file := map[string]any{
		"upstreams": map[string]any{"dead": map[string]any{"protocol": "fal", "base_url": "http://" + closedPort(t),
			"token_env": "MEDIAGEN_TEST_DEAD_TOKEN", "output_hosts": []string{"127.0.0.1"}}},
		"variants": variants,
	}
	raw, err := json.Marshal(file)
	if err != nil {
		t.Fatal(err)
	}
	cfg := runtimeConfig()
	cfg.RoutingFile = filepath.Join(t.TempDir(), "routing.json")
	if err := os.WriteFile(cfg.RoutingFile, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	rt := start(t, cfg)
	owner := newAccount(t, rt, domain.PlanEnterprise, 1000)
	a := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, imageBody("a lighthouse"))
	if checkEnvelope(t, a, http.StatusBadGateway) != "upstream_unavailable" || !strings.Contains(a.str("error", "message"), "upstream unreachable: dead") {
		t.Errorf("generate: HTTP %d %s, want 502 upstream_unavailable naming the upstream", a.status, a.body)
	}
	if internals.Match(a.body) {
		t.Errorf("the answer %s shows an address or an internal error", a.body)
	}
	id := a.str("error", "generation_id")
	s := call(t, rt, http.MethodGet, "/api/generations/status/"+id, owner.APIKey, nil)
	if s.status != http.StatusOK || s.str("status") != "failed" || !strings.Contains(s.str("error"), "dead") {
		t.Fatalf("status of the named record %q: HTTP %d %s, want it failed, naming the upstream", id, s.status, s.body)
	}
	if internals.Match(s.body) {
		t.Errorf("the status view %s shows an address or an internal error", s.body)
	}
	unchanged(t, rt, account(t, rt, owner.UserID), 1)
}

// TestARefusalStatesTheProvidersReasonOnceAndNamesTheRecord: the
// provider's refusal of the input (the simulator's 422 with the invalid
// field in its detail and in invalid_fields) is a 502 upstream_refused that
// says the reason once and names the failed record, whose view says it
// once too. A repeat with the same Idempotency-Key gets the same answer
// and sends nothing more to the provider.
func TestARefusalStatesTheProvidersReasonOnceAndNamesTheRecord(t *testing.T) {
	rt := start(t, runtimeConfig())
	owner := newAccount(t, rt, domain.PlanEnterprise, 1000)
	const model = "provider-a/theta-4-fast"
	body := imageBody("a fox " + simulator.MarkerRefuse)
	var first answer
	for try := 0; try < 2; try++ {
		a := callHeaders(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, body, map[string]string{"Idempotency-Key": "refused-1"})
		if checkEnvelope(t, a, http.StatusBadGateway) != "upstream_refused" {
			t.Fatalf("try %d: HTTP %d %s, want 502 upstream_refused", try, a.status, a.body)
		}
		if n := strings.Count(a.str("error", "message"), simulator.SimulatedRefusal); n != 1 {
			t.Errorf("try %d: message %q says the provider's reason %d times, want once", try, a.str("error", "message"), n)
		}
		if internals.Match(a.body) {
			t.Errorf("try %d: the answer %s shows an address or an internal error", try, a.body)
		}
		if try == 0 {
			first = a
		} else if string(a.body) != string(first.body) || a.header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("the repeat answered %s, want the first answer %s replayed", a.body, first.body)
		}
	}
	if n := rt.Simulator.Creates(model); n != 1 {
		t.Errorf("the provider received %d creates, want 1", n)
	}
	id := first.str("error", "generation_id")
	s := call(t, rt, http.MethodGet, "/api/generations/status/"+id, owner.APIKey, nil)
	if s.str("status") != "failed" || strings.Count(s.str("error"), simulator.SimulatedRefusal) != 1 {
		t.Errorf("status of the named record %q: HTTP %d %s, want failed with the provider's reason once", id, s.status, s.body)
	}
	unchanged(t, rt, account(t, rt, owner.UserID), 1)
}

// TestAnUpstreamGoneWhilePollingIsNamedNotItsAddress: the provider took the
// job, then went away; the poller gives up after its tries and the record
// says the upstream was unreachable, by name, without the dial error.
func TestAnUpstreamGoneWhilePollingIsNamedNotItsAddress(t *testing.T) {
	rt, sim := routed(t, runtime.Config{}, failoverRoutes)
	owner := newAccount(t, rt, domain.PlanEnterprise, 1000)
	a := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, imageBody("a slow fox "+simulator.MarkerSlow))
	if a.status != http.StatusOK {
		t.Fatalf("generate: HTTP %d %s", a.status, a.body)
	}
	sim.Close()
	s, ok := waitFinal(t, rt, owner.APIKey, a.str("uuid"), 2*time.Minute)
	if !ok || s.str("status") != "failed" || s.str("error") != "upstream unreachable: "+a.str("upstream") {
		t.Fatalf("ended %s: %s, want failed saying the upstream %q was unreachable", s.str("status"), s.body, a.str("upstream"))
	}
	if internals.Match(s.body) {
		t.Errorf("the status view %s shows an address or an internal error", s.body)
	}
}
