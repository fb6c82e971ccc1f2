package runtime_test

// The contract checked by the ecosystem's validating proxy: Stoplight
// Prism (`prism proxy --errors`) stands in front of the local runtime and
// checks every request against api/openapi.yaml before it forwards it, and
// every answer before it passes it on. With --errors a request that breaks
// the contract is refused (422, or 401 for missing credentials) without
// reaching the service, an answer that breaks it becomes Prism's own 500
// (application/problem+json), and either way the `sl-violations` header
// lists what it found, warnings included.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/apikey"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/local/simulator"
	"github.com/mediagen-dev/mediagen/internal/testkit/testsupport"
	"github.com/mediagen-dev/mediagen/internal/testkit/waitfor"
)

// prismProxy is a running `prism proxy --errors`.
type prismProxy struct {
	URL    string
	log    *logBuffer
	client *http.Client
}

// startPrism runs Prism's validating proxy for the document at spec in
// front of target, on a free loopback port, until the test ends.
func startPrism(t *testing.T, spec, target string) *prismProxy {
	t.Helper()
	prism, err := testsupport.NodeTool("prism")
	if err != nil {
		t.Fatal(err)
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		p := &prismProxy{
			URL: "http://127.0.0.1:" + strconv.Itoa(port),
			log: &logBuffer{},
			// Not http.DefaultClient: its contract transport would judge
			// Prism's own refusals; here Prism is the judge.
			client: &http.Client{Transport: &http.Transport{}, Timeout: time.Minute},
		}
		cmd := exec.Command(prism, "proxy", "--errors", "--host", "127.0.0.1", "--port", strconv.Itoa(port), spec, target)
		cmd.Stdout, cmd.Stderr = p.log, p.log
		// Its own process group, so that the cleanup ends it and nothing else.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatalf("start prism: %v", err)
		}
		// exited is closed once the process has ended, with its error in
		// waitErr: the wait below and the stop both look at it.
		exited := make(chan struct{})
		var waitErr error
		go func() { waitErr = cmd.Wait(); close(exited) }()
		stop := func() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-exited
			}
		}
		if lastErr = p.waitListening(t, exited, &waitErr, time.Minute); lastErr == nil {
			t.Cleanup(stop)
			return p
		}
		stop()
	}
	t.Fatalf("prism proxy did not start: %v", lastErr)
	return nil
}

// waitListening waits until Prism says it listens, or has exited (its
// port taken meanwhile: the caller tries another).
func (p *prismProxy) waitListening(t *testing.T, exited <-chan struct{}, waitErr *error, limit time.Duration) error {
	t.Helper()
	ended := func() bool {
		select {
		case <-exited:
			return true
		default:
			return false
		}
	}
	if !waitfor.Condition(t, limit, "prism to listen", func() bool {
		return ended() || strings.Contains(p.log.String(), "Prism is listening")
	}) {
		return fmt.Errorf("not listening after %v: %s", limit, p.log.String())
	}
	if ended() {
		return fmt.Errorf("prism exited (%v): %s", *waitErr, p.log.String())
	}
	return nil
}

// logCaughtUp sends one more request and waits until Prism has logged its
// arrival: Prism writes its log in order, and logs what it found wrong
// with a request before it answers, so by then the log holds everything
// about the requests answered before.
func (p *prismProxy) logCaughtUp(t *testing.T, key string) {
	t.Helper()
	mark := "/api/generations/status/log-mark-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	p.valid(t, prismRequest{method: http.MethodGet, path: mark, key: key}, http.StatusBadRequest) // not an id
	waitfor.Condition(t, time.Minute, "prism to log the request to "+mark, func() bool {
		return strings.Contains(p.log.String(), mark)
	})
}

// violations is every line of Prism's log that reports a violation: a
// warning is logged as "Violation: ...", and with --errors a request or
// answer that fails is logged as the request terminated with an error.
func (p *prismProxy) violations() []string {
	var out []string
	for _, line := range strings.Split(p.log.String(), "\n") {
		if strings.Contains(line, "Violation") || strings.Contains(line, "terminated with error") {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return out
}

// prismRequest is one call through the proxy.
type prismRequest struct {
	method, path, key string
	body              any               // nil, a string sent as is, or a value sent as JSON
	header            map[string]string // extra headers
}

// send sends r through the proxy and reads the answer.
func (p *prismProxy) send(t *testing.T, r prismRequest) answer {
	t.Helper()
	var rd io.Reader
	switch b := r.body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(r.method, p.URL+r.path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if r.key != "" {
		req.Header.Set("Authorization", "Bearer "+r.key)
	}
	if r.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s through prism: %v", r.method, r.path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, header: resp.Header, body: raw}
	_ = json.Unmarshal(raw, &a.decoded)
	return a
}

// valid sends r and requires the service's answer, with status want, to
// pass Prism with no violation at all.
func (p *prismProxy) valid(t *testing.T, r prismRequest, want int) answer {
	t.Helper()
	a := p.send(t, r)
	if v := a.header.Get("sl-violations"); v != "" {
		t.Errorf("%s %s: prism found violations: %s\nbody: %s", r.method, r.path, v, clipBody(a.body))
	}
	if strings.Contains(a.header.Get("Content-Type"), "problem+json") {
		t.Errorf("%s %s: HTTP %d is prism's, not the service's: %s", r.method, r.path, a.status, clipBody(a.body))
	} else if a.status != want {
		t.Errorf("%s %s: HTTP %d, want %d: %s", r.method, r.path, a.status, want, clipBody(a.body))
	}
	if a.status >= 400 && a.str("request_id") == "" {
		t.Errorf("%s %s: the error %s has no request_id", r.method, r.path, clipBody(a.body))
	}
	return a
}

// waitFinal polls a generation's status through the proxy, each answer
// checked, until it is no longer processing, and returns its status.
func (p *prismProxy) waitFinal(t *testing.T, key, ref string) string {
	t.Helper()
	a, _ := waitfor.Value(t, 2*time.Minute, "generation "+ref+" to end", func() (answer, bool) {
		a := p.valid(t, prismRequest{method: http.MethodGet, path: "/api/generations/status/" + ref, key: key}, http.StatusOK)
		return a, a.str("status") != "processing" || a.status != http.StatusOK
	})
	return a.str("status")
}

// flags reports whether Prism's problem+json answer lists a violation at
// a location that begins with path (such as "body", "language_code").
func flags(a answer, path ...string) bool {
	list, _ := a.decoded["validation"].([]any)
	for _, v := range list {
		m, _ := v.(map[string]any)
		loc, _ := m["location"].([]any)
		match := len(loc) >= len(path)
		for i := 0; match && i < len(path); i++ {
			match = loc[i] == path[i]
		}
		if match {
			return true
		}
	}
	return false
}

func clipBody(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + "…"
	}
	return string(b)
}

func contractPath(t *testing.T) string {
	t.Helper()
	root, err := testsupport.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "api", "openapi.yaml")
}

// TestPrismProxyFindsNoViolation sends the spec's calls and one of each
// error class the service answers through Prism's validating proxy: every
// request and every answer matches openapi.yaml. Then it shows that the
// proxy does check bodies. The error classes are the ones a request that
// matches the document can meet; a body that is not JSON (415) or too
// large (413), or a request without credentials (Prism's own 401), breaks
// the document itself, so Prism refuses it first; the contract transport's
// tests check the service's answers to those.
func TestPrismProxyFindsNoViolation(t *testing.T) {
	delivered := make(chan struct{}, 4)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case delivered <- struct{}{}:
		default:
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()
	cfg := storyConfig()
	cfg.WebhookAllow = []string{hostPort(t, receiver.URL)}
	rt := start(t, cfg)
	p := startPrism(t, contractPath(t), rt.BaseURL)
	owner := newAccount(t, rt, domain.PlanEnterprise, 1000)
	key := owner.APIKey
	const unknownID = "00000000-0000-4000-8000-000000000000"
	// The jobs canceled below are slow ones, still in flight when canceled.
	slow := " " + simulator.MarkerSlow

	t.Run("public routes", func(t *testing.T) {
		p.valid(t, prismRequest{method: http.MethodGet, path: "/api/models"}, http.StatusOK)
		p.valid(t, prismRequest{method: http.MethodGet, path: "/api/openapi.json"}, http.StatusOK)
	})
	t.Run("account", func(t *testing.T) {
		p.valid(t, prismRequest{method: http.MethodGet, path: "/api/account", key: key}, http.StatusOK)
	})

	var imageUUID, videoUUID string
	t.Run("generations", func(t *testing.T) {
		image := gen("zeta", map[string]any{"prompt": "a fox in the snow"})
		image["webhook_url"] = receiver.URL + "/hook"
		image["webhook_events"] = []string{"generation.completed"}
		video := gen("beta-2", map[string]any{"prompt": "a pan over hills" + slow, "seconds": "4", "aspect_ratio": "landscape"})
		failing := gen("theta-4-fast", map[string]any{"prompt": "a storm " + simulator.MarkerFail})
		p.valid(t, prismRequest{method: http.MethodPost, path: "/api/generations/estimate", key: key, body: image}, http.StatusOK)
		p.valid(t, prismRequest{method: http.MethodPost, path: "/api/generations/estimate", key: key, body: video}, http.StatusOK)
		vid := p.valid(t, prismRequest{method: http.MethodPost, path: "/api/generations/generate", key: key, body: video}, http.StatusOK)
		videoUUID = vid.str("uuid")
		if videoUUID == "" {
			t.Fatalf("generate answered no uuid: %s", vid.body)
		}
		p.valid(t, prismRequest{method: http.MethodPost, path: "/api/generations/" + videoUUID + "/cancel", key: key}, http.StatusOK)
		img := p.valid(t, prismRequest{method: http.MethodPost, path: "/api/generations/generate", key: key, body: image}, http.StatusOK)
		bad := p.valid(t, prismRequest{method: http.MethodPost, path: "/api/generations/generate", key: key, body: failing}, http.StatusOK)
		imageUUID = img.str("uuid")
		imageID, _ := img.decoded["id"].(float64)
		if imageUUID == "" || imageID == 0 || bad.str("uuid") == "" {
			t.Fatalf("generate did not answer ids: %s / %s", img.body, bad.body)
		}
		// The status route takes the uuid or the record's integer id; each
		// view on the way to the end is checked: processing, then
		// completed (with its webhook's attempts) or failed.
		for ref, want := range map[string]string{imageUUID: "completed", strconv.Itoa(int(imageID)): "completed", bad.str("uuid"): "failed"} {
			if got := p.waitFinal(t, key, ref); got != want {
				t.Errorf("generation %s ended %s, want %s", ref, got, want)
			}
		}
		select {
		case <-delivered:
		case <-time.After(time.Minute):
			t.Errorf("the completed webhook did not arrive")
		}
		// The status view with the delivery recorded.
		if a, ok := waitfor.Value(t, time.Minute, "the status view to list the webhook's attempt", func() (answer, bool) {
			a := p.valid(t, prismRequest{method: http.MethodGet, path: "/api/generations/status/" + imageUUID, key: key}, http.StatusOK)
			hook, _ := a.decoded["webhook"].(map[string]any)
			attempts, _ := hook["attempts"].([]any)
			return a, len(attempts) > 0
		}); !ok {
			t.Errorf("the status view lists no webhook attempt: %s", a.body)
		}
		p.valid(t, prismRequest{method: http.MethodGet, path: "/api/generations?limit=5", key: key}, http.StatusOK)
		p.valid(t, prismRequest{method: http.MethodGet, path: "/api/generations?limit=1&status=completed&model=provider-a", key: key}, http.StatusOK)
		// Deleting the outputs, and again: both answer the view, removed.
		for range 2 {
			a := p.valid(t, prismRequest{method: http.MethodDelete, path: "/api/generations/" + imageUUID + "/output", key: key}, http.StatusOK)
			if a.decoded["data_removed"] != true {
				t.Errorf("delete output answered %s", a.body)
			}
		}
		p.valid(t, prismRequest{method: http.MethodGet, path: "/api/generations/status/" + imageUUID, key: key}, http.StatusOK)
	})

	t.Run("long-form videos", func(t *testing.T) {
		p.valid(t, prismRequest{method: http.MethodPost, path: "/api/long-story/videos/estimate", key: key,
			body: map[string]any{"model": "beta-2", "scene_count": 3}}, http.StatusOK)
		story := storyBody("A walk in the woods", "fr", true, "cinematic", []storyScene{{1, "a path" + slow}, {2, "a gate" + slow}})
		p.valid(t, prismRequest{method: http.MethodPost, path: "/api/long-story/videos/estimate", key: key,
			body: map[string]any{"model": "beta-2", "scenes": story["scenes"], "language_code": "fr", "voice": "remi"}}, http.StatusOK)
		p.valid(t, prismRequest{method: http.MethodGet, path: "/api/long-story/voices?language_code=fr", key: key}, http.StatusOK)
		created := p.valid(t, prismRequest{method: http.MethodPost, path: "/api/long-story/videos", key: key, body: story}, http.StatusOK)
		id := created.str("video_id")
		if id == "" {
			t.Fatalf("create answered no video_id: %s", created.body)
		}
		p.valid(t, prismRequest{method: http.MethodGet, path: "/api/long-story/videos/" + id, key: key}, http.StatusOK)
		p.valid(t, prismRequest{method: http.MethodGet, path: "/api/long-story/videos?limit=5", key: key}, http.StatusOK)
		p.valid(t, prismRequest{method: http.MethodPost, path: "/api/long-story/videos/" + id + "/cancel", key: key}, http.StatusOK)
		// 409: a canceled video is final.
		p.valid(t, prismRequest{method: http.MethodPost, path: "/api/long-story/videos/" + id + "/cancel", key: key}, http.StatusConflict)
		// A canceled video's files (its scenes' clips so far) can go.
		p.valid(t, prismRequest{method: http.MethodDelete, path: "/api/long-story/videos/" + id + "/output", key: key}, http.StatusOK)
	})

	t.Run("idempotency", func(t *testing.T) {
		estimate := func(scenes int) prismRequest {
			return prismRequest{method: http.MethodPost, path: "/api/long-story/videos/estimate", key: key,
				body: map[string]any{"model": "beta-2", "scene_count": scenes}, header: map[string]string{"Idempotency-Key": "prism-estimate-1"}}
		}
		p.valid(t, estimate(2), http.StatusOK)
		if again := p.valid(t, estimate(2), http.StatusOK); again.header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("the replay has no Idempotent-Replayed: %v", again.header)
		}
		// 422: the same key with another request.
		p.valid(t, estimate(3), http.StatusUnprocessableEntity)
	})

	t.Run("keys", func(t *testing.T) {
		limited := p.valid(t, prismRequest{method: http.MethodPost, path: "/api/account/keys", key: key,
			body: map[string]any{"name": "prism", "scopes": []string{"read", "generate"}, "daily_credit_limit": "6.00"}}, http.StatusCreated)
		reader := p.valid(t, prismRequest{method: http.MethodPost, path: "/api/account/keys", key: key,
			body: map[string]any{"name": "reader", "scopes": []string{"read"}}}, http.StatusCreated)
		p.valid(t, prismRequest{method: http.MethodGet, path: "/api/account/keys", key: key}, http.StatusOK)
		// 400: a name the document allows and the service refuses (blank).
		p.valid(t, prismRequest{method: http.MethodPost, path: "/api/account/keys", key: key, body: map[string]any{"name": " "}}, http.StatusBadRequest)
		// 403: a scope the key lacks.
		p.valid(t, prismRequest{method: http.MethodPost, path: "/api/generations/generate", key: reader.str("api_key"),
			body: gen("zeta", map[string]any{"prompt": "a fox"})}, http.StatusForbidden)
		p.valid(t, prismRequest{method: http.MethodGet, path: "/api/account/keys", key: reader.str("api_key")}, http.StatusForbidden)
		// 402: past the key's daily limit (5.07 each, 6.00 a day).
		zeta := gen("zeta", map[string]any{"prompt": "a heron"})
		p.valid(t, prismRequest{method: http.MethodPost, path: "/api/generations/generate", key: limited.str("api_key"), body: zeta}, http.StatusOK)
		p.valid(t, prismRequest{method: http.MethodPost, path: "/api/generations/generate", key: limited.str("api_key"), body: zeta}, http.StatusPaymentRequired)
		// Revoke: 200, then unknown and malformed prefixes.
		p.valid(t, prismRequest{method: http.MethodDelete, path: "/api/account/keys/" + reader.str("prefix"), key: key}, http.StatusOK)
		p.valid(t, prismRequest{method: http.MethodDelete, path: "/api/account/keys/mgk_aaaaaaaaaa", key: key}, http.StatusNotFound)
		p.valid(t, prismRequest{method: http.MethodDelete, path: "/api/account/keys/nope", key: key}, http.StatusBadRequest)
	})

	t.Run("errors", func(t *testing.T) {
		// 400: requests the document allows and the service refuses.
		p.valid(t, prismRequest{method: http.MethodGet, path: "/api/generations/status/not-an-id", key: key}, http.StatusBadRequest)
		long := storyBody("A walk", "ja", true, "auto", []storyScene{{1, "a path"}})
		long["scenes"].([]any)[0].(map[string]any)["narration"] = strings.Repeat("a", 60) // over ja's 37
		p.valid(t, prismRequest{method: http.MethodPost, path: "/api/long-story/videos", key: key, body: long}, http.StatusBadRequest)
		// 401: a key of the right form that the service does not know.
		unknown, err := apikey.New()
		if err != nil {
			t.Fatal(err)
		}
		p.valid(t, prismRequest{method: http.MethodGet, path: "/api/account", key: unknown.Plain}, http.StatusUnauthorized)
		// 401: the provider's callback, unsigned.
		p.valid(t, prismRequest{method: http.MethodPost, path: "/api/upstream/webhook?generation=" + imageUUID,
			body: map[string]any{"id": "job-1", "status": "succeeded", "output": "http://127.0.0.1/x.png"}}, http.StatusUnauthorized)
		// 402: a balance short of the price.
		poor := newAccount(t, rt, domain.PlanPro, 1)
		p.valid(t, prismRequest{method: http.MethodPost, path: "/api/generations/generate", key: poor.APIKey,
			body: gen("beta-2", map[string]any{"prompt": "a long shot", "seconds": "12", "aspect_ratio": "landscape"})}, http.StatusPaymentRequired)
		// 404: unknown ids.
		p.valid(t, prismRequest{method: http.MethodGet, path: "/api/generations/status/" + unknownID, key: key}, http.StatusNotFound)
		p.valid(t, prismRequest{method: http.MethodPost, path: "/api/generations/" + unknownID + "/cancel", key: key}, http.StatusNotFound)
		p.valid(t, prismRequest{method: http.MethodGet, path: "/api/long-story/videos/" + unknownID, key: key}, http.StatusNotFound)
		p.valid(t, prismRequest{method: http.MethodPost, path: "/api/long-story/videos/" + unknownID + "/cancel", key: key}, http.StatusNotFound)
		p.valid(t, prismRequest{method: http.MethodDelete, path: "/api/generations/" + unknownID + "/output", key: key}, http.StatusNotFound)
		p.valid(t, prismRequest{method: http.MethodDelete, path: "/api/long-story/videos/" + unknownID + "/output", key: key}, http.StatusNotFound)
		// 409: a canceled generation is final.
		p.valid(t, prismRequest{method: http.MethodPost, path: "/api/generations/" + videoUUID + "/cancel", key: key}, http.StatusConflict)
		// 409: the outputs of a generation still processing.
		busy := p.valid(t, prismRequest{method: http.MethodPost, path: "/api/generations/generate", key: key,
			body: gen("theta-4-fast", map[string]any{"prompt": "a slow tide" + slow})}, http.StatusOK)
		p.valid(t, prismRequest{method: http.MethodDelete, path: "/api/generations/" + busy.str("uuid") + "/output", key: key}, http.StatusConflict)
		p.valid(t, prismRequest{method: http.MethodPost, path: "/api/generations/" + busy.str("uuid") + "/cancel", key: key}, http.StatusOK)
		// 429: past the free plan's requests per minute. The count is per
		// calendar minute, so a minute that turns mid-way only restarts it.
		free := newAccount(t, rt, domain.PlanFree, 10)
		limited := false
		for i := 0; i < 2*domain.RateLimitFree+1 && !limited; i++ {
			a := p.send(t, prismRequest{method: http.MethodGet, path: "/api/account", key: free.APIKey})
			if a.status == http.StatusTooManyRequests {
				p.valid(t, prismRequest{method: http.MethodGet, path: "/api/account", key: free.APIKey}, http.StatusTooManyRequests)
				limited = true
			} else if v := a.header.Get("sl-violations"); v != "" || a.status != http.StatusOK {
				t.Errorf("GET /api/account on the free plan: HTTP %d, violations %q: %s", a.status, v, clipBody(a.body))
			}
		}
		if !limited {
			t.Errorf("no 429 after %d requests on the free plan", 2*domain.RateLimitFree+1)
		}
	})

	// Prism logs a warning before it answers, through a log stream that
	// may lag a little behind: wait until it has logged one more request.
	p.logCaughtUp(t, key)
	if v := p.violations(); len(v) > 0 {
		t.Errorf("prism logged %d violations:\n%s", len(v), strings.Join(v, "\n"))
	}

	// Prism's silence above means something only if it checks bodies both
	// ways: a request body the document forbids is refused before it
	// reaches the service, and answers are checked against the document
	// (a copy that requires a field the service does not send).
	proof := newAccount(t, rt, domain.PlanEnterprise, 1000)
	t.Run("prism refuses a request body the contract forbids", func(t *testing.T) {
		before, err := rt.Store.GetAccount(context.Background(), proof.UserID)
		if err != nil {
			t.Fatal(err)
		}
		// The contract's language codes are lowercase.
		body := storyBody("A walk", "FR", true, "auto", []storyScene{{1, "a path"}})
		a := p.send(t, prismRequest{method: http.MethodPost, path: "/api/long-story/videos", key: proof.APIKey, body: body})
		if a.status != http.StatusUnprocessableEntity || !strings.Contains(a.header.Get("Content-Type"), "problem+json") {
			t.Errorf("prism let a body with language_code FR through: HTTP %d %s", a.status, clipBody(a.body))
		}
		if !flags(a, "body", "language_code") {
			t.Errorf("prism's refusal does not name the body's language_code: %s", clipBody(a.body))
		}
		// A generate body is checked against its variant's input schema.
		a = p.send(t, prismRequest{method: http.MethodPost, path: "/api/generations/generate", key: proof.APIKey,
			body: gen("zeta", map[string]any{"prompt": "a fox", "seconds": "4"})})
		if a.status != http.StatusUnprocessableEntity || !flags(a, "body", "input") {
			t.Errorf("prism let an input field zeta does not have through: HTTP %d %s", a.status, clipBody(a.body))
		}
		after, err := rt.Store.GetAccount(context.Background(), proof.UserID)
		if err != nil {
			t.Fatal(err)
		}
		if !after.Held.Equal(before.Held) {
			t.Errorf("the refused request reached the service: held %s → %s", before.Held, after.Held)
		}
	})

	t.Run("prism checks the answers against the contract", func(t *testing.T) {
		doc, err := os.ReadFile(contractPath(t))
		if err != nil {
			t.Fatal(err)
		}
		const accountRequired = "required: [user_id, plan, balance, held, rate_limit, usage, webhooks, outputs]"
		if bytes.Count(doc, []byte(accountRequired)) != 1 {
			t.Fatalf("openapi.yaml no longer has the Account schema's %q: update this test", accountRequired)
		}
		wrong := bytes.Replace(doc, []byte(accountRequired),
			[]byte("required: [user_id, plan, balance, held, rate_limit, usage, webhooks, outputs, nickname]"), 1)
		spec := filepath.Join(t.TempDir(), "openapi.yaml")
		if err := os.WriteFile(spec, wrong, 0o644); err != nil {
			t.Fatal(err)
		}
		p := startPrism(t, spec, rt.BaseURL)
		a := p.send(t, prismRequest{method: http.MethodGet, path: "/api/account", key: proof.APIKey})
		if a.status != http.StatusInternalServerError || !strings.Contains(a.header.Get("Content-Type"), "problem+json") {
			t.Errorf("prism passed an answer without the required nickname: HTTP %d %s", a.status, clipBody(a.body))
		}
		if !flags(a, "response", "body") || !strings.Contains(a.header.Get("sl-violations"), "nickname") {
			t.Errorf("prism's answer does not name the missing nickname: %s %s", a.header.Get("sl-violations"), clipBody(a.body))
		}
		// Prism logs the failure after it answers.
		if !waitfor.Condition(t, 30*time.Second, "prism to log the violation", func() bool { return len(p.violations()) > 0 }) {
			t.Errorf("prism logged no violation: %s", p.log.String())
		}
	})
}
