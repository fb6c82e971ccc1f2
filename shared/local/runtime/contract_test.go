package runtime_test

// The contract test: every request this package's tests send to /api/ and
// every answer they get is validated against api/openapi.yaml, so the
// document cannot drift from the code. It runs as the HTTP transport of the
// whole test binary (http.DefaultTransport, which http.DefaultClient and
// every client without a transport of its own use), so it also sees the
// provider simulator's callbacks to POST /api/upstream/webhook. A mismatch
// fails the test that sent the request (or, for requests the runtime sends
// itself, the package). When the whole package runs, an operation of the
// document that no test exercised fails it too.

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/mediagen-dev/mediagen/api"
)

var theContract *contract

func TestMain(m *testing.M) {
	flag.Parse()
	c, err := newContract(http.DefaultTransport)
	if err != nil {
		fmt.Fprintf(os.Stderr, "contract: %v\n", err)
		os.Exit(1)
	}
	theContract = c
	http.DefaultTransport = c
	code := m.Run()
	if !c.finish(os.Stdout) && code == 0 {
		code = 1
	}
	os.Exit(code)
}

// malformedBody marks a request a test sends malformed on purpose: its
// request is not validated (the document describes the requests to send),
// its answer still is (the document describes the errors it answers).
type malformedBody struct{ body any }

// malformed wraps call's body (nil for none) to mark the request as
// deliberately not matching the document: a bad body, query or path, or
// missing or wrong credentials.
func malformed(body any) any { return malformedBody{body} }

type contractKey struct{}

type contractMark struct {
	t         testing.TB
	malformed bool
}

// forContract tells the contract transport which test sends req and
// whether the request is malformed on purpose.
func forContract(t testing.TB, req *http.Request, malformed bool) *http.Request {
	return req.WithContext(context.WithValue(req.Context(), contractKey{}, contractMark{t: t, malformed: malformed}))
}

// markMalformed is forContract for requests a test builds itself.
func markMalformed(t testing.TB, req *http.Request) *http.Request { return forContract(t, req, true) }

type contract struct {
	base   http.RoundTripper
	doc    *openapi3.T
	router routers.Router
	ops    []string // every operation of the document, "METHOD /path"

	mu       sync.Mutex
	seen     map[string]map[int]int // operation → status → count
	failures []string               // mismatches no test could be told of
}

func newContract(base http.RoundTripper) (*contract, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(api.OpenAPIYAML())
	if err != nil {
		return nil, fmt.Errorf("load openapi.yaml: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("openapi.yaml is not valid: %w", err)
	}
	// The legacy router needs no other dependency and, unlike gorilla/mux,
	// says whether a path or only its method is undocumented.
	router, err := legacy.NewRouter(doc)
	if err != nil {
		return nil, err
	}
	c := &contract{base: base, doc: doc, router: router, seen: map[string]map[int]int{}}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			c.ops = append(c.ops, method+" "+path)
		}
	}
	for name := range doc.Webhooks {
		c.ops = append(c.ops, "WEBHOOK "+name)
	}
	sort.Strings(c.ops)
	return c, nil
}

func (c *contract) options() *openapi3filter.Options {
	return &openapi3filter.Options{
		// An answer with a status the operation does not list is a mismatch.
		IncludeResponseStatus: true,
		MultiError:            true,
		AuthenticationFunc:    authenticate,
		// The request's defaults must not be written into the request.
		SkipSettingDefaults: true,
	}
}

// authenticate checks that the credentials have the form of the scheme:
// the service decides whether they are valid.
func authenticate(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	scheme, credential, ok := strings.Cut(in.RequestValidationInput.Request.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || credential == "" {
		return errors.New("no Authorization: Bearer credentials")
	}
	switch in.SecuritySchemeName {
	case "apiKey":
		if !strings.HasPrefix(credential, "mgk_") {
			return errors.New("not an API key (mgk_...)")
		}
	case "identityToken":
		if strings.Count(credential, ".") != 2 {
			return errors.New("not a JWT")
		}
	default:
		return fmt.Errorf("unknown security scheme %q", in.SecuritySchemeName)
	}
	return nil
}

func (c *contract) RoundTrip(req *http.Request) (*http.Response, error) {
	if !strings.HasPrefix(req.URL.Path, "/api/") || req.URL.Hostname() != "127.0.0.1" {
		return c.base.RoundTrip(req) // media downloads, the simulator, the object store
	}
	mark, _ := req.Context().Value(contractKey{}).(contractMark)
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		req.Body.Close()
	}
	send := req.Clone(req.Context())
	send.Body = io.NopCloser(bytes.NewReader(body))
	if req.Body == nil {
		send.Body = nil
	}
	what := req.Method + " " + req.URL.Path

	route, params, routeErr := c.router.FindRoute(req)
	if routeErr != nil {
		if !mark.malformed {
			c.fail(mark, "%s: no operation in openapi.yaml: %v", what, routeErr)
		}
		return c.base.RoundTrip(send)
	}
	check := req.Clone(req.Context())
	check.Body = io.NopCloser(bytes.NewReader(body))
	in := &openapi3filter.RequestValidationInput{Request: check, PathParams: params, Route: route, Options: c.options()}
	if !mark.malformed {
		if err := openapi3filter.ValidateRequest(req.Context(), in); err != nil {
			c.fail(mark, "%s: the request does not match openapi.yaml (mark it malformed if that is the point): %v\nbody: %s", what, err, clip(body))
		}
	}

	resp, err := c.base.RoundTrip(send)
	if err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header, Options: c.options()}
	out.SetBodyBytes(raw)
	if err := openapi3filter.ValidateResponse(req.Context(), out); err != nil {
		c.fail(mark, "%s: the answer HTTP %d does not match openapi.yaml: %v\nbody: %s", what, resp.StatusCode, err, clip(raw))
	}
	c.record(route.Method+" "+route.Path, resp.StatusCode)
	return resp, nil
}

func clip(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + "…"
	}
	return string(b)
}

func (c *contract) fail(mark contractMark, format string, args ...any) {
	msg := fmt.Sprintf("contract: "+format, args...)
	if mark.t != nil {
		mark.t.Errorf("%s", msg)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failures = append(c.failures, msg)
}

func (c *contract) record(op string, status int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen[op] == nil {
		c.seen[op] = map[int]int{}
	}
	c.seen[op][status]++
}

// finish prints which operations were exercised with which statuses and
// reports whether the contract held: no mismatch outside a test, and, when
// the whole package ran, every operation exercised with a success.
func (c *contract) finish(w io.Writer) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	ok := true
	for _, f := range c.failures {
		fmt.Fprintln(w, f)
		ok = false
	}
	whole := flagValue("test.run") == "" && flagValue("test.skip") == "" && !testing.Short()
	fmt.Fprintf(w, "contract: %d operations in openapi.yaml; statuses each was answered with in this run:\n", len(c.ops))
	for _, op := range c.ops {
		statuses := []int{}
		success := false
		for s := range c.seen[op] {
			statuses = append(statuses, s)
			success = success || (s >= 200 && s < 300)
		}
		slices.Sort(statuses)
		var parts []string
		for _, s := range statuses {
			parts = append(parts, fmt.Sprintf("%d×%d", s, c.seen[op][s]))
		}
		note := ""
		switch {
		case !success && strings.HasPrefix(op, "WEBHOOK "):
			// Webhooks are sent to receivers, not through this transport:
			// tests check them with validateWebhook.
			note = "  (not received by a test)"
		case !success:
			note = "  <- never answered with a success"
			if whole {
				ok = false
			}
		}
		fmt.Fprintf(w, "  %-45s %s%s\n", op, strings.Join(parts, " "), note)
	}
	if !ok && whole {
		fmt.Fprintln(w, "contract: FAIL: every operation of openapi.yaml must be exercised by the HTTP tests (with a success), and every request and answer must match it")
	}
	return ok
}

func flagValue(name string) string {
	if f := flag.Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}

// errorRecorder is a test that keeps its errors instead of failing.
type errorRecorder struct {
	testing.TB
	errs []string
}

func (r *errorRecorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestContractCatchesMismatches shows that the contract transport fails a
// test on an answer or a request that openapi.yaml does not describe.
func TestContractCatchesMismatches(t *testing.T) {
	limits := http.Header{"Content-Type": {"application/json"}, "X-Ratelimit-Limit": {"100"},
		"X-Ratelimit-Remaining": {"99"}, "X-Ratelimit-Reset": {"1700000000"}}
	status := `{"id":"00000000-0000-4000-8000-000000000000","status":"processing","output":[],"created_at":"2025-01-02T03:04:05.678901","model":"provider-a/zeta","progress":5}`
	noProgress := strings.Replace(status, `,"progress":5`, "", 1)
	tests := []struct {
		name, method, path, reqBody string
		malformed                   bool
		code                        int
		header                      http.Header
		body                        string
		wantFailure                 bool
	}{
		{"a documented answer", "GET", "/api/generations/status/1", "", false, 200, limits, status, false},
		{"a missing field", "GET", "/api/generations/status/1", "", false, 200, limits, noProgress, true},
		{"an extra field", "GET", "/api/generations/status/1", "", false, 200, limits, strings.Replace(status, "{", `{"eta":3,`, 1), true},
		{"no rate-limit headers", "GET", "/api/generations/status/1", "", false, 200, http.Header{"Content-Type": {"application/json"}}, status, true},
		{"an undocumented status", "GET", "/api/generations/status/1", "", false, 418, limits, `{}`, true},
		{"not the error envelope", "GET", "/api/generations/status/1", "", false, 404, limits, `{"message":"no"}`, true},
		{"an undocumented route", "GET", "/api/nothing", "", false, 404, limits, `{}`, true},
		{"a request off the document", "POST", "/api/long-story/videos/estimate", `{"model":"zeta","scene_count":3}`, false, 400, limits,
			`{"error":{"code":"invalid_request","message":"m"},"request_id":"r"}`, true},
		{"the same request marked malformed", "POST", "/api/long-story/videos/estimate", `{"model":"zeta","scene_count":3}`, true, 400, limits,
			`{"error":{"code":"invalid_request","message":"m"},"request_id":"r"}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := newContract(roundTripFunc(func(*http.Request) (*http.Response, error) {
				return &http.Response{StatusCode: tt.code, Header: tt.header, Body: io.NopCloser(strings.NewReader(tt.body))}, nil
			}))
			if err != nil {
				t.Fatal(err)
			}
			var body io.Reader
			if tt.reqBody != "" {
				body = strings.NewReader(tt.reqBody)
			}
			req, _ := http.NewRequest(tt.method, "http://127.0.0.1:1"+tt.path, body)
			req.Header.Set("Authorization", "Bearer mgk_x")
			if body != nil {
				req.Header.Set("Content-Type", "application/json")
			}
			rec := &errorRecorder{TB: t}
			resp, err := c.RoundTrip(forContract(rec, req, tt.malformed))
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := io.ReadAll(resp.Body); string(got) != tt.body {
				t.Errorf("the transport changed the answer's body to %s", got)
			}
			if failed := len(rec.errs) > 0; failed != tt.wantFailure {
				t.Errorf("contract failed the test: %v, want %v (%v)", failed, tt.wantFailure, rec.errs)
			}
		})
	}
}
