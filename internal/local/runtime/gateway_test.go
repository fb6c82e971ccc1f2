package runtime_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/local/apigw"
	"github.com/mediagen-dev/mediagen/internal/local/runtime"
	"github.com/mediagen-dev/mediagen/internal/local/simulator"
	"github.com/mediagen-dev/mediagen/internal/testkit/waitfor"
)

// TestEveryErrorCarriesItsRequestID: a request no route takes is the error
// envelope with its request_id, like a route's error, and every answer
// names its request in the gateway's header with the same id.
func TestEveryErrorCarriesItsRequestID(t *testing.T) {
	rt := start(t, runtimeConfig())
	owner := newAccount(t, rt, domain.PlanPro, 10)
	tests := []struct {
		name, method, path, key string
		status                  int
		isMalformed             bool // no operation of openapi.yaml
	}{
		{"an unknown path", http.MethodGet, "/api/nothing", owner.APIKey, http.StatusNotFound, true},
		{"an unknown path without credentials", http.MethodGet, "/api/nothing/at/all", "", http.StatusNotFound, true},
		{"a route's path with another method", http.MethodPost, "/api/account", owner.APIKey, http.StatusNotFound, true},
		{"a route's path without its id", http.MethodGet, "/api/generations/status/", owner.APIKey, http.StatusNotFound, true},
		{"a route's 404", http.MethodGet, "/api/generations/status/00000000-0000-4000-8000-000000000000", owner.APIKey, http.StatusNotFound, false},
		{"a route's 401", http.MethodGet, "/api/account", "mgk_short", http.StatusUnauthorized, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body any
			if tt.isMalformed {
				body = malformed(nil)
			}
			a := call(t, rt, tt.method, tt.path, tt.key, body)
			checkEnvelope(t, a, tt.status)
			if id := a.header.Get(apigw.RequestIDHeader); id == "" || id != a.str("request_id") {
				t.Errorf("%s %q, request_id %q: want the same id in both", apigw.RequestIDHeader, id, a.str("request_id"))
			}
		})
	}
}

// TestAMissingKeyIsTheGatewaysOwn401: a request to an authenticated route
// without an Authorization header is refused by the gateway itself, as
// API Gateway refuses a request without the authorizer's identity source:
// 401 {"message":"Unauthorized"} with the gateway's request id, no
// envelope and no WWW-Authenticate, and neither the authorizer nor the
// route runs (nothing is counted). A key that is present but wrong is
// still the route's envelope (TestBadCredentialsAnswer401).
func TestAMissingKeyIsTheGatewaysOwn401(t *testing.T) {
	rt := start(t, runtimeConfig())
	before := rt.Costs.Snapshot()
	for _, r := range []struct{ method, path string }{
		{http.MethodGet, "/api/account"},
		{http.MethodGet, "/api/generations/status/1"},
		{http.MethodPost, "/api/generations/generate"},
		{http.MethodPost, "/api/long-story/videos/estimate"},
	} {
		a := call(t, rt, r.method, r.path, "", malformed(nil))
		if a.status != http.StatusUnauthorized || string(a.body) != `{"message":"Unauthorized"}`+"\n" {
			t.Errorf("%s %s: HTTP %d %q, want the gateway's 401 {\"message\":\"Unauthorized\"}", r.method, r.path, a.status, a.body)
		}
		if a.header.Get(apigw.RequestIDHeader) == "" || a.header.Get("Content-Type") != "application/json" || a.header.Get("WWW-Authenticate") != "" {
			t.Errorf("%s %s: headers %v, want Content-Type application/json and %s, and no WWW-Authenticate", r.method, r.path, a.header, apigw.RequestIDHeader)
		}
	}
	if d := rt.Costs.Snapshot().Sub(before); d.LambdaInvocations != 0 || d.APIRequests != 0 {
		t.Errorf("the gateway's 401s counted %d invocations (%v) and %d routed requests, want none", d.LambdaInvocations, d.ByFunction, d.APIRequests)
	}
}

// TestARoutePastTheIntegrationTimeoutGets503AndItsWorkIsSettled: a
// generate whose provider answers late runs past the gateway's integration
// timeout (30 s in AWS, shortened here). The client gets API Gateway's own
// 503 at the timeout instead of a dropped connection, while the route runs
// on: its one job completes and is charged once, and the account has no
// open hold.
func TestARoutePastTheIntegrationTimeoutGets503AndItsWorkIsSettled(t *testing.T) {
	rt := start(t, runtime.Config{Timeouts: apigw.Timeouts{Integration: 300 * time.Millisecond}})
	owner := newAccount(t, rt, domain.PlanEnterprise, 1000)
	// The provider starts the job and answers it 2 s late.
	rt.Simulator.Inject(simulator.Fault{Face: simulator.FaceReplicate, Model: thetaModel, Status: http.StatusCreated,
		AfterCreate: true, Hang: 2 * time.Second})
	body := imageBody("a harbor at night")
	a := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, body)
	if a.status != http.StatusServiceUnavailable || string(a.body) != `{"message":"Service Unavailable"}`+"\n" ||
		a.header.Get(apigw.RequestIDHeader) == "" {
		t.Fatalf("generate past the integration timeout: HTTP %d %q, want the gateway's 503", a.status, a.body)
	}
	id, ok := waitfor.Value(t, time.Minute, "the generation behind the 503 to be listed", func() (string, bool) {
		list := call(t, rt, http.MethodGet, "/api/generations", owner.APIKey, nil)
		var id string
		if items, _ := list.decoded["data"].([]any); len(items) == 1 {
			id, _ = items[0].(map[string]any)["id"].(string)
		}
		return id, id != ""
	})
	if !ok {
		t.FailNow()
	}
	if s, ok := waitFinal(t, rt, owner.APIKey, id, time.Minute); !ok || s.str("status") != "completed" {
		t.Fatalf("the generation behind the 503 ended %s: %s, want completed", s.str("status"), s.body)
	}
	price := quote(t, body)
	if acct := settledAccount(t, rt, owner.UserID); !acct.Held.IsZero() || !acct.Captured.Equal(price) || !acct.Balance.Equal(credits("1000").Sub(price)) {
		t.Errorf("balance %s held %s captured %s, want %s charged once and no hold", acct.Balance, acct.Held, acct.Captured, price)
	}
	if n := rt.Simulator.Jobs(thetaModel); n != 1 {
		t.Errorf("%d upstream jobs, want 1", n)
	}
}
