// Package apigw serves Lambda route handlers over plain HTTP the way API
// Gateway's HTTP API does: each request becomes an
// events.APIGatewayV2HTTPRequest (payload format 2.0) with its route key and
// path parameters, and the handler's response is written back.
package apigw

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"mime"
	"net"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
)

// Handler is a route's Lambda handler.
type handler = func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// Route binds "METHOD /path/{param}" to a handler, as the template's route
// events do.
type Route struct {
	Method  string
	Path    string
	Handler handler
}

// maxPayload is API Gateway's request limit: a larger body is refused 413
// before any of it reaches a function.
const maxPayload = 10 << 20

// LambdaPayloadLimit is Lambda's limit on a synchronous invocation's
// payload, here the event: Lambda refuses an event of this size or more
// ("Request must be smaller than 6291456 bytes for the InvokeFunction
// operation", RequestEntityTooLargeException) before the function runs,
// and the gateway answers the client 413 {"message":"Request Too Long"}
// itself (as observed of API Gateway in front of Lambda; AWS documents
// the limit, not the gateway's answer). The gateway applies it to the
// event it built, after the authorizer (whose context the event carries):
// a request AWS would refuse never reaches a route locally either.
const LambdaPayloadLimit = 6 << 20

// Timeouts bound how long a client may take over a request and its answer,
// so a client sending its body a byte at a time, or never reading the
// answer, cannot hold a connection (and a handler) open. The server gets
// them all (Server); the body reader of the routes applies Read itself
// too, so a body is bounded even on a server built without them.
type Timeouts struct {
	// ReadHeader bounds the request line and headers.
	ReadHeader time.Duration
	// Read bounds the whole request, body included (6 MB must arrive
	// within it).
	Read time.Duration
	// Write bounds the answer, from the end of the request's headers.
	Write time.Duration
	// Idle bounds a kept-alive connection between requests.
	Idle time.Duration
	// Integration is API Gateway's integration timeout (30 s, the most an
	// HTTP API allows): a route's handler still running then gets the
	// client the gateway's own 503 {"message":"Service Unavailable"},
	// while the handler runs on to its end, as a Lambda function does
	// after the gateway gave up on it. 0: no bound.
	Integration time.Duration
}

// IntegrationTimeout is API Gateway's: an HTTP API's integration timeout
// is at most 30 s, for Lambda integrations too.
const IntegrationTimeout = 30 * time.Second

// DefaultTimeouts are the API's: a 6 MB body must arrive at 200 KB/s or
// faster; answers are small (the largest is the OpenAPI document).
var DefaultTimeouts = Timeouts{ReadHeader: 10 * time.Second, Read: 30 * time.Second, Write: 2 * time.Minute, Idle: 2 * time.Minute,
	Integration: IntegrationTimeout}

// Server is an HTTP server for h bounded by t.
func (t Timeouts) Server(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: t.ReadHeader, ReadTimeout: t.Read, WriteTimeout: t.Write, IdleTimeout: t.Idle}
}

// Authorizer is the Lambda authorizer's handler (payload 2.0, simple
// responses).
type Authorizer = func(ctx context.Context, req events.APIGatewayV2CustomAuthorizerV2Request) (events.APIGatewayV2CustomAuthorizerSimpleResponse, error)

// LambdaAuthorizer is the HTTP API's Lambda authorizer as template.yaml
// configures it: its identity source is the Authorization header
// ($request.header.Authorization), and its answers are cached for CacheTTL
// (the template's ReauthorizeEvery, AuthorizerCacheTtl).
//
// As API Gateway does for an HTTP API: a request without the identity
// source (no Authorization header, or an empty one) is answered 401
// {"message":"Unauthorized"} by the gateway itself, invoking neither the
// authorizer nor the route; and while caching is on, the cache key is the
// identity source's value alone, so one answer serves every route of the
// API for CacheTTL, allowing or denying alike, and the authorizer is not
// invoked for it (an error is not cached). Use one LambdaAuthorizer for all
// the routes of an API, as the gateway has one cache per authorizer.
type LambdaAuthorizer struct {
	Func Authorizer
	// CacheTTL is how long an answer is reused for the same Authorization
	// value; 0 invokes the authorizer for every request.
	CacheTTL time.Duration
	// Now is the cache's clock (default time.Now).
	Now func() time.Time

	mu    sync.Mutex
	cache map[string]cachedAnswer
}

type cachedAnswer struct {
	resp    events.APIGatewayV2CustomAuthorizerSimpleResponse
	expires time.Time
}

// maxCachedAnswers bounds the local cache: past it the expired answers
// are dropped, and if none had expired, all of them.
const maxCachedAnswers = 10000

func (a *LambdaAuthorizer) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// authorize answers from the cache for identity, or invokes the
// authorizer (and caches its answer when caching is on).
func (a *LambdaAuthorizer) authorize(ctx context.Context, identity string, req events.APIGatewayV2CustomAuthorizerV2Request) (events.APIGatewayV2CustomAuthorizerSimpleResponse, error) {
	if a.CacheTTL > 0 {
		a.mu.Lock()
		c, ok := a.cache[identity]
		a.mu.Unlock()
		if ok && a.now().Before(c.expires) {
			return c.resp, nil
		}
	}
	resp, err := a.Func(ctx, req)
	if err != nil || a.CacheTTL <= 0 {
		return resp, err
	}
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cache == nil {
		a.cache = map[string]cachedAnswer{}
	}
	if len(a.cache) >= maxCachedAnswers {
		for k, c := range a.cache {
			if !now.Before(c.expires) {
				delete(a.cache, k)
			}
		}
		if len(a.cache) >= maxCachedAnswers {
			clear(a.cache)
		}
	}
	a.cache[identity] = cachedAnswer{resp: resp, expires: now.Add(a.CacheTTL)}
	return resp, nil
}

// Mount registers every route on mux. authorizer, when not nil, runs before
// each route as the gateway runs it (see LambdaAuthorizer): a request
// without an Authorization header answers 401, a denial 403, an error 500,
// and its context reaches the route's event. A body over 10 MB is refused
// 413: on its Content-Length before any of it is read, or, sent without a
// length, as soon as one byte more than 10 MB has come. A body must arrive
// within timeouts.Read of the handler's start (408 otherwise). An event
// that reaches Lambda's payload limit (LambdaPayloadLimit: 6 MiB, the
// body escaped as a JSON string or base64-encoded, with the headers and
// the authorizer's context) is refused 413 {"message":"Request Too Long"}
// without invoking the route.
func Mount(mux *http.ServeMux, routes []Route, authorizer *LambdaAuthorizer, timeouts Timeouts, log *slog.Logger) {
	for _, rt := range routes {
		m := mount(rt)
		mux.HandleFunc(m.key, func(w http.ResponseWriter, r *http.Request) {
			serve(w, r, m, authorizer, timeouts, log)
		})
	}
}

// mounted is a route with what every request's event takes from it, made
// once at Mount rather than per request.
type mounted struct {
	Route
	key    string   // the route key, "METHOD /path/{param}"
	arn    string   // the route's ARN, as the authorizer gets it
	params []string // the path parameters' names
}

func mount(rt Route) *mounted {
	return &mounted{Route: rt, key: rt.Method + " " + rt.Path,
		arn: "arn:aws:execute-api:local:000000000000:local/$default/" + rt.Method + rt.Path, params: pathParams(rt.Path)}
}

func serve(w http.ResponseWriter, r *http.Request, rt *mounted, authorizer *LambdaAuthorizer, timeouts Timeouts, log *slog.Logger) {
	// Every answer names its request, the gateway's own ({"message"}) too;
	// the route gets the same id as requestContext.requestId.
	id := NewRequestID()
	w.Header().Set(RequestIDHeader, id)
	if r.ContentLength > maxPayload {
		// Refused on its declared length, before a byte is read: the answer
		// does not depend on how fast the client sends, and the body read
		// deadline cannot pre-empt it.
		tooLarge(w)
		return
	}
	body, err := readBody(w, r, timeouts)
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		log.WarnContext(r.Context(), "request body cut off: it did not arrive in time", "route", rt.key,
			"received_bytes", len(body), "read_timeout", timeouts.Read.String())
		w.Header().Set("Connection", "close")
		writeGatewayError(w, http.StatusRequestTimeout, "Request Timeout")
		return
	}
	if err != nil {
		writeGatewayError(w, http.StatusBadRequest, "could not read the request body")
		return
	}
	if len(body) > maxPayload {
		tooLarge(w)
		return
	}
	ev := event(r, rt, body, id)
	if authorizer != nil {
		identity := ev.Headers["authorization"]
		if identity == "" {
			// The identity source is missing: the gateway answers itself.
			writeGatewayError(w, http.StatusUnauthorized, "Unauthorized")
			return
		}
		auth, err := authorizer.authorize(r.Context(), identity, events.APIGatewayV2CustomAuthorizerV2Request{
			Version: "2.0", Type: "REQUEST", RouteArn: rt.arn,
			IdentitySource: []string{identity}, RouteKey: ev.RouteKey, RawPath: ev.RawPath,
			RawQueryString: ev.RawQueryString, Headers: ev.Headers, QueryStringParameters: ev.QueryStringParameters,
			PathParameters: ev.PathParameters, RequestContext: ev.RequestContext,
		})
		switch {
		case err != nil:
			log.ErrorContext(r.Context(), "authorizer failed", "route", ev.RouteKey, "error", err)
			writeGatewayError(w, http.StatusInternalServerError, "Internal Server Error")
			return
		case !auth.IsAuthorized:
			writeGatewayError(w, http.StatusForbidden, "Forbidden")
			return
		}
		lambda := auth.Context
		if authorizer.CacheTTL > 0 {
			// Each request gets its own copy of a cached context.
			lambda = maps.Clone(lambda)
		}
		ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{Lambda: lambda}
	}
	if n, over := overPayloadLimit(ev); over {
		log.WarnContext(r.Context(), "the event is over Lambda's payload limit: the gateway answers 413", "route", ev.RouteKey,
			"event_bytes", n, "limit", LambdaPayloadLimit)
		writeGatewayError(w, http.StatusRequestEntityTooLarge, "Request Too Long")
		return
	}
	resp, inTime, err := invoke(r.Context(), rt.Handler, ev, timeouts.Integration, func() {
		log.WarnContext(r.Context(), "integration timeout: the client got 503 while the handler runs on", "route", ev.RouteKey,
			"integration_timeout", timeouts.Integration.String())
		// The answer is complete and the connection is not reused: the
		// client has its 503 now, while this request waits for the handler
		// (so a shutdown still waits for it too).
		body := []byte(`{"message":"Service Unavailable"}` + "\n")
		w.Header().Set("Connection", "close")
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write(body)
		_ = http.NewResponseController(w).Flush()
	})
	if !inTime {
		if err != nil {
			log.ErrorContext(r.Context(), "handler returned an error after the integration timeout", "route", ev.RouteKey, "error", err)
		}
		return
	}
	if err != nil {
		// Lambda reports a handler error as a 500 from the gateway.
		log.ErrorContext(r.Context(), "handler returned an error", "route", ev.RouteKey, "error", err)
		writeGatewayError(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	write(w, resp)
}

// EventSize is the size of ev as Lambda receives it: its JSON, strings
// escaped as a JSON encoder does without HTML escaping.
func EventSize(ev events.APIGatewayV2HTTPRequest) (int, error) {
	var n countingWriter
	enc := json.NewEncoder(&n)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(ev); err != nil {
		return 0, err
	}
	return int(n) - 1, nil // Encode ends with a newline
}

type countingWriter int

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}

// overPayloadLimit reports whether ev reaches LambdaPayloadLimit, and its
// size when measured. An event is measured only when it might: each byte
// of its strings takes at most six in the JSON, and the rest of it is
// well under eventFrame.
func overPayloadLimit(ev events.APIGatewayV2HTTPRequest) (int, bool) {
	const eventFrame = 16 << 10
	strs := len(ev.Body) + 2*(len(ev.RawPath)+len(ev.RawQueryString)) + len(ev.RequestContext.DomainName) +
		len(ev.RequestContext.HTTP.UserAgent)
	for k, v := range ev.Headers {
		strs += len(k) + len(v)
	}
	for _, c := range ev.Cookies {
		strs += len(c)
	}
	for k, v := range ev.QueryStringParameters {
		strs += len(k) + len(v)
	}
	if 6*strs+eventFrame < LambdaPayloadLimit && ev.RequestContext.Authorizer == nil {
		return 0, false
	}
	n, err := EventSize(ev)
	return n, err != nil || n >= LambdaPayloadLimit
}

// tooLarge answers 413 and closes the connection, whose unread body is
// left behind.
func tooLarge(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
	writeGatewayError(w, http.StatusRequestEntityTooLarge, "Request Entity Too Large")
}

// invoke runs a handler as the gateway invokes a Lambda function: the
// invocation is not canceled when the client goes away or the gateway
// stops waiting. Past timeout (when > 0) it calls onTimeout once, then
// still waits for the handler's end, and reports inTime false.
func invoke(ctx context.Context, h handler, ev events.APIGatewayV2HTTPRequest, timeout time.Duration, onTimeout func()) (resp events.APIGatewayV2HTTPResponse, inTime bool, err error) {
	ctx = context.WithoutCancel(ctx)
	if timeout <= 0 {
		resp, err := h(ctx, ev)
		return resp, true, err
	}
	type result struct {
		resp events.APIGatewayV2HTTPResponse
		err  error
	}
	done := make(chan result, 1)
	go func() {
		var res result
		defer func() {
			// A panic here would end the process, where net/http would
			// have recovered it on its own goroutine: report it as the
			// handler's error, as Lambda does.
			if p := recover(); p != nil {
				res.err = fmt.Errorf("handler panicked: %v", p)
			}
			done <- res
		}()
		res.resp, res.err = h(ctx, ev)
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case res := <-done:
		return res.resp, true, res.err
	case <-t.C:
	}
	onTimeout()
	res := <-done
	return res.resp, false, res.err
}

// readBody reads the request's body, bounded by timeouts.Read from now. A
// request without one (most GETs) reads nothing: the server's own
// deadlines hold for it, and no buffer is made.
func readBody(w http.ResponseWriter, r *http.Request, timeouts Timeouts) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	if timeouts.Read > 0 {
		// Not every server supports deadlines (httptest's recorder does
		// not); the server's own ReadTimeout still holds there.
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(timeouts.Read))
	}
	return io.ReadAll(io.LimitReader(r.Body, maxPayload+1))
}

// Event builds the API Gateway v2 event for r, with a new request id.
func Event(r *http.Request, rt Route, body []byte) events.APIGatewayV2HTTPRequest {
	return event(r, mount(rt), body, NewRequestID())
}

func event(r *http.Request, rt *mounted, body []byte, requestID string) events.APIGatewayV2HTTPRequest {
	headers := make(map[string]string, len(r.Header))
	var cookies []string
	for k, vs := range r.Header {
		if strings.EqualFold(k, "Cookie") {
			cookies = append(cookies, vs...)
			continue
		}
		headers[lowerName(k)] = strings.Join(vs, ",")
	}
	ev := events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: rt.key, RawPath: r.URL.EscapedPath(),
		RawQueryString: r.URL.RawQuery, Cookies: cookies, Headers: headers,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			AccountID: "000000000000", APIID: "local", Stage: "$default", DomainName: r.Host,
			RequestID: requestID, RouteKey: rt.key,
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method: r.Method, Path: r.URL.Path, Protocol: r.Proto, UserAgent: r.UserAgent(),
			},
		},
	}
	ev.RequestContext.Time, ev.RequestContext.TimeEpoch = requestTime(time.Now())
	ev.RequestContext.HTTP.SourceIP, _, _ = net.SplitHostPort(r.RemoteAddr)
	if r.URL.RawQuery != "" {
		query := map[string]string{}
		for k, vs := range r.URL.Query() {
			query[k] = strings.Join(vs, ",")
		}
		if len(query) > 0 {
			ev.QueryStringParameters = query
		}
	}
	if len(rt.params) > 0 {
		ev.PathParameters = make(map[string]string, len(rt.params))
		for _, name := range rt.params {
			ev.PathParameters[name] = r.PathValue(name)
		}
	}
	// An HTTP API infers the encoding from the Content-Type: a text body
	// is passed as it is, any other (and one without a type) base64-encoded.
	if len(body) > 0 && textType(r.Header.Get("Content-Type")) && utf8.Valid(body) {
		ev.Body = string(body)
	} else if len(body) > 0 {
		ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
	}
	return ev
}

// textType reports whether a body of this Content-Type reaches the
// function as text: text/*, JSON, XML, JavaScript and form data.
func textType(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	switch {
	case strings.HasPrefix(mt, "text/"), strings.HasSuffix(mt, "+json"), strings.HasSuffix(mt, "+xml"):
		return true
	}
	switch mt {
	case "application/json", "application/xml", "application/javascript", "application/x-www-form-urlencoded":
		return true
	}
	return false
}

// requestTime is requestContext's time and timeEpoch for now. The text
// changes once a second, so it is formatted once a second and shared.
func requestTime(now time.Time) (string, int64) {
	sec := now.Unix()
	if c := lastTime.Load(); c != nil && c.sec == sec {
		return c.text, now.UnixMilli()
	}
	c := &formattedTime{sec: sec, text: now.UTC().Format("02/Jan/2006:15:04:05 -0700")}
	lastTime.Store(c)
	return c.text, now.UnixMilli()
}

type formattedTime struct {
	sec  int64
	text string
}

var lastTime atomic.Pointer[formattedTime]

// lowerNames are the lowercase forms of the request headers clients
// usually send (API Gateway lowercases every name), so that those take no
// allocation per request; others are lowercased as they come.
var lowerNames = func() map[string]string {
	m := map[string]string{}
	for _, name := range []string{"Accept", "Accept-Encoding", "Accept-Language", "Authorization", "Connection",
		"Content-Length", "Content-Type", "Idempotency-Key", "Origin", "Referer", "User-Agent",
		"X-Forwarded-For", "X-Forwarded-Proto", "X-Request-Id"} {
		m[name] = strings.ToLower(name)
	}
	return m
}()

func lowerName(name string) string {
	if l, ok := lowerNames[name]; ok {
		return l
	}
	return strings.ToLower(name)
}

// Write sends a handler's response.
func write(w http.ResponseWriter, resp events.APIGatewayV2HTTPResponse) {
	h := w.Header()
	// One backing array for the single-valued headers, rather than one
	// slice each as Header.Set makes.
	values := make([]string, len(resp.Headers))
	i := 0
	for k, v := range resp.Headers {
		values[i] = v
		h[canonicalName(k)] = values[i : i+1 : i+1]
		i++
	}
	for k, vs := range resp.MultiValueHeaders {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	for _, c := range resp.Cookies {
		h.Add("Set-Cookie", c)
	}
	status := resp.StatusCode
	if status == 0 {
		status = http.StatusOK
	}
	if resp.IsBase64Encoded {
		if b, err := base64.StdEncoding.DecodeString(resp.Body); err == nil {
			w.WriteHeader(status)
			w.Write(b)
			return
		}
	}
	w.WriteHeader(status)
	io.WriteString(w, resp.Body)
}

// canonicalNames are the canonical forms of the headers the routes answer
// with, as Header.Set would make them (X-RateLimit-Limit is sent as
// X-Ratelimit-Limit), computed once.
var canonicalNames = func() map[string]string {
	m := map[string]string{}
	for _, name := range []string{"Cache-Control", "Content-Type", "Location", "Retry-After", "WWW-Authenticate",
		"X-Content-Type-Options", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
		m[name] = textproto.CanonicalMIMEHeaderKey(name)
	}
	return m
}()

func canonicalName(name string) string {
	if c, ok := canonicalNames[name]; ok {
		return c
	}
	return textproto.CanonicalMIMEHeaderKey(name)
}

// writeGatewayError answers like API Gateway itself does when no handler
// response exists.
func writeGatewayError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"message": msg})
}

func pathParams(pattern string) []string {
	var names []string
	for _, seg := range strings.Split(pattern, "/") {
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
			names = append(names, strings.TrimSuffix(strings.TrimPrefix(seg, "{"), "}"))
		}
	}
	return names
}

// RequestIDHeader is the header in which API Gateway's HTTP API names the
// request on every answer, its own and the routes'; its value is the
// route's requestContext.requestId, which the service's error envelope
// carries as request_id.
const RequestIDHeader = "Apigw-Requestid"

// NewRequestID mints a request id, one per request as the gateway does.
func NewRequestID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return fmt.Sprintf("local-%d", time.Now().UnixNano())
	}
	return hex.EncodeToString(b[:])
}
