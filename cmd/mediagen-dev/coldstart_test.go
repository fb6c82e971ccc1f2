package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/deploy"
)

func TestLogicalID(t *testing.T) {
	for folder, want := range map[string]string{"status": "StatusFunction", "generation-estimate": "GenerationEstimateFunction", "long-story-list": "LongStoryListFunction"} {
		if got := logicalID(folder); got != want {
			t.Errorf("logicalID(%q) = %q, want %q", folder, got, want)
		}
	}
}

// The cold starts run each function with template.yaml's environment, its
// resources replaced by the local stand-ins.
func TestColdStartFunctionsHaveTheTemplatesEnvironment(t *testing.T) {
	tmpl, err := deploy.Load("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	resources := map[string]string{
		"AccountsTable": "t-accounts", "ApiKeysTable": "t-keys", "GenerationsTable": "t-generations",
		"LongVideosTable": "t-videos", "RateLimitsTable": "t-limits", "CountersTable": "t-counters",
		"IdempotencyTable": "t-idem", "LedgerTable": "t-ledger", "SlotsTable": "t-slots",
		"PollQueue": "http://queue", "UpstreamTokenSecret": "arn:secret", "OutputBucket": "t-outputs",
	}
	local := map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": "http://moto", "UPSTREAM_TOKENS": `{"simulator":"x"}`}
	for _, name := range coldStartFunctions {
		fn, err := templateFunction(tmpl, name, resources, local)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if fn.Env["API_KEYS_TABLE"] != "t-keys" || fn.Env["ACCOUNTS_TABLE"] != "t-accounts" || fn.Env["AWS_ENDPOINT_URL_DYNAMODB"] != "http://moto" {
			t.Errorf("%s: environment %v lacks the local tables or endpoint", name, fn.Env)
		}
		if fn.Env["ROUTING_FILE"] != "routing.json" {
			t.Errorf("%s: ROUTING_FILE %q, want the parameter's default", name, fn.Env["ROUTING_FILE"])
		}
		if fn.MemoryMB != 256 || fn.Timeout < time.Second {
			t.Errorf("%s: memory %d MB, timeout %s", name, fn.MemoryMB, fn.Timeout)
		}
		_, tokens := fn.Env["UPSTREAM_TOKENS"]
		if want := name == "generate"; tokens != want {
			t.Errorf("%s: UPSTREAM_TOKENS set %v, want %v (only where the template declares it)", name, tokens, want)
		}
	}
	if fn, _ := templateFunction(tmpl, "generate", resources, local); fn.Env["POLL_QUEUE_URL"] != "http://queue" {
		t.Errorf("generate: POLL_QUEUE_URL %q, want the local queue", fn.Env["POLL_QUEUE_URL"])
	}
	delete(resources, "PollQueue")
	if _, err := templateFunction(tmpl, "generate", resources, local); err == nil || !strings.Contains(err.Error(), "POLL_QUEUE_URL") {
		t.Errorf("a resource with no stand-in: %v, want an error naming its variable", err)
	}
}

// The sample events carry the real key, the generation id and the
// authorizer's context.
func TestColdStartEventsCarryTheKeyAndIDs(t *testing.T) {
	auth := map[string]any{"user_id": "usr_1"}
	for _, name := range coldStartFunctions {
		raw, err := sampleEvent("../..", name, "mgk_key", auth, "gen-1")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var ev struct {
			Headers        map[string]string `json:"headers"`
			IdentitySource []string          `json:"identitySource"`
			RawPath        string            `json:"rawPath"`
			PathParameters map[string]string `json:"pathParameters"`
			RequestContext struct {
				HTTP       struct{ Path string } `json:"http"`
				Authorizer *struct {
					Lambda map[string]any `json:"lambda"`
				} `json:"authorizer"`
			} `json:"requestContext"`
		}
		if err := json.Unmarshal(raw, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Headers["authorization"] != "Bearer mgk_key" {
			t.Errorf("%s: authorization %q", name, ev.Headers["authorization"])
		}
		switch name {
		case "authorizer":
			if len(ev.IdentitySource) != 1 || ev.IdentitySource[0] != "Bearer mgk_key" || ev.RequestContext.Authorizer != nil {
				t.Errorf("authorizer event: identity source %v, authorizer %v", ev.IdentitySource, ev.RequestContext.Authorizer)
			}
		default:
			if ev.RequestContext.Authorizer == nil || ev.RequestContext.Authorizer.Lambda["user_id"] != "usr_1" {
				t.Errorf("%s: no authorizer context", name)
			}
		}
		if name == "status" && (ev.PathParameters["id"] != "gen-1" || !strings.HasSuffix(ev.RawPath, "/gen-1") || !strings.HasSuffix(ev.RequestContext.HTTP.Path, "/gen-1")) {
			t.Errorf("status event: id %q, path %q, %q", ev.PathParameters["id"], ev.RawPath, ev.RequestContext.HTTP.Path)
		}
	}
}
