package runtime_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/shared/accounts"
	"github.com/mediagen-dev/mediagen/shared/domain"
	"github.com/mediagen-dev/mediagen/shared/local/runtime/runtimetest"
)

func TestZZProbe(t *testing.T) {
	body := gen("theta-4-fast", map[string]any{"prompt": "a lighthouse in a storm"})
	price := quote(t, body)
	cfg := runtimeConfig()
	var proxy interface{ Requests() map[string]int64 }
	c, p := runtimetest.DynamoDBStandIn(t)
	cfg.DynamoDB, proxy = c, p
	rt := start(t, cfg)
	a, err := (&accounts.Service{Store: rt.Store}).CreateAccount(context.Background(),
		accounts.NewAccount{Plan: domain.PlanEnterprise, RateLimit: 100000, Credits: price.Mul(decimal.NewFromInt(150))})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		before := proxy.Requests()
		t0 := time.Now()
		r := call(t, rt, http.MethodPost, "/api/generations/generate", a.APIKey, body)
		after := proxy.Requests()
		d := map[string]int64{}
		for k, v := range after {
			if v-before[k] != 0 {
				d[k] = v - before[k]
			}
		}
		t.Logf("create %d: HTTP %d in %s: %v", i, r.status, time.Since(t0), d)
	}
	before := proxy.Requests()
	t0 := time.Now()
	time.Sleep(2 * time.Second)
	after := proxy.Requests()
	d := map[string]int64{}
	for k, v := range after {
		d[k] = v - before[k]
	}
	t.Logf("idle %s: %v", time.Since(t0), d)
}
