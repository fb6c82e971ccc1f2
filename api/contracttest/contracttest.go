// Package contracttest checks HTTP traffic against api/openapi.yaml in
// tests. Its Transport validates every request to /api/ on 127.0.0.1 and
// every answer, request and answer, with kin-openapi's openapi3filter:
// route, parameters, the credentials' form and the body; the status (one
// the operation does not list is a mismatch), the headers and the body. A
// test package installs it as http.DefaultTransport with Main, so that
// http.DefaultClient and every client without a transport of its own (the
// Go client, the provider simulator's callbacks) go through it.
//
// A mismatch fails the test that sent the request, when the request carries
// it (Request), or else the package at its end. Requests a test sends
// malformed on purpose are marked so: their answers are still validated.
package contracttest

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"mime"
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

// Installed is the transport Main installed, for ValidateWebhook.
var Installed *Transport

// Main runs a test package's tests with the contract transport as
// http.DefaultTransport and returns the exit code. With requireAll, a run of
// the whole package (no -run, -skip or -short) also fails unless every
// operation and webhook of the document was answered with a success.
//
//	func TestMain(m *testing.M) { os.Exit(contracttest.Main(m, true)) }
func Main(m *testing.M, requireAll bool) int {
	flag.Parse()
	c, err := New(http.DefaultTransport)
	if err != nil {
		fmt.Fprintf(os.Stderr, "contract: %v\n", err)
		return 1
	}
	Installed = c
	http.DefaultTransport = c
	code := m.Run()
	if !c.Finish(os.Stdout, requireAll) && code == 0 {
		code = 1
	}
	return code
}

type markKey struct{}

type mark struct {
	t         testing.TB
	malformed bool
}

// Request tells the transport which test sends req, so that a mismatch
// fails that test, and whether the request is malformed on purpose (a bad
// body, query or path, missing or wrong credentials): then only its answer
// is validated.
func Request(t testing.TB, req *http.Request, malformed bool) *http.Request {
	return req.WithContext(context.WithValue(req.Context(), markKey{}, mark{t: t, malformed: malformed}))
}

// Transport validates the traffic it carries against openapi.yaml.
type Transport struct {
	base   http.RoundTripper
	doc    *openapi3.T
	router routers.Router
	ops    []string // every operation of the document, "METHOD /path", and "WEBHOOK name"

	mu       sync.Mutex
	seen     map[string]map[int]int // operation → status → count
	failures []string               // mismatches no test could be told of
}

// New loads and validates the document and wraps base.
func New(base http.RoundTripper) (*Transport, error) {
	doc, err := openapi3.NewLoader().LoadFromData(api.OpenAPIYAML())
	if err != nil {
		return nil, fmt.Errorf("load openapi.yaml: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("openapi.yaml is not valid: %w", err)
	}
	// The legacy router needs no other dependency and, unlike gorilla/mux,
	// tells an undocumented path from an undocumented method.
	router, err := legacy.NewRouter(doc)
	if err != nil {
		return nil, err
	}
	c := &Transport{base: base, doc: doc, router: router, seen: map[string]map[int]int{}}
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

func options() *openapi3filter.Options {
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
// whether they are valid is the service's to say.
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

// RoundTrip validates a request to /api/ on 127.0.0.1 and its answer; other
// requests (media downloads, the simulator, the object store) pass as they
// are.
func (c *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !strings.HasPrefix(req.URL.Path, "/api/") || req.URL.Hostname() != "127.0.0.1" {
		return c.base.RoundTrip(req)
	}
	m, _ := req.Context().Value(markKey{}).(mark)
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		req.Body.Close()
	}
	withBody := func() *http.Request {
		r := req.Clone(req.Context())
		if req.Body != nil {
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		return r
	}
	what := req.Method + " " + req.URL.Path

	route, params, routeErr := c.router.FindRoute(req)
	if routeErr != nil {
		if !m.malformed {
			c.fail(m, "%s: no operation in openapi.yaml: %v", what, routeErr)
		}
		return c.base.RoundTrip(withBody())
	}
	in := &openapi3filter.RequestValidationInput{Request: withBody(), PathParams: params, Route: route, Options: options()}
	if !m.malformed {
		if err := openapi3filter.ValidateRequest(req.Context(), in); err != nil {
			c.fail(m, "%s: the request does not match openapi.yaml (mark it malformed if that is the point): %v\nbody: %s", what, err, clip(body))
		}
	}

	resp, err := c.base.RoundTrip(withBody())
	if err != nil {
		return nil, err
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/event-stream" {
		// An event stream is read as it comes, by the test: its status
		// and headers are checked here, its events by the test (each
		// event's data is a status view the document describes).
		out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header, Options: options()}
		out.Options.ExcludeResponseBody = true
		if err := openapi3filter.ValidateResponse(req.Context(), out); err != nil {
			c.fail(m, "%s: the answer HTTP %d does not match openapi.yaml: %v", what, resp.StatusCode, err)
		}
		c.record(route.Method+" "+route.Path, resp.StatusCode)
		return resp, nil
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header, Options: options()}
	out.SetBodyBytes(raw)
	if err := openapi3filter.ValidateResponse(req.Context(), out); err != nil {
		c.fail(m, "%s: the answer HTTP %d does not match openapi.yaml: %v\nbody: %s", what, resp.StatusCode, err, clip(raw))
	}
	c.record(route.Method+" "+route.Path, resp.StatusCode)
	return resp, nil
}

// ValidateWebhook checks a webhook a test received against the document's
// webhooks entry name.
func (c *Transport) ValidateWebhook(ctx context.Context, name string, r *http.Request, body []byte) error {
	item := c.doc.Webhooks[name]
	if item == nil || item.Post == nil {
		return fmt.Errorf("openapi.yaml has no webhook %q", name)
	}
	req := r.Clone(ctx)
	req.Body = io.NopCloser(bytes.NewReader(body))
	route := &routers.Route{Spec: c.doc, Path: name, PathItem: item, Method: http.MethodPost, Operation: item.Post}
	if err := openapi3filter.ValidateRequest(ctx, &openapi3filter.RequestValidationInput{Request: req, Route: route, Options: options()}); err != nil {
		return err
	}
	c.record("WEBHOOK "+name, http.StatusOK)
	return nil
}

func clip(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + "…"
	}
	return string(b)
}

func (c *Transport) fail(m mark, format string, args ...any) {
	msg := fmt.Sprintf("contract: "+format, args...)
	if m.t != nil {
		m.t.Errorf("%s", msg)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failures = append(c.failures, msg)
}

func (c *Transport) record(op string, status int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen[op] == nil {
		c.seen[op] = map[int]int{}
	}
	c.seen[op][status]++
}

// Finish prints which operations were exercised with which statuses and
// reports whether the contract held: no mismatch outside a test and, with
// requireAll when the whole package ran, every operation and webhook
// answered with a success.
func (c *Transport) Finish(w io.Writer, requireAll bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	ok := true
	for _, f := range c.failures {
		fmt.Fprintln(w, f)
		ok = false
	}
	whole := requireAll && flagValue("test.run") == "" && flagValue("test.skip") == "" && !testing.Short()
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
		if !success {
			note = "  <- never answered with a success"
			if whole {
				ok = false
			}
		}
		fmt.Fprintf(w, "  %-45s %s%s\n", op, strings.Join(parts, " "), note)
	}
	if !ok {
		fmt.Fprintln(w, "contract: FAIL: every request and answer must match openapi.yaml, and the HTTP tests must exercise every operation of it with a success")
	}
	return ok
}

func flagValue(name string) string {
	if f := flag.Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}
