package runtime_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/local/costs"
	"github.com/mediagen-dev/mediagen/internal/local/runtime"
	"github.com/mediagen-dev/mediagen/internal/testkit/runtimetest"
	"github.com/mediagen-dev/mediagen/internal/testkit/waitfor"
)

// TestCostMeterCountsWhatOneGenerationWouldBill runs one image generation
// to its end and checks the meter counted the requests the deployed system
// would make for it: every route call is an API request and two Lambda
// invocations (authorizer and route: no authorizer cache, the runtime's
// default), the output is one S3 PUT, each poll
// is a SendMessage, a ReceiveMessage and a DeleteMessageBatch; on DynamoDB
// the meter counts the units of the store's requests.
func TestCostMeterCountsWhatOneGenerationWouldBill(t *testing.T) {
	// The poll path: the provider does not call back.
	rt := start(t, runtime.Config{SimulatorLatency: 300 * time.Millisecond, NoUpstreamWebhooks: true,
		DynamoDB: runtimetest.DynamoDB(t)})
	acct := newAccount(t, rt, domain.PlanEnterprise, 1000)
	before := rt.Costs.Snapshot()
	created := call(t, rt, http.MethodPost, "/api/generations/generate", acct.APIKey, map[string]any{
		"model": "provider-a", "model_version": "theta-4-fast", "input": map[string]any{"prompt": "a red kite"}})
	if created.status != http.StatusOK {
		t.Fatalf("generate: HTTP %d %s", created.status, created.body)
	}
	statusCalls := 0
	a, ok := waitfor.Value(t, time.Minute, "the generation to end", func() (answer, bool) {
		a := call(t, rt, http.MethodGet, "/api/generations/status/"+created.str("uuid"), acct.APIKey, nil)
		statusCalls++
		return a, a.str("status") != "processing"
	})
	if !ok || a.str("status") != "completed" {
		t.Fatalf("status: HTTP %d %s", a.status, a.body)
	}
	waitQueueEmpty(t, rt)
	c := rt.Costs.Snapshot().Sub(before)
	t.Logf("one generation, %d status calls: %+v", statusCalls, c)

	if want := int64(1 + statusCalls); c.APIRequests != want {
		t.Errorf("API requests %d, want %d (generate + %d status)", c.APIRequests, want, statusCalls)
	}
	if c.ByFunction["authorizer"] != c.APIRequests || c.ByFunction["generate"] != 1 || c.ByFunction["status"] != int64(statusCalls) {
		t.Errorf("invocations by function %v: want an authorizer call per request, 1 generate, %d status", c.ByFunction, statusCalls)
	}
	polls := c.ByFunction["poller"]
	if polls < 1 {
		t.Fatalf("no poller invocation counted: %v", c.ByFunction)
	}
	if c.LambdaInvocations != c.APIRequests*2+polls {
		t.Errorf("Lambda invocations %d, want %d", c.LambdaInvocations, c.APIRequests*2+polls)
	}
	// SendMessage per poll scheduled (the last poll schedules none), plus a
	// receive and a delete per delivered batch.
	if want := polls + 2*polls; c.SQSRequests != want {
		t.Errorf("SQS requests %d, want %d for %d polls", c.SQSRequests, want, polls)
	}
	if c.S3PutRequests != 1 {
		t.Errorf("S3 PUT-class requests %d, want 1 (the output)", c.S3PutRequests)
	}
	// DynamoDB units by item size (internal/local/costs proves the rules):
	// at least a rate-limit counter per request, and the hold and the
	// capture, each a transaction of two items and an open-holds index
	// entry (5 units).
	if want := float64(c.APIRequests) + 10; c.DynamoDBWriteUnit < want {
		t.Errorf("DynamoDB write units %v, want at least %v", c.DynamoDBWriteUnit, want)
	}
	if c.DynamoDBReadUnits < float64(c.APIRequests) || c.LambdaGBSeconds <= 0 {
		t.Errorf("reads %v, GB-s %v: want at least a read per request and some compute", c.DynamoDBReadUnits, c.LambdaGBSeconds)
	}
}

// waitQueueEmpty waits until no poll and no webhook delivery is waiting or
// running.
func waitQueueEmpty(t *testing.T, rt *runtime.Runtime) {
	t.Helper()
	if !waitfor.Condition(t, 30*time.Second, "the queues to be empty", func() bool { return rt.Queue.Len() == 0 && rt.WebhookQueue.Len() == 0 }) {
		t.Fatalf("the poll queue still holds %d messages, the webhook queue %d", rt.Queue.Len(), rt.WebhookQueue.Len())
	}
}

// TestCostMeterCountsOneAuthorizerInvocationPerCacheMiss: with the
// gateway's authorizer cache on (the deployed default TTL), the meter
// counts an authorizer invocation only when the gateway invokes it, once
// per Authorization value per TTL; every request is still an API request
// and a route invocation, and a request without a key is neither.
func TestCostMeterCountsOneAuthorizerInvocationPerCacheMiss(t *testing.T) {
	rt := start(t, runtime.Config{AuthCacheTTL: costs.AuthorizerCacheTTL})
	a := newAccount(t, rt, domain.PlanEnterprise, 1000)
	b := newAccount(t, rt, domain.PlanEnterprise, 1000)
	before := rt.Costs.Snapshot()
	for _, key := range []string{a.APIKey, a.APIKey, b.APIKey, a.APIKey, b.APIKey} {
		if r := call(t, rt, http.MethodGet, "/api/generations/status/1", key, nil); r.status != http.StatusNotFound {
			t.Fatalf("HTTP %d %s", r.status, r.body)
		}
	}
	if r := call(t, rt, http.MethodPost, "/api/generations/estimate", a.APIKey, map[string]any{
		"model": "provider-a", "model_version": "theta-4-fast", "input": map[string]any{"prompt": "a red kite"}}); r.status != http.StatusOK {
		t.Fatalf("estimate: HTTP %d %s", r.status, r.body)
	}
	call(t, rt, http.MethodGet, "/api/account", "", malformed(nil)) // the gateway's own 401
	c := rt.Costs.Snapshot().Sub(before)
	if c.APIRequests != 6 || c.ByFunction["authorizer"] != 2 || c.ByFunction["status"] != 5 || c.ByFunction["generation-estimate"] != 1 || c.LambdaInvocations != 8 {
		t.Errorf("API requests %d, invocations %d %v; want 6 requests, 8 invocations: 2 authorizer (one per key), 5 status, 1 estimate",
			c.APIRequests, c.LambdaInvocations, c.ByFunction)
	}
}
