package lambdastack

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudfront"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/core/accounts"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/webhook"
	"github.com/mediagen-dev/mediagen/internal/local/lambdaruntime"
	"github.com/mediagen-dev/mediagen/internal/local/simulator"
	"github.com/mediagen-dev/mediagen/internal/testkit/testsupport"
	"github.com/mediagen-dev/mediagen/internal/testkit/waitfor"
)

// The end-to-end suite on the deployed shape: every route, queue and
// schedule of template.yaml reached through the stack as a client, the
// provider and an operator reach them, with each function's built
// bootstrap, environment and role. The shared stack's checks at the end
// (checkSuite, from TestMain) fail the run when moto denied any call, a
// function's log names AccessDenied, or a function of the template never
// ran.

var (
	// hooks receives the accounts' webhooks for the whole package: the
	// shared stack opens its port to webhooks (WEBHOOK_LOOPBACK_PORTS).
	hooks *hookReceiver
	// gatewayAhead moves the authorizer cache's clock of the shared stack
	// ahead of the wall clock (nanoseconds).
	gatewayAhead atomic.Int64
)

// suiteConfig is the shared stack's configuration: the webhook receiver's
// port open, and the gateway's clock movable.
func suiteConfig(t *testing.T) LocalConfig {
	cfg := testConfig(t, "suite")
	hooks = newHookReceiver()
	u, _ := url.Parse(hooks.srv.URL)
	port, err := strconv.ParseUint(u.Port(), 10, 16)
	if err != nil {
		t.Fatal(err)
	}
	cfg.WebhookLoopbackPorts = []uint16{uint16(port)}
	cfg.GatewayNow = func() time.Time { return time.Now().Add(time.Duration(gatewayAhead.Load())) }
	// The stack's own log (the event source mappings', the gateway's) is
	// kept beside the functions' for a failure's reader.
	f, err := os.Create(filepath.Join(cfg.Dir, "stack.log"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Log = slog.New(slog.NewJSONHandler(f, nil))
	return cfg
}

// checkSuite prints which functions ran and reports (false) what fails the
// suite: a call moto denied, AccessDenied in a function's log, and, when
// every test ran (whole), a function that never ran.
func checkSuite(s *Stack, w io.Writer, whole bool) bool {
	ok := true
	var ran, idle []string
	fns := s.Functions()
	for _, name := range sortedKeys(fns) {
		if n := fns[name].Invocations(); n > 0 {
			ran = append(ran, fmt.Sprintf("%s (%d)", name, n))
		} else {
			idle = append(idle, name)
		}
	}
	fmt.Fprintf(w, "mediagen-dev lambdas: functions that ran: %s\nmediagen-dev lambdas: functions that did not run: %s\n", strings.Join(ran, ", "), strings.Join(idle, ", "))
	if whole {
		if len(idle) > 0 {
			fmt.Fprintf(w, "FAIL: mediagen-dev lambdas: the suite never ran %s\n", strings.Join(idle, ", "))
			ok = false
		}
	}
	for _, d := range s.Moto.Denials() {
		fmt.Fprintf(w, "FAIL: mediagen-dev lambdas: moto denied %s %s: %s %s\n", d.Caller, d.Action, d.Code, d.Message)
		ok = false
	}
	for _, name := range sortedKeys(fns) {
		raw, err := os.ReadFile(fns[name].LogPath)
		if err != nil {
			fmt.Fprintf(w, "FAIL: mediagen-dev lambdas: %s's log: %v\n", name, err)
			ok = false
			continue
		}
		for _, line := range strings.Split(string(raw), "\n") {
			if strings.Contains(line, "AccessDenied") {
				fmt.Fprintf(w, "FAIL: mediagen-dev lambdas: %s was denied: %.600s\n", name, line)
				ok = false
			}
		}
	}
	return ok
}

// wholeRun reports whether the run has no -run or -skip filter: only then
// must every function have run.
func wholeRun() bool {
	for _, name := range []string{"test.run", "test.skip"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" {
			return false
		}
	}
	return true
}

// hookReceiver is an account's webhook receiver on this machine.
type hookReceiver struct {
	srv      *httptest.Server
	mu       sync.Mutex
	received []receivedHook
}

type receivedHook struct {
	at     time.Time
	header http.Header
	body   []byte
}

func newHookReceiver() *hookReceiver {
	h := &hookReceiver{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.received = append(h.received, receivedHook{at: time.Now(), header: r.Header.Clone(), body: body})
		h.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	return h
}

// waitFor waits (at most limit) for a webhook whose body names id, and
// returns every one received so far that does.
func (h *hookReceiver) waitFor(t *testing.T, id string, limit time.Duration) []receivedHook {
	t.Helper()
	got, ok := waitfor.Value(t, limit, "a webhook naming "+id, func() ([]receivedHook, bool) {
		var got []receivedHook
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, r := range h.received {
			if bytes.Contains(r.body, []byte(id)) {
				got = append(got, r)
			}
		}
		return got, len(got) > 0
	})
	if !ok {
		t.FailNow()
	}
	return got
}

// newAccount makes an account of its own for a test, so that its balance
// and journal are the test's alone (enterprise: the status polls stay far
// under its rate limit).
func newAccount(t *testing.T, l *Local, credits int64) accounts.CreatedAccount {
	t.Helper()
	a, err := l.NewAccount(context.Background(), accounts.NewAccount{Plan: domain.PlanEnterprise, Credits: decimal.NewFromInt(credits)})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// mustCall is callAs that fails the test unless the answer has the status
// wanted.
func mustCall(t *testing.T, l *Local, key, method, path, body string, want int) map[string]any {
	t.Helper()
	status, out := callAs(t, l, key, method, path, body)
	if status != want {
		t.Fatalf("%s %s: HTTP %d %v, want %d", method, path, status, out, want)
	}
	return out
}

// balance is the account's balance and held credits, as GET /api/account
// answers them.
func balance(t *testing.T, l *Local, key string) (bal, held decimal.Decimal) {
	t.Helper()
	a := mustCall(t, l, key, http.MethodGet, "/api/account", "", http.StatusOK)
	bal, err := decimal.NewFromString(fmt.Sprint(a["balance"]))
	if err != nil {
		t.Fatalf("balance %v: %v", a["balance"], err)
	}
	if held, err = decimal.NewFromString(fmt.Sprint(a["held"])); err != nil {
		t.Fatalf("held %v: %v", a["held"], err)
	}
	return bal, held
}

// journalOf is the account's journal entries of one work, newest first,
// following the cursors to the end.
func journalOf(t *testing.T, l *Local, key, workID string) []map[string]any {
	t.Helper()
	var out []map[string]any
	q := url.Values{"work_id": {workID}, "limit": {"100"}}
	for {
		page := mustCall(t, l, key, http.MethodGet, "/api/account/transactions?"+q.Encode(), "", http.StatusOK)
		data, _ := page["data"].([]any)
		for _, e := range data {
			out = append(out, e.(map[string]any))
		}
		if page["has_more"] != true {
			return out
		}
		q.Set("cursor", fmt.Sprint(page["next_cursor"]))
	}
}

// types lists the entries' types, oldest first.
func types(entries []map[string]any) []string {
	var out []string
	for i := len(entries) - 1; i >= 0; i-- {
		out = append(out, fmt.Sprint(entries[i]["type"]))
	}
	return out
}

// generate creates a generation and returns its id and price.
func generate(t *testing.T, l *Local, key, body string) (string, decimal.Decimal) {
	t.Helper()
	status, gen := callAs(t, l, key, http.MethodPost, "/api/generations/generate", body)
	if status != http.StatusOK && status != http.StatusCreated {
		t.Fatalf("generate: HTTP %d %v", status, gen)
	}
	id, _ := gen["uuid"].(string)
	price, err := decimal.NewFromString(fmt.Sprint(gen["credits_used"]))
	if id == "" || err != nil {
		t.Fatalf("generate answered %v: no uuid or credits_used", gen)
	}
	return id, price
}

func imageRequest(prompt string) string {
	b, _ := json.Marshal(map[string]any{"model": "provider-a", "model_version": "theta-4-fast", "input": map[string]any{"prompt": prompt}, "image_count": 1})
	return string(b)
}

// A video generation runs to completion and its webhook arrives signed:
// the poller (or the provider's callback, through the upstream webhook
// function) ends it, the event goes on the webhook queue, and the webhooks
// function, invoked by that queue's event source mapping, delivers it to
// the account's receiver, signed with the secret an admin key reads from
// GET /api/account. The output is a video the CDN serves.
func TestAVideoCompletesAndItsSignedWebhookArrives(t *testing.T) {
	l := shared(t)
	acct := newAccount(t, l, 500)
	secret, _ := mustCall(t, l, acct.APIKey, http.MethodGet, "/api/account", "", http.StatusOK)["webhooks"].(map[string]any)["signing_secret"].(string)
	if !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("the account's signing secret is %q", secret)
	}
	body, _ := json.Marshal(map[string]any{"model": "provider-b", "model_version": "beta-2",
		"input":       map[string]any{"prompt": "a heron over the marsh", "seconds": "4", "aspect_ratio": "landscape"},
		"webhook_url": hooks.srv.URL + "/hooks/video", "webhook_events": []string{"generation.completed", "generation.failed"}})
	deliveriesBefore := l.Functions()["WebhooksFunction"].Invocations()
	id, price := generate(t, l, acct.APIKey, string(body))
	view := waitStatusAs(t, l, acct.APIKey, "/api/generations/status/"+id, 3*time.Minute)
	if view["status"] != "completed" {
		t.Fatalf("the video ended %v: %v\n%s", view["status"], view, l.logsOf("PollerFunction"))
	}
	got := hooks.waitFor(t, id, 2*time.Minute)
	if len(got) != 1 {
		t.Errorf("%d webhooks name the generation, want exactly one", len(got))
	}
	h := got[0]
	if err := webhook.Verify(secret, h.header, h.body, time.Now()); err != nil {
		t.Errorf("the webhook's signature does not verify with the account's secret: %v\n%s", err, h.body)
	}
	payload, err := testsupport.DecodeGenerationWebhook(h.body)
	if err != nil {
		t.Fatalf("%v\n%s", err, h.body)
	}
	if payload.Type != "generation.completed" || payload.Data.ID != id || payload.Data.Status != "completed" || len(payload.Data.Output) != 1 {
		t.Errorf("the webhook says %s; want generation.completed with the status view", h.body)
	}
	if n := l.Functions()["WebhooksFunction"].Invocations(); n <= deliveriesBefore {
		t.Errorf("the webhooks function was not invoked (%d invocations before and after): the event did not go through its queue", n)
	}
	outputs, _ := view["output"].([]any)
	if len(outputs) != 1 || !strings.HasSuffix(fmt.Sprint(outputs[0]), ".mp4") {
		t.Fatalf("outputs %v, want one .mp4", view["output"])
	}
	resp, err := l.Media.Client().Get(fmt.Sprint(outputs[0]))
	if err != nil {
		t.Fatal(err)
	}
	mp4, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(mp4) < 1000 || !bytes.Contains(mp4[:min(len(mp4), 64)], []byte("ftyp")) {
		t.Errorf("the video %v: HTTP %d, %d bytes, not an mp4", outputs[0], resp.StatusCode, len(mp4))
	}
	if e := journalOf(t, l, acct.APIKey, id); !slices.Equal(types(e), []string{"hold", "capture"}) || fmt.Sprint(e[0]["amount"]) != price.StringFixed(2) {
		t.Errorf("the video's journal %v, want a hold and a capture of %s", e, price.StringFixed(2))
	}
}

// A cancel stops a generation still running: it answers canceled, the
// status says so, and the hold comes back (a refund), so the balance is
// what it was.
func TestACancelReturnsTheHold(t *testing.T) {
	l := shared(t)
	acct := newAccount(t, l, 100)
	before, _ := balance(t, l, acct.APIKey)
	// The provider holds the generation until it is canceled: the cancel
	// has no race to win against its completion.
	id, _ := generate(t, l, acct.APIKey, imageRequest("a lantern in the fog "+simulator.MarkerHold))
	view := mustCall(t, l, acct.APIKey, http.MethodPost, "/api/generations/"+id+"/cancel", "", http.StatusOK)
	if view["status"] != "canceled" {
		t.Errorf("the cancel answered %v", view)
	}
	if st := mustCall(t, l, acct.APIKey, http.MethodGet, "/api/generations/status/"+id, "", http.StatusOK); st["status"] != "canceled" {
		t.Errorf("after the cancel the status is %v", st["status"])
	}
	if bal, held := balance(t, l, acct.APIKey); !bal.Equal(before) || !held.IsZero() {
		t.Errorf("after the cancel: balance %s held %s, want %s held 0", bal, held, before)
	}
	if e := journalOf(t, l, acct.APIKey, id); !slices.Equal(types(e), []string{"hold", "refund"}) {
		t.Errorf("the canceled work's journal %v, want a hold and a refund", types(e))
	}
	// A second cancel of a finished generation is a conflict.
	if status, out := callAs(t, l, acct.APIKey, http.MethodPost, "/api/generations/"+id+"/cancel", ""); status != http.StatusConflict {
		t.Errorf("a second cancel answered %d %v, want 409", status, out)
	}
}

// Deleting a completed generation's output removes its file from the
// bucket, the CDN's stand-in no longer serves it, and the status view says
// data_removed with no URL.
func TestDeletingAnOutputRemovesTheFile(t *testing.T) {
	l := shared(t)
	acct := newAccount(t, l, 100)
	id, _ := generate(t, l, acct.APIKey, imageRequest("a red kite over the hills"))
	view := waitStatusAs(t, l, acct.APIKey, "/api/generations/status/"+id, 2*time.Minute)
	outputs, _ := view["output"].([]any)
	if view["status"] != "completed" || len(outputs) != 1 {
		t.Fatalf("the generation ended %v with outputs %v", view["status"], view["output"])
	}
	fileURL := fmt.Sprint(outputs[0])
	if code := mediaStatus(t, l, fileURL); code != http.StatusOK {
		t.Fatalf("before the delete the CDN answers %d for %s", code, fileURL)
	}
	removed := mustCall(t, l, acct.APIKey, http.MethodDelete, "/api/generations/"+id+"/output", "", http.StatusOK)
	if removed["data_removed"] != true || len(asList(removed["output"])) != 0 {
		t.Errorf("the delete answered %v, want data_removed and no output", removed)
	}
	if st := mustCall(t, l, acct.APIKey, http.MethodGet, "/api/generations/status/"+id, "", http.StatusOK); st["data_removed"] != true || len(asList(st["output"])) != 0 {
		t.Errorf("after the delete the status view is %v", st)
	}
	if code := mediaStatus(t, l, fileURL); code != http.StatusNotFound {
		t.Errorf("after the delete the CDN answers %d for %s, want 404", code, fileURL)
	}
	s3c := s3.NewFromConfig(l.AdminConfig(), func(o *s3.Options) { o.UsePathStyle = true })
	list, err := s3c.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(l.Ref("OutputBucket")), Prefix: aws.String("generations/" + id + "/")})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Contents) != 0 {
		t.Errorf("the bucket still holds %d objects under generations/%s/", len(list.Contents), id)
	}
	// The deleted files left the distribution's caches: the function's
	// invalidation, under its role, reached the template's distribution.
	if paths := invalidatedPaths(t, l); !slices.Contains(paths, "/generations/"+id+"/*") {
		t.Errorf("the distribution invalidated %v; want the generation's prefix /generations/%s/*", paths, id)
	}
	// The delete is idempotent.
	if again := mustCall(t, l, acct.APIKey, http.MethodDelete, "/api/generations/"+id+"/output", "", http.StatusOK); again["data_removed"] != true {
		t.Errorf("a repeated delete answered %v", again)
	}
}

// invalidatedPaths are the paths of every invalidation the template's
// media distribution holds in moto, read as the operator.
func invalidatedPaths(t *testing.T, l *Local) []string {
	t.Helper()
	ctx := context.Background()
	cf := cloudfront.NewFromConfig(l.AdminConfig())
	dist := aws.String(l.Ref("MediaDistribution"))
	list, err := cf.ListInvalidations(ctx, &cloudfront.ListInvalidationsInput{DistributionId: dist})
	if err != nil {
		t.Fatalf("list the invalidations: %v", err)
	}
	var paths []string
	for _, inv := range list.InvalidationList.Items {
		got, err := cf.GetInvalidation(ctx, &cloudfront.GetInvalidationInput{DistributionId: dist, Id: inv.Id})
		if err != nil {
			t.Fatalf("get invalidation %s: %v", aws.ToString(inv.Id), err)
		}
		paths = append(paths, got.Invalidation.InvalidationBatch.Paths.Items...)
	}
	return paths
}

func mediaStatus(t *testing.T, l *Local, u string) int {
	t.Helper()
	resp, err := l.Media.Client().Get(u)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// The key routes: an admin key makes a key, lists it, the new key works
// within its scopes, and once revoked it is refused, at the latest when
// the gateway's cached answer for it expires (the authorizer's TTL, on a
// clock moved past it). Rotating the webhook secret answers a new secret,
// which GET /api/account then shows.
func TestKeysAreMadeListedUsedAndRevoked(t *testing.T) {
	l := shared(t)
	acct := newAccount(t, l, 100)
	made := mustCall(t, l, acct.APIKey, http.MethodPost, "/api/account/keys", `{"name":"ci","scopes":["read"]}`, http.StatusCreated)
	key, _ := made["api_key"].(string)
	prefix, _ := made["prefix"].(string)
	if key == "" || prefix == "" || !strings.HasPrefix(key, prefix) {
		t.Fatalf("the new key: %v", made)
	}
	list := mustCall(t, l, acct.APIKey, http.MethodGet, "/api/account/keys", "", http.StatusOK)
	if !slices.ContainsFunc(asList(list["data"]), func(k any) bool { return k.(map[string]any)["prefix"] == prefix }) {
		t.Errorf("the key list %v does not hold %s", list, prefix)
	}
	if strings.Contains(fmt.Sprint(list), key) {
		t.Error("the key list shows a secret")
	}
	a := mustCall(t, l, key, http.MethodGet, "/api/account", "", http.StatusOK)
	if a["user_id"] != acct.UserID {
		t.Errorf("the new key reads account %v, want %s", a["user_id"], acct.UserID)
	}
	if status, _ := callAs(t, l, key, http.MethodPost, "/api/generations/generate", imageRequest("not mine to make")); status != http.StatusForbidden {
		t.Errorf("a read key's generate answered %d, want 403", status)
	}
	revoked := mustCall(t, l, acct.APIKey, http.MethodDelete, "/api/account/keys/"+prefix, "", http.StatusOK)
	if revoked["prefix"] != prefix || revoked["revoked_at"] == nil {
		t.Errorf("the revoke answered %v", revoked)
	}
	// The gateway may answer from its cache for the TTL; past it the
	// authorizer reads the key revoked.
	ttl := time.Duration(intOf(l.parameter("AuthorizerCacheTtl"), 0)) * time.Second
	gatewayAhead.Add(int64(ttl + time.Second))
	if status, out := callAs(t, l, key, http.MethodGet, "/api/account", ""); status != http.StatusUnauthorized && status != http.StatusForbidden {
		t.Errorf("the revoked key answered %d %v, want 401 or 403", status, out)
	}

	old := mustCall(t, l, acct.APIKey, http.MethodGet, "/api/account", "", http.StatusOK)["webhooks"].(map[string]any)["signing_secret"]
	rotated := mustCall(t, l, acct.APIKey, http.MethodPost, "/api/account/webhook-secret/rotate", "", http.StatusOK)
	secret, _ := rotated["signing_secret"].(string)
	if !strings.HasPrefix(secret, "whsec_") || secret == old {
		t.Errorf("the rotation answered %v (the old secret %v)", rotated, old)
	}
	if now := mustCall(t, l, acct.APIKey, http.MethodGet, "/api/account", "", http.StatusOK)["webhooks"].(map[string]any)["signing_secret"]; now != secret {
		t.Errorf("after the rotation the account shows %v, want %s", now, secret)
	}
}

// The account's journal and usage show the work: a completed generation
// is a hold and a capture, a failed one (the provider's failure) a hold
// and a release, the balance is what was granted less what was captured,
// and the usage counts the capture.
func TestTheJournalAndUsageShowCapturesAndReleases(t *testing.T) {
	l := shared(t)
	acct := newAccount(t, l, 100)
	done, price := generate(t, l, acct.APIKey, imageRequest("a quiet harbour"))
	failed, _ := generate(t, l, acct.APIKey, imageRequest("a storm "+simulator.MarkerFail))
	if v := waitStatusAs(t, l, acct.APIKey, "/api/generations/status/"+done, 2*time.Minute); v["status"] != "completed" {
		t.Fatalf("the first generation ended %v", v)
	}
	if v := waitStatusAs(t, l, acct.APIKey, "/api/generations/status/"+failed, 2*time.Minute); v["status"] != "failed" || !strings.Contains(fmt.Sprint(v["error"]), simulator.SimulatedFailure) {
		t.Fatalf("the failing generation ended %v, want failed with the provider's error", v)
	}
	if e := journalOf(t, l, acct.APIKey, done); !slices.Equal(types(e), []string{"hold", "capture"}) {
		t.Errorf("the completed work's journal %v, want hold, capture", types(e))
	}
	if e := journalOf(t, l, acct.APIKey, failed); !slices.Equal(types(e), []string{"hold", "release"}) {
		t.Errorf("the failed work's journal %v, want hold, release", types(e))
	}
	if bal, held := balance(t, l, acct.APIKey); !bal.Equal(decimal.NewFromInt(100).Sub(price)) || !held.IsZero() {
		t.Errorf("balance %s held %s, want %s held 0", bal, held, decimal.NewFromInt(100).Sub(price))
	}
	usage := mustCall(t, l, acct.APIKey, http.MethodGet, "/api/account/usage?group_by=model", "", http.StatusOK)
	total, _ := usage["total"].(map[string]any)
	if fmt.Sprint(total["credits"]) != price.StringFixed(2) || fmt.Sprint(total["generations"]) != "1" {
		t.Errorf("usage %v, want %s credits for one generation", usage, price.StringFixed(2))
	}
}

// The routes no other test reaches answer as the contract says: the
// catalog and the contract without a key, the estimate, the list, and the
// long-form routes that need no workflow (estimate, list, an unknown id).
func TestTheOtherRoutesAnswer(t *testing.T) {
	l := shared(t)
	acct := newAccount(t, l, 100)
	for _, c := range []struct {
		method, path, body string
		key                string
		want               int
		has                string
	}{
		{http.MethodGet, "/api/models", "", "", http.StatusOK, "theta-4-fast"},
		{http.MethodGet, "/api/openapi.json", "", "", http.StatusOK, "openapi"},
		{http.MethodPost, "/api/generations/estimate", imageRequest("a price"), acct.APIKey, http.StatusOK, "credits"},
		{http.MethodGet, "/api/generations?limit=5", "", acct.APIKey, http.StatusOK, "has_more"},
		{http.MethodPost, "/api/long-story/videos/estimate", `{"model":"beta-2","scene_count":2}`, acct.APIKey, http.StatusOK, "credits"},
		{http.MethodGet, "/api/long-story/videos", "", acct.APIKey, http.StatusOK, "has_more"},
		{http.MethodGet, "/api/long-story/videos/6f1d3c1e-0000-4000-8000-000000000000", "", acct.APIKey, http.StatusNotFound, ""},
		{http.MethodPost, "/api/long-story/videos/6f1d3c1e-0000-4000-8000-000000000000/cancel", "", acct.APIKey, http.StatusNotFound, ""},
		{http.MethodDelete, "/api/long-story/videos/6f1d3c1e-0000-4000-8000-000000000000/output", "", acct.APIKey, http.StatusNotFound, ""},
		{http.MethodPost, "/api/long-story/videos/6f1d3c1e-0000-4000-8000-000000000000/scenes/1/regenerate", "", acct.APIKey, http.StatusNotFound, ""},
	} {
		status, out := callAs(t, l, c.key, c.method, c.path, c.body)
		if status != c.want || !strings.Contains(fmt.Sprint(out), c.has) {
			t.Errorf("%s %s: HTTP %d %.300v, want %d with %q", c.method, c.path, status, out, c.want, c.has)
		}
	}
	// The provider calls back at the API's own address: the port it
	// listens on.
	named := 0
	for name, fn := range l.Functions() {
		if v, ok := fn.pool.Fn.Env["PUBLIC_BASE_URL"]; ok {
			named++
			if v != l.BaseURL {
				t.Errorf("%s's PUBLIC_BASE_URL is %q, want the API's %s", name, v, l.BaseURL)
			}
		}
	}
	if named == 0 {
		t.Error("no function has the template's PUBLIC_BASE_URL")
	}
}

// The sweeper's schedule runs on the deployed shape: its tick invokes the
// function with a scheduled event, and the function answers (its queries
// of the open holds are its role's to make).
func TestTheSweepersScheduleRuns(t *testing.T) {
	l := shared(t)
	before := l.Functions()["SweeperFunction"].Invocations()
	n, err := l.RunSchedules(context.Background(), "SweeperFunction")
	if err != nil {
		t.Fatalf("the sweep failed: %v\n%s", err, l.logsOf("SweeperFunction"))
	}
	if n != 1 || l.Functions()["SweeperFunction"].Invocations() != before+1 {
		t.Errorf("%d schedules ticked the sweeper, want 1 (template.yaml's rate(5 minutes))", n)
	}
}

// A poller killed mid-batch, after its capture reached DynamoDB and before
// it had the answer: Lambda reports the invocation Runtime.ExitError, the
// event source mapping leaves the message, the queue delivers it again
// after its visibility timeout, and the generation is settled once (one
// capture in the journal, the balance charged once).
func TestAPollerKilledMidBatchIsRedeliveredAndSettlesOnce(t *testing.T) {
	l := shared(t)
	acct := newAccount(t, l, 100)
	poller := l.Functions()["PollerFunction"]

	// The queue's visibility timeout is 6 x the poller's (30 min): for
	// the test it is set as an operator may set it (Lambda checks it
	// against the function's timeout only when a mapping is made).
	ctx := context.Background()
	q := sqs.NewFromConfig(l.AdminConfig())
	queue := aws.String(l.Ref("PollQueue"))
	attrs, err := q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: queue, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameVisibilityTimeout}})
	if err != nil {
		t.Fatal(err)
	}
	var (
		receives atomic.Int64 // the mapping's receives answered
		genID    atomic.Value
		killed   atomic.Int64 // the pid killed first
		mu       sync.Mutex
		// The receipts of the generation's messages delivered again, and
		// the receipts the mapping deleted (settled).
		again   = map[string]bool{}
		deleted = map[string]bool{}
	)
	genID.Store("")
	stop := l.Moto.Observe(func(x Exchange) {
		if x.Caller == "PollerFunction" && x.Action == "AmazonSQS.ReceiveMessage" {
			receives.Add(1)
		}
		id := genID.Load().(string)
		if id == "" || x.Caller != "PollerFunction" || x.Status != http.StatusOK {
			return
		}
		switch x.Action {
		case "AmazonSQS.ReceiveMessage":
			var out struct {
				Messages []struct {
					ReceiptHandle string
					Body          string
					Attributes    map[string]string
				}
			}
			json.Unmarshal(x.Response, &out)
			mu.Lock()
			for _, m := range out.Messages {
				if n, _ := strconv.Atoi(m.Attributes["ApproximateReceiveCount"]); n >= 2 && strings.Contains(m.Body, id) {
					again[m.ReceiptHandle] = true
				}
			}
			mu.Unlock()
		case "AmazonSQS.DeleteMessage":
			var in struct{ ReceiptHandle string }
			json.Unmarshal(x.Request, &in)
			mu.Lock()
			deleted[in.ReceiptHandle] = true
			mu.Unlock()
		case "DynamoDB_20120810.TransactWriteItems":
			// The capture is in DynamoDB and its answer not yet with the
			// poller: kill the poller's processes now.
			if bytes.Contains(x.Request, []byte(id)) && bytes.Contains(x.Request, []byte(`"captured"`)) && killed.Load() == 0 {
				for _, pid := range poller.PIDs() {
					killed.CompareAndSwap(0, int64(pid))
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
	})
	defer stop()

	const visibility = 5 * time.Second
	if _, err := q.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: queue, Attributes: map[string]string{"VisibilityTimeout": strconv.Itoa(int(visibility.Seconds()))}}); err != nil {
		t.Fatal(err)
	}
	defer q.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: queue, Attributes: attrs.Attributes})
	// A receive takes the queue's timeout when it starts (SQS and moto
	// alike), and the mapping's long polls run one after the other: the
	// second answered from now started after the change.
	after := receives.Load()
	if !waitfor.Condition(t, time.Minute, "the mapping's receives under the new visibility timeout", func() bool { return receives.Load() >= after+2 }) {
		t.FailNow()
	}

	id, price := generate(t, l, acct.APIKey, imageRequest("a ferry at night"))
	genID.Store(id)
	if !waitfor.Condition(t, 2*time.Minute, "the poller's capture of the generation, to kill it there", func() bool { return killed.Load() != 0 }) {
		t.FailNow()
	}
	// The message in the killed batch comes back after the visibility
	// timeout; its poll finds the generation settled, and the mapping
	// deletes it.
	if !waitfor.Condition(t, visibility+2*time.Minute, "a delivery again of the generation's message, settled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for receipt := range again {
			if deleted[receipt] {
				return true
			}
		}
		return false
	}) {
		t.FailNow()
	}
	if log := l.logsOf("PollerFunction"); !strings.Contains(log, "Status: "+lambdaruntime.ErrorTypeExit) {
		t.Errorf("the poller's log reports no %s for the killed invocation:\n%s", lambdaruntime.ErrorTypeExit, log)
	}
	if view := waitStatusAs(t, l, acct.APIKey, "/api/generations/status/"+id, time.Minute); view["status"] != "completed" {
		t.Errorf("the generation ended %v: %v", view["status"], view)
	}
	if e := journalOf(t, l, acct.APIKey, id); !slices.Equal(types(e), []string{"hold", "capture"}) {
		t.Errorf("the journal of the work %v, want one hold and one capture", types(e))
	}
	if bal, held := balance(t, l, acct.APIKey); !bal.Equal(decimal.NewFromInt(100).Sub(price)) || !held.IsZero() {
		t.Errorf("balance %s held %s, want %s held 0: charged once", bal, held, decimal.NewFromInt(100).Sub(price))
	}
}

// parameter is a template parameter's value: the stack's override, or
// the template's default.
func (s *Stack) parameter(name string) string {
	if v, ok := s.cfg.Parameters[name]; ok {
		return v
	}
	p, _ := s.doc["Parameters"].(map[string]any)[name].(map[string]any)
	return fmt.Sprint(p["Default"])
}

// A browser on another origin reaches the API as the template's
// CorsConfiguration allows: the gateway answers the preflight itself (no
// authorizer, no route runs), and a real request's answer names the
// origin and exposes the rate-limit headers.
func TestABrowserOnAnotherOriginPassesCORSAsConfigured(t *testing.T) {
	l := shared(t)
	authorizer, generate := l.Functions()["AuthorizerFunction"], l.Functions()["GenerateFunction"]
	authBefore, genBefore := authorizer.Invocations(), generate.Invocations()
	req, _ := http.NewRequest(http.MethodOptions, l.BaseURL+"/api/generations/generate", nil)
	req.Header.Set("Origin", "https://studio.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "authorization,content-type,idempotency-key")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	h := resp.Header
	if resp.StatusCode != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != "*" ||
		!strings.Contains(h.Get("Access-Control-Allow-Methods"), "POST") ||
		!strings.Contains(h.Get("Access-Control-Allow-Headers"), "idempotency-key") || h.Get("Access-Control-Max-Age") != "600" {
		t.Errorf("preflight: HTTP %d, headers %v; want 204 with the template's CORS configuration", resp.StatusCode, h)
	}
	if authorizer.Invocations() != authBefore || generate.Invocations() != genBefore {
		t.Errorf("the preflight invoked the authorizer %d and the route %d times; the gateway answers it alone",
			authorizer.Invocations()-authBefore, generate.Invocations()-genBefore)
	}

	req, _ = http.NewRequest(http.MethodGet, l.BaseURL+"/api/account", nil)
	req.Header.Set("Origin", "https://studio.example")
	req.Header.Set("Authorization", "Bearer "+l.Dev.APIKey)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != "*" ||
		!strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "x-ratelimit-remaining") {
		t.Errorf("GET /api/account from another origin: HTTP %d, headers %v; want 200 allowing the origin and exposing the rate-limit headers", resp.StatusCode, resp.Header)
	}
}
