package runtime_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/longform"
	"github.com/mediagen-dev/mediagen/internal/core/media"
	"github.com/mediagen-dev/mediagen/internal/local/apigw"
	"github.com/mediagen-dev/mediagen/internal/local/objectstore"
	"github.com/mediagen-dev/mediagen/internal/local/runtime"
	"github.com/mediagen-dev/mediagen/internal/testkit/waitfor"
)

// TestConcurrentCancelsAnswerOne200AndTheRest409: cancels of one generation
// sent at once: exactly one answers 200 canceled, every other one 409, and
// the credits come back once.
func TestConcurrentCancelsAnswerOne200AndTheRest409(t *testing.T) {
	rt := start(t, runtime.Config{SimulatorLatency: 5 * time.Second})
	owner := newAccount(t, rt, domain.PlanEnterprise, 1000)
	const rounds, cancels = 8, 8
	for i := 0; i < rounds; i++ {
		created := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, imageBody("a slow tide"))
		if created.status != http.StatusOK {
			t.Fatalf("generate: HTTP %d %s", created.status, created.body)
		}
		var (
			wg      sync.WaitGroup
			ready   = make(chan struct{})
			answers [cancels]answer
		)
		for j := range answers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-ready
				answers[j] = call(t, rt, http.MethodPost, "/api/generations/"+created.str("uuid")+"/cancel", owner.APIKey, nil)
			}()
		}
		close(ready)
		wg.Wait()
		statuses := map[int]int{}
		for _, a := range answers {
			statuses[a.status]++
			switch a.status {
			case http.StatusOK:
				if a.str("status") != "canceled" {
					t.Errorf("round %d: the 200 says %s", i, a.body)
				}
			case http.StatusConflict:
				if a.str("error", "code") != "conflict" || !strings.Contains(a.str("error", "message"), "already canceled") {
					t.Errorf("round %d: the 409 says %s", i, a.body)
				}
			}
		}
		if statuses[http.StatusOK] != 1 || statuses[http.StatusConflict] != cancels-1 {
			t.Errorf("round %d: answers %v, want one 200 and %d 409", i, statuses, cancels-1)
		}
	}
	a := account(t, rt, owner.UserID)
	holds, err := rt.Store.AccountHolds(context.Background(), owner.UserID)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Balance.Equal(credits("1000")) || !a.Held.IsZero() || !a.Captured.IsZero() || len(holds) != 0 {
		t.Errorf("after %d canceled generations: balance %s held %s captured %s, %d holds open; want all 1000 back once",
			rounds, a.Balance, a.Held, a.Captured, len(holds))
	}
}

// TestWebhookAttemptErrorsNameAClassNotTheAddress: webhooks to two
// allowed loopback ports, one where nothing listens and one where another
// protocol answers, are recorded alike as could_not_connect: the attempts
// do not tell an open port from a closed one, and the status view says
// nothing of the address, port or the system's error.
func TestWebhookAttemptErrorsNameAClassNotTheAddress(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	other, err := net.Listen("tcp", "127.0.0.1:0") // a service that is not HTTP
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	go func() {
		for {
			c, err := other.Accept()
			if err != nil {
				return
			}
			c.Read(make([]byte, 4096))
			c.Write([]byte("SSH-2.0-OpenSSH_9.6\r\n"))
			c.Close()
		}
	}()
	rt := start(t, runtime.Config{SimulatorLatency: 100 * time.Millisecond, WebhookBackoff: []time.Duration{time.Hour},
		WebhookAllow: []string{closed, other.Addr().String()}})
	owner := newAccount(t, rt, domain.PlanEnterprise, 100)
	for _, addr := range []string{closed, other.Addr().String()} {
		_, port, _ := net.SplitHostPort(addr)
		body := imageBody("a lantern")
		body["webhook_url"] = "http://" + addr + "/hooks"
		created := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, body)
		if created.status != http.StatusOK {
			t.Fatalf("generate: HTTP %d %s", created.status, created.body)
		}
		var attempts []any
		view, _ := waitfor.Value(t, time.Minute, "an attempt on the record", func() (answer, bool) {
			view := call(t, rt, http.MethodGet, "/api/generations/status/"+created.str("uuid"), owner.APIKey, nil)
			hook, _ := view.decoded["webhook"].(map[string]any)
			attempts, _ = hook["attempts"].([]any)
			return view, len(attempts) > 0
		})
		if len(attempts) != 1 {
			t.Fatalf("%d attempts on the record, want 1: %s", len(attempts), view.body)
		}
		first, _ := attempts[0].(map[string]any)
		if first["error"] != "could_not_connect" || first["delivered"] != false {
			t.Errorf("the attempt to %s is %v, want error could_not_connect whether the port is closed or open", addr, first)
		}
		// The URL is the caller's own; beyond it the view names no address or port.
		withoutURL := strings.ReplaceAll(string(view.body), body["webhook_url"].(string), "")
		for _, leak := range []string{port, "dial", "connect:", "tcp", "refused", "reset", "SSH"} {
			if strings.Contains(withoutURL, leak) {
				t.Errorf("the status view shows %q: %s", leak, view.body)
			}
		}
	}
}

// TestLocalWebhooksReachOnlyAllowedPorts: in local mode, also with
// AllowRemote, a webhook may name only a receiver the user allowed
// (--webhook-allow). One to any other port of this machine, by any
// loopback name, is refused at create time with a 400 naming webhook_url,
// and nothing is created or charged; the allowed one is delivered.
func TestLocalWebhooksReachOnlyAllowedPorts(t *testing.T) {
	recv := newHookReceiver(t, 0)
	rt := start(t, runtime.Config{AllowRemote: true, SimulatorLatency: 100 * time.Millisecond,
		WebhookAllow: []string{hostPort(t, recv.srv.URL)}})
	owner := newAccount(t, rt, domain.PlanEnterprise, 1000)
	s3Port := strings.TrimPrefix(hostPort(t, rt.Objects.Endpoint), "127.0.0.1:")
	for _, target := range []string{
		rt.Objects.Endpoint + "/mediagen-outputs",                         // the object store's S3 API
		rt.BaseURL + "/api/account",                                       // the API itself
		rt.Simulator.BaseURL + "/v1/predictions",                          // the simulator
		"http://localhost:" + s3Port + "/",                                // another loopback name
		"http://[::1]:22/",                                                // a port nothing of ours uses
		"http://127.0.0.1/",                                               // the scheme's own port
		strings.Replace(recv.srv.URL, "127.0.0.1", "127.0.0.2", 1) + "/x", // the receiver's port is allowed on any loopback name
	} {
		body := imageBody("a probe")
		body["webhook_url"] = target
		a := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, body)
		wantOK := strings.Contains(target, "127.0.0.2")
		if wantOK {
			if a.status != http.StatusOK {
				t.Errorf("webhook to %s (the allowed port): HTTP %d %s", target, a.status, a.body)
			}
			continue
		}
		if a.status != http.StatusBadRequest || !strings.Contains(string(a.body), `"field":"webhook_url"`) {
			t.Errorf("webhook to %s: HTTP %d %s, want 400 naming webhook_url", target, a.status, a.body)
		}
		story := storyBody("a probe", "en", false, "auto", []storyScene{{1, "a probe"}})
		story["webhook_url"] = target
		if a := call(t, rt, http.MethodPost, "/api/long-story/videos", owner.APIKey, story); a.status != http.StatusBadRequest {
			t.Errorf("long-form webhook to %s: HTTP %d %s, want 400", target, a.status, a.body)
		}
	}
	list := call(t, rt, http.MethodGet, "/api/generations", owner.APIKey, nil)
	if items, _ := list.decoded["data"].([]any); len(items) != 1 {
		t.Errorf("%d generations, want only the one with the allowed webhook: %s", len(items), list.body)
	}
	body := imageBody("a kite")
	body["webhook_url"] = recv.srv.URL + "/hooks"
	if a := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, body); a.status != http.StatusOK {
		t.Fatalf("webhook to the allowed receiver: HTTP %d %s", a.status, a.body)
	}
	recv.wait(t, 1)
}

// TestIntegerIDsCountPerAccount: an account's first generation is id 1
// whatever other accounts made, and the status by integer id finds only
// the caller's own generation.
func TestIntegerIDsCountPerAccount(t *testing.T) {
	rt := start(t, runtime.Config{})
	owner := newAccount(t, rt, domain.PlanEnterprise, 100)
	stranger := newAccount(t, rt, domain.PlanEnterprise, 100)
	create := func(key, prompt string) answer {
		a := call(t, rt, http.MethodPost, "/api/generations/generate", key, imageBody(prompt))
		if a.status != http.StatusOK {
			t.Fatalf("generate: HTTP %d %s", a.status, a.body)
		}
		return a
	}
	o1, o2, s1 := create(owner.APIKey, "first"), create(owner.APIKey, "second"), create(stranger.APIKey, "theirs")
	for _, tt := range []struct {
		name string
		got  answer
		want float64
	}{{"the owner's first", o1, 1}, {"the owner's second", o2, 2}, {"the stranger's first", s1, 1}} {
		if tt.got.decoded["id"] != tt.want {
			t.Errorf("%s generation has id %v, want %v", tt.name, tt.got.decoded["id"], tt.want)
		}
	}
	for _, tt := range []struct {
		key, id, want string
	}{{owner.APIKey, "1", o1.str("uuid")}, {owner.APIKey, "2", o2.str("uuid")}, {stranger.APIKey, "1", s1.str("uuid")}} {
		if a := call(t, rt, http.MethodGet, "/api/generations/status/"+tt.id, tt.key, nil); a.status != http.StatusOK || a.str("id") != tt.want {
			t.Errorf("status/%s: HTTP %d %s, want %s", tt.id, a.status, a.body, tt.want)
		}
	}
	if a := call(t, rt, http.MethodGet, "/api/generations/status/2", stranger.APIKey, nil); a.status != http.StatusNotFound {
		t.Errorf("the stranger's status/2 (only the owner has a second): HTTP %d %s, want 404", a.status, a.body)
	}
}

// TestOversizedTextFieldsAnswer400WithTheirLimit: a 1.1 MB prompt (within
// the 6 MB body limit) is refused on every variant with the field's own
// limit, as is an over-long negative_prompt and a long-form scene that
// would make the model's prompt too long; nothing is charged or recorded.
func TestOversizedTextFieldsAnswer400WithTheirLimit(t *testing.T) {
	rt := start(t, storyConfig())
	owner := newAccount(t, rt, domain.PlanEnterprise, 10000)
	before := account(t, rt, owner.UserID)
	huge := strings.Repeat("a", 1100*1000)
	type refusal struct {
		name, path string
		body       map[string]any
		field      string
		limit      int
	}
	var cases []refusal
	for _, c := range variantCases {
		input := map[string]any{}
		for k, v := range c.input {
			input[k] = v
		}
		input["prompt"] = huge
		v, _ := catalog.LookupVersion(c.version)
		f, _ := v.Field("prompt")
		cases = append(cases, refusal{c.version + " prompt", "/api/generations/generate",
			map[string]any{"model": c.model, "model_version": c.version, "input": input}, "input.prompt", f.MaxLen})
	}
	for _, neg := range []string{huge, strings.Repeat("b", catalog.NegativePromptMaxLen+1)} {
		cases = append(cases, refusal{fmt.Sprintf("alpha-3.1-fast negative_prompt of %d characters", len(neg)), "/api/generations/generate",
			gen("alpha-3.1-fast", map[string]any{"prompt": "a fox", "negative_prompt": neg}), "input.negative_prompt", catalog.NegativePromptMaxLen})
	}
	cases = append(cases, refusal{"long-form prompt", "/api/long-story/videos",
		storyBody(huge, "en", false, "auto", []storyScene{{1, "waves"}}), "prompt", longform.MaxPromptRunes})
	// 4,000 characters of theme fit the long-form limit, not video-01's
	// 2,000-character prompt once joined to the scene's.
	tooLong := storyBody(strings.Repeat("t", 4000), "en", false, "auto", []storyScene{{1, "waves"}})
	tooLong["model"] = "video-01"
	cases = append(cases, refusal{"long-form scene for video-01", "/api/long-story/videos", tooLong, "scenes[0].prompt", catalog.ProviderDPromptMaxLen})
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			a := call(t, rt, http.MethodPost, tt.path, owner.APIKey, malformed(tt.body))
			checkEnvelope(t, a, http.StatusBadRequest)
			details, _ := a.decoded["error"].(map[string]any)["details"].([]any)
			found := false
			for _, d := range details {
				m, _ := d.(map[string]any)
				msg, _ := m["message"].(string)
				if m["field"] == tt.field && strings.Contains(msg, fmt.Sprintf("%d characters", tt.limit)) {
					found = true
				}
			}
			if !found {
				t.Errorf("the 400 does not name %s with its limit %d: %.400s", tt.field, tt.limit, a.body)
			}
		})
	}
	unchanged(t, rt, before, 0)
}

// TestALargeImageInputCompletesAndIsCharged: the provider echoes the input
// in every answer, so a request near the body limit (a 3 MB image as a data
// URI) makes answers of megabytes; the service reads them, and the
// generation the provider ran completes and is charged, never refunded
// while the provider rendered it.
func TestALargeImageInputCompletesAndIsCharged(t *testing.T) {
	rt := start(t, runtime.Config{SimulatorLatency: 100 * time.Millisecond})
	owner := newAccount(t, rt, domain.PlanEnterprise, 100)
	png := append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 3<<20)...)
	body := gen("zeta", map[string]any{"prompt": "the same scene at night",
		"image_input": []string{"data:image/png;base64," + base64.StdEncoding.EncodeToString(png)}})
	created := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, body)
	if created.status != http.StatusOK {
		t.Fatalf("generate: HTTP %d %.300s", created.status, created.body)
	}
	final, _ := waitFinal(t, rt, owner.APIKey, created.str("uuid"), 60*time.Second)
	if final.str("status") != "completed" {
		t.Fatalf("the generation ended %s: %s", final.str("status"), final.body)
	}
	if a := account(t, rt, owner.UserID); !a.Captured.Equal(credits(created.str("credits_used"))) || !a.Held.IsZero() {
		t.Errorf("captured %s held %s, want the price %s captured", a.Captured, a.Held, created.str("credits_used"))
	}
}

// TestASlowBodyIsCutOffWithinTheReadTimeout: a client sending its body a
// byte at a time is answered 408 and disconnected once the read timeout
// (here 1 s) has passed, long before its body would have arrived; nothing
// is created.
func TestASlowBodyIsCutOffWithinTheReadTimeout(t *testing.T) {
	rt := start(t, runtime.Config{Timeouts: apigw.Timeouts{Read: time.Second}})
	owner := newAccount(t, rt, domain.PlanEnterprise, 100)
	before := account(t, rt, owner.UserID)
	body := `{"model":"provider-a","model_version":"theta-4-fast","input":{"prompt":"a slow drip of a request"}}`
	conn, err := net.Dial("tcp", strings.TrimPrefix(rt.BaseURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /api/generations/generate HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n", strings.TrimPrefix(rt.BaseURL, "http://"), owner.APIKey, len(body))
	answered := make(chan string, 1)
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			answered <- "no answer: " + err.Error()
			return
		}
		resp.Body.Close()
		answered <- resp.Status
	}()
	// One byte every 100 ms: the whole body would take 10 s.
	sent := 0
	var answer string
drip:
	for ; sent < len(body); sent++ {
		select {
		case answer = <-answered:
			break drip
		case <-time.After(100 * time.Millisecond):
		}
		if _, err := conn.Write([]byte{body[sent]}); err != nil {
			answer = "disconnected: " + err.Error()
			break
		}
	}
	if sent == len(body) {
		t.Fatalf("the whole %d-byte body was taken a byte at a time; the server never cut it off", len(body))
	}
	if answer == "" {
		answer = <-answered
	}
	if !strings.HasPrefix(answer, "408") {
		t.Errorf("after %d of %d bytes the server answered %q, want 408 Request Timeout", sent, len(body), answer)
	}
	unchanged(t, rt, before, 0)
}

// rawRequest sends one request outside the API (the file origin, the S3
// API, old paths) and reads the answer whole.
func rawRequest(t *testing.T, method, url string, body string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp, raw
}

// TestOutputsAreServedReadOnlyFromTheirOwnOrigin: the URLs the API returns
// are on an origin of their own, which answers GET and HEAD of the outputs
// with their stored type, nosniff and a CSP sandbox, and refuses listing,
// PUT, POST, DELETE and CORS; the API's origin serves no store at all, and
// the S3 API the service writes through takes no unsigned, cross-origin or
// rebound request.
func TestOutputsAreServedReadOnlyFromTheirOwnOrigin(t *testing.T) {
	rt := start(t, runtime.Config{SimulatorLatency: 100 * time.Millisecond})
	owner := newAccount(t, rt, domain.PlanEnterprise, 100)
	created := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, imageBody("a lighthouse"))
	final, _ := waitFinal(t, rt, owner.APIKey, created.str("uuid"), 30*time.Second)
	outputs, _ := final.decoded["output"].([]any)
	if len(outputs) != 1 {
		t.Fatalf("outputs %v", final.decoded["output"])
	}
	out := outputs[0].(string)
	api, files := mustParse(t, rt.BaseURL), mustParse(t, out)
	if files.Host == api.Host || !strings.HasPrefix(out, rt.FilesURL+"/generations/"+created.str("uuid")+"/") {
		t.Fatalf("output URL %s is not on the file origin %s, apart from the API's %s", out, rt.FilesURL, rt.BaseURL)
	}
	evil := map[string]string{"Origin": "http://evil.example"}
	checkFile := func(what string, resp *http.Response, status int) {
		t.Helper()
		if resp.StatusCode != status {
			t.Errorf("%s: HTTP %d, want %d", what, resp.StatusCode, status)
		}
		if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s: X-Content-Type-Options %q, want nosniff", what, got)
		}
		if got := resp.Header.Get("Content-Security-Policy"); got != "sandbox" {
			t.Errorf("%s: Content-Security-Policy %q, want sandbox", what, got)
		}
		for name := range resp.Header {
			if strings.HasPrefix(strings.ToLower(name), "access-control-") || strings.HasPrefix(strings.ToLower(name), "x-amz-") {
				t.Errorf("%s: answers %s: %s", what, name, resp.Header.Get(name))
			}
		}
	}
	resp, png := rawRequest(t, http.MethodGet, out, "", evil)
	checkFile("GET", resp, http.StatusOK)
	if ct := resp.Header.Get("Content-Type"); ct != "image/png" || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Errorf("GET: Content-Type %q, %d bytes; want the stored image/png", ct, len(png))
	}
	// The Cache-Control the S3 adapter stores with every object, which the
	// distribution passes on: browsers and the CDN keep an output a day.
	if got := resp.Header.Get("Cache-Control"); got != media.CacheControl {
		t.Errorf("GET: Cache-Control %q, want %q", got, media.CacheControl)
	}
	resp, _ = rawRequest(t, http.MethodHead, out, "", nil)
	checkFile("HEAD", resp, http.StatusOK)
	if got := resp.Header.Get("Cache-Control"); got != media.CacheControl {
		t.Errorf("HEAD: Cache-Control %q, want %q", got, media.CacheControl)
	}
	resp, part := rawRequest(t, http.MethodGet, out, "", map[string]string{"Range": "bytes=0-3"})
	checkFile("a range", resp, http.StatusPartialContent)
	if string(part) != "\x89PNG" {
		t.Errorf("a range answered %q", part)
	}
	// Nothing else: no writes, no listing, no preflight.
	for _, tt := range []struct{ method, url, body string }{
		{http.MethodPut, out, "<script>alert(localStorage)</script>"},
		{http.MethodPost, out, "<script>alert(1)</script>"},
		{http.MethodDelete, out, ""},
		{http.MethodPatch, out, "x"},
	} {
		resp, _ := rawRequest(t, tt.method, tt.url, tt.body, map[string]string{"Origin": "http://evil.example", "Content-Type": "text/html"})
		checkFile(tt.method, resp, http.StatusMethodNotAllowed)
	}
	resp, _ = rawRequest(t, http.MethodOptions, out, "", map[string]string{"Origin": "http://evil.example", "Access-Control-Request-Method": "PUT"})
	checkFile("a CORS preflight", resp, http.StatusMethodNotAllowed)
	for _, list := range []string{"/?list-type=2", "/" + runtime.Bucket + "?list-type=2", "/" + runtime.Bucket + "/", "/generations/", "/generations/" + created.str("uuid") + "/"} {
		resp, body := rawRequest(t, http.MethodGet, rt.FilesURL+list, "", nil)
		checkFile("listing "+list, resp, http.StatusNotFound)
		if strings.Contains(string(body), created.str("uuid")) {
			t.Errorf("listing %s shows a key: %s", list, body)
		}
	}
	if resp, again := rawRequest(t, http.MethodGet, out, "", nil); resp.StatusCode != http.StatusOK || !bytes.Equal(again, png) {
		t.Errorf("after the writes: HTTP %d, %d bytes; want the output unchanged", resp.StatusCode, len(again))
	}
	// Scratch files and other keys of the bucket are not served, though
	// they are there.
	for _, key := range []string{"long-videos/" + created.str("uuid") + "/narration/001-0123456789abcdef.wav", "generations/" + created.str("uuid") + "/0.html"} {
		if err := rt.Objects.MediaBucket().Put(context.Background(), key, strings.NewReader("RIFF"), "audio/wav"); err != nil {
			t.Fatal(err)
		}
		resp, _ := rawRequest(t, http.MethodGet, rt.FilesURL+"/"+key, "", nil)
		checkFile(key, resp, http.StatusNotFound)
	}
	// Whatever type an object was stored with, the origin serves only the
	// media types as such, always sandboxed.
	bucket := rt.Objects.MediaBucket()
	planted := "generations/" + created.str("uuid") + "/3.png"
	if err := bucket.Put(context.Background(), planted, strings.NewReader("<script>alert(1)</script>"), "text/html"); err != nil {
		t.Fatal(err)
	}
	resp, _ = rawRequest(t, http.MethodGet, bucket.URL(planted), "", nil)
	checkFile("an object stored as text/html", resp, http.StatusOK)
	if ct := resp.Header.Get("Content-Type"); ct != "application/octet-stream" {
		t.Errorf("an object stored as text/html is served as %q, want application/octet-stream", ct)
	}

	// The API's origin serves no store.
	for _, tt := range []struct{ method, path string }{
		{http.MethodGet, "/s3/" + runtime.Bucket + "?list-type=2"},
		{http.MethodPut, strings.Replace(out, rt.FilesURL, "/s3/"+runtime.Bucket, 1)},
		{http.MethodGet, strings.TrimPrefix(out, rt.FilesURL)},
	} {
		if resp, _ := rawRequest(t, tt.method, rt.BaseURL+tt.path, "x", nil); resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s %s on the API's origin: HTTP %d, want 404", tt.method, tt.path, resp.StatusCode)
		}
	}
	// The S3 API is the service's alone, but for the presigned URLs it
	// hands out: unsigned requests (all a page in a browser can send
	// without a preflight), preflights but the uploads' PUT, and requests
	// naming another host (a page that rebinds its name to 127.0.0.1)
	// are refused, without CORS headers.
	s3 := rt.Objects.Endpoint
	madeUp := map[string]string{"Authorization": "AWS4-HMAC-SHA256 Credential=local/20261121/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-date, Signature=00",
		"X-Amz-Date": "20261121T000000Z"}
	for _, tt := range []struct {
		name, method, url string
		header            map[string]string
	}{
		{"an unsigned listing", http.MethodGet, s3 + "/" + runtime.Bucket + "?list-type=2", nil},
		{"an unsigned PUT", http.MethodPut, s3 + "/" + runtime.Bucket + "/" + strings.TrimPrefix(out, rt.FilesURL+"/"), evil},
		{"an unsigned DELETE", http.MethodDelete, s3 + "/" + runtime.Bucket + "/" + strings.TrimPrefix(out, rt.FilesURL+"/"), nil},
		{"an unsigned form POST", http.MethodPost, s3 + "/" + runtime.Bucket, map[string]string{"Content-Type": "multipart/form-data; boundary=x", "Origin": "http://evil.example"}},
		// The bucket's CORS rule (media.UploadCORS) lets pages PUT to a
		// presigned upload URL, and nothing else.
		{"a preflight for DELETE", http.MethodOptions, s3 + "/" + runtime.Bucket, map[string]string{"Origin": "http://evil.example", "Access-Control-Request-Method": "DELETE"}},
		{"a preflight for GET", http.MethodOptions, s3 + "/" + runtime.Bucket, map[string]string{"Origin": "http://evil.example", "Access-Control-Request-Method": "GET"}},
		{"a made-up signature", http.MethodDelete, s3 + "/" + runtime.Bucket + "/" + strings.TrimPrefix(out, rt.FilesURL+"/"), madeUp},
	} {
		resp, _ := rawRequest(t, tt.method, tt.url, "x", tt.header)
		if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("S3 API, %s: HTTP %d, Access-Control-Allow-Origin %q; want 403 and none", tt.name, resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
		}
	}
	for _, tt := range []struct {
		host string
		want int
	}{{"rebound.evil.example:" + mustParse(t, s3).Port(), http.StatusForbidden}, {mustParse(t, s3).Host, http.StatusOK}} {
		req, _ := http.NewRequest(http.MethodGet, s3+"/"+runtime.Bucket+"?list-type=2", nil)
		req.Host = tt.host
		req.Header.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
		if err := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }).SignHTTP(context.Background(),
			aws.Credentials{AccessKeyID: objectstore.AccessKey, SecretAccessKey: objectstore.SecretKey}, req, "UNSIGNED-PAYLOAD", "s3", "us-east-1", time.Now()); err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("S3 API, a signed listing naming %s: HTTP %d, want %d", tt.host, resp.StatusCode, tt.want)
		}
	}
	if resp, _ = rawRequest(t, http.MethodGet, out, "", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("the output is gone after the refused requests: HTTP %d", resp.StatusCode)
	}
}

func mustParse(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestTheRuntimeListensOnLoopbackOnlyUnlessAllowed: an address other
// machines could reach is refused before anything starts.
func TestTheRuntimeListensOnLoopbackOnlyUnlessAllowed(t *testing.T) {
	for _, cfg := range []runtime.Config{
		{Addr: "0.0.0.0:0"},
		{Addr: "[::]:0"},
		{Addr: "127.0.0.1:0", FilesAddr: "0.0.0.0:0"},
		{Addr: "127.0.0.1:0", S3Addr: ":0"},
	} {
		cfg.DataDir = t.TempDir()
		rt, err := runtime.Start(context.Background(), cfg)
		if err == nil {
			waitfor.Close(t, rt.Close)
		}
		if !errors.Is(err, runtime.ErrNotLoopback) {
			t.Errorf("Start(addr %q, files %q, s3 %q) = %v, want ErrNotLoopback", cfg.Addr, cfg.FilesAddr, cfg.S3Addr, err)
		}
	}
}
