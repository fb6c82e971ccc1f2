package runtime_test

import (
	"net/http"
	"testing"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/local/runtime"
	"github.com/mediagen-dev/mediagen/internal/testkit/runtimetest"
)

// TestStatusReadsTheKeyTheAccountAndTheRecordOnce: behind the authorizer, a
// status request reads the API key and the account (authorizer) and the
// record (route) once each, and writes only its rate-limit count (on
// DynamoDB, whose units the meter counts), but for the key's first use,
// which the authorizer notes (then at most every 5 minutes); the limit
// it reports is still the account's own, whichever the plan.
func TestStatusReadsTheKeyTheAccountAndTheRecordOnce(t *testing.T) {
	rt := start(t, runtime.Config{DynamoDB: runtimetest.DynamoDB(t)})
	for _, tt := range []struct {
		plan  domain.Plan
		limit string
	}{{domain.PlanFree, "10"}, {domain.PlanPro, "100"}, {domain.PlanEnterprise, "100000"}} {
		t.Run(string(tt.plan), func(t *testing.T) {
			owner := newAccount(t, rt, tt.plan, 0)
			before := rt.Costs.Snapshot()
			for _, path := range []string{"/api/generations/status/00000000-0000-0000-0000-000000000000", "/api/long-story/videos/00000000-0000-0000-0000-000000000000"} {
				a := call(t, rt, http.MethodGet, path, owner.APIKey, nil)
				if a.status != http.StatusNotFound || a.header.Get("X-RateLimit-Limit") != tt.limit {
					t.Errorf("GET %s: HTTP %d, X-RateLimit-Limit %q; want 404 and %s", path, a.status, a.header.Get("X-RateLimit-Limit"), tt.limit)
				}
			}
			c := rt.Costs.Snapshot().Sub(before)
			// Per request: key, account, record (1 unit each, all small),
			// and the count; the first request also notes the key's first
			// use: its item and its user-index entry, 1 unit each.
			if c.DynamoDBReadUnits != 2*3 || c.DynamoDBWriteUnit != 2*1+2 {
				t.Errorf("two status requests read %v and wrote %v units, want 6 and 4", c.DynamoDBReadUnits, c.DynamoDBWriteUnit)
			}
		})
	}
}
