package runtime_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/local/runtime"
)

func TestEstimateAndAccount(t *testing.T) {
	rt := start(t, runtime.Config{SimulatorLatency: 100 * time.Millisecond})
	owner := newAccount(t, rt, domain.PlanPro, 100)
	body := map[string]any{"model": "provider-a", "model_version": "zeta-pro", "input": map[string]any{"prompt": "three owls", "num_images": 2}}
	est := call(t, rt, http.MethodPost, "/api/generations/estimate", owner.APIKey, body)
	if est.status != http.StatusOK || est.decoded["image_count"] != float64(2) {
		t.Fatalf("estimate: HTTP %d %s", est.status, est.body)
	}
	if a := account(t, rt, owner.UserID); !a.Balance.Equal(credits("100")) || !a.Held.IsZero() {
		t.Errorf("the estimate moved credits: %s/%s", a.Balance, a.Held)
	}
	if n, _ := rt.Embedded.CountGenerations(context.Background(), owner.UserID); n != 0 {
		t.Errorf("the estimate recorded %d generations", n)
	}
	if bad := call(t, rt, http.MethodPost, "/api/generations/estimate", owner.APIKey, malformed(map[string]any{"model": "nope"})); bad.status != http.StatusBadRequest {
		t.Errorf("bad estimate: HTTP %d", bad.status)
	}
	created := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, body)
	if created.str("credits_used") != est.str("credits") {
		t.Errorf("charged %s, estimated %s", created.str("credits_used"), est.str("credits"))
	}
	waitFinal(t, rt, owner.APIKey, created.str("uuid"), 30*time.Second)
	settledAccount(t, rt, owner.UserID) // the hold is settled just after the record turns final
	acct := call(t, rt, http.MethodGet, "/api/account", owner.APIKey, nil)
	if acct.status != http.StatusOK {
		t.Fatalf("account: HTTP %d %s", acct.status, acct.body)
	}
	usage, _ := acct.decoded["usage"].(map[string]any)
	limit, _ := acct.decoded["rate_limit"].(map[string]any)
	wantBalance := credits("100").Sub(credits(est.str("credits"))).StringFixed(2)
	if acct.str("plan") != "pro" || acct.str("balance") != wantBalance || acct.str("held") != "0.00" ||
		usage["credits"] != est.str("credits") || usage["jobs"] != float64(1) || usage["month"] != domain.UsageMonth(time.Now()) ||
		limit["requests_per_minute"] != float64(domain.RateLimitPro) {
		t.Errorf("account = %s; want pro, balance %s, usage of one job", acct.body, wantBalance)
	}
}
