package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/core/accounts"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/local/runtime"
	"github.com/mediagen-dev/mediagen/internal/testkit/runtimetest"
	"github.com/mediagen-dev/mediagen/internal/testkit/waitfor"
)

// start runs a local runtime on a free loopback port with fast polling
// (runtimetest.Start), at the workflow's real waits unless cfg says
// otherwise.
func start(t *testing.T, cfg runtime.Config) *runtime.Runtime {
	t.Helper()
	if cfg.WorkflowWaitScale == 0 {
		cfg.WorkflowWaitScale = 1
	}
	return runtimetest.Start(t, cfg)
}

type answer struct {
	status  int
	header  http.Header
	body    []byte
	decoded map[string]any
}

func (a answer) str(path ...string) string {
	var v any = a.decoded
	for _, p := range path {
		m, _ := v.(map[string]any)
		v = m[p]
	}
	s, _ := v.(string)
	return s
}

// call sends one request; body may be a string (sent as is) or a value
// (sent as JSON), wrapped in malformed() when the request is meant not to
// match openapi.yaml (see contract_test.go).
func call(t *testing.T, rt *runtime.Runtime, method, path, key string, body any) answer {
	t.Helper()
	m, isMalformed := body.(malformedBody)
	if isMalformed {
		body = m.body
	}
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, rt.BaseURL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("accept", "application/json")
	return send(t, req, isMalformed)
}

// send sends a request built by the test and reads the answer.
func send(t *testing.T, req *http.Request, isMalformed bool) answer {
	t.Helper()
	resp, err := http.DefaultClient.Do(forContract(t, req, isMalformed))
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, header: resp.Header, body: raw}
	_ = json.Unmarshal(raw, &a.decoded)
	return a
}

// newAccount opens an account on the runtime's store.
func newAccount(t *testing.T, rt *runtime.Runtime, plan domain.Plan, credits int64) accounts.CreatedAccount {
	t.Helper()
	svc := &accounts.Service{Store: rt.Store}
	in := accounts.NewAccount{Plan: plan, Credits: decimal.NewFromInt(credits)}
	if plan == domain.PlanEnterprise {
		in.RateLimit = 100000 // tests that poll hard are not about rate limits
	}
	a, err := svc.CreateAccount(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func account(t *testing.T, rt *runtime.Runtime, userID string) domain.Account {
	t.Helper()
	a, err := rt.Store.GetAccount(context.Background(), userID)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// settledAccount is the account once no hold of it is open: a record turns
// final just before its hold is settled (two writes), so a test that saw
// the final status waits for the settlement, at most 30 s (a hold still
// open then fails the test), before reading the totals.
func settledAccount(t *testing.T, rt *runtime.Runtime, userID string) domain.Account {
	t.Helper()
	waitfor.Condition(t, 30*time.Second, "the holds of "+userID+" to be settled", func() bool {
		holds, err := rt.Store.AccountHolds(context.Background(), userID)
		if err != nil {
			t.Fatal(err)
		}
		return len(holds) == 0
	})
	return account(t, rt, userID)
}

// waitFinal polls the status route until the generation is final. It may
// run on any goroutine: it reports with Errorf and ok=false.
func waitFinal(t *testing.T, rt *runtime.Runtime, key, id string, limit time.Duration) (answer, bool) {
	t.Helper()
	a, ok := waitfor.Value(t, limit, "generation "+id+" to end", func() (answer, bool) {
		a := call(t, rt, http.MethodGet, "/api/generations/status/"+id, key, nil)
		return a, a.status != http.StatusOK || a.str("status") != "processing"
	})
	if ok && a.status != http.StatusOK {
		t.Errorf("status of %s: HTTP %d %s", id, a.status, a.body)
		return a, false
	}
	return a, ok
}

// download saves url under dir; like waitFinal it may run on any goroutine.
func download(t *testing.T, url, dir, name string) (string, bool) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Errorf("download %s: %v", url, err)
		return "", false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("download %s: HTTP %d", url, resp.StatusCode)
		return "", false
	}
	path := dir + "/" + name
	f, err := os.Create(path)
	if err != nil {
		t.Errorf("save %s: %v", url, err)
		return "", false
	}
	defer f.Close()
	if _, err := io.Copy(f, resp.Body); err != nil {
		t.Errorf("save %s: %v", url, err)
		return "", false
	}
	return path, true
}

// callHeaders is call with extra request headers; body may be wrapped in
// malformed like call's.
func callHeaders(t *testing.T, rt *runtime.Runtime, method, path, key string, body any, headers map[string]string) answer {
	t.Helper()
	m, isMalformed := body.(malformedBody)
	if isMalformed {
		body = m.body
	}
	raw, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(method, rt.BaseURL+path, bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	return send(t, req, isMalformed)
}

func imageBody(prompt string) map[string]any {
	return map[string]any{"model": "provider-a", "model_version": "theta-4-fast", "input": map[string]any{"prompt": prompt}}
}

func credits(s string) decimal.Decimal { return decimal.RequireFromString(s) }
