package apigw_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/mediagen-dev/mediagen/internal/local/apigw"
)

// TestEveryAnswerNamesItsRequest: each answer, the route's and each of the
// gateway's own, carries the request id header, and the route sees that id
// as its requestContext.requestId (the id its error envelope shows).
func TestEveryAnswerNamesItsRequest(t *testing.T) {
	echoID := func(_ context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusBadRequest,
			Headers: map[string]string{"Content-Type": "application/json"},
			Body:    fmt.Sprintf(`{"request_id":%q}`, req.RequestContext.RequestID)}, nil
	}
	failing := func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		return events.APIGatewayV2HTTPResponse{}, errors.New("boom")
	}
	authorizer := func(_ context.Context, req events.APIGatewayV2CustomAuthorizerV2Request) (events.APIGatewayV2CustomAuthorizerSimpleResponse, error) {
		switch req.Headers["authorization"] {
		case "deny":
			return events.APIGatewayV2CustomAuthorizerSimpleResponse{IsAuthorized: false}, nil
		case "fail":
			return events.APIGatewayV2CustomAuthorizerSimpleResponse{}, errors.New("authorizer down")
		}
		return events.APIGatewayV2CustomAuthorizerSimpleResponse{IsAuthorized: true}, nil
	}
	mux := http.NewServeMux()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	timeouts := apigw.Timeouts{ReadHeader: 5 * time.Second, Read: 500 * time.Millisecond, Write: 10 * time.Second, Idle: 10 * time.Second}
	apigw.Mount(mux, []apigw.Route{
		{Method: http.MethodPost, Path: "/echo/{id}", Handler: echoID},
		{Method: http.MethodPost, Path: "/fail", Handler: failing},
	}, &apigw.LambdaAuthorizer{Func: authorizer}, timeouts, log)
	srv := httptest.NewUnstartedServer(mux)
	srv.Config = timeouts.Server(mux)
	srv.Start()
	defer srv.Close()

	tests := []struct {
		name, path, authorization string
		body                      string
		status                    int
		gateway                   bool // the gateway's own {"message"} answer
	}{
		{"the route's answer", "/echo/1", "ok", "{}", http.StatusBadRequest, false},
		{"a body over 10 MB", "/echo/1", "", strings.Repeat(" ", 10<<20+1), http.StatusRequestEntityTooLarge, true},
		{"no Authorization header", "/echo/1", "", "{}", http.StatusUnauthorized, true},
		{"the authorizer denies", "/echo/1", "deny", "{}", http.StatusForbidden, true},
		{"the authorizer fails", "/echo/1", "fail", "{}", http.StatusInternalServerError, true},
		{"the handler fails", "/fail", "ok", "{}", http.StatusInternalServerError, true},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, srv.URL+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if tt.authorization != "" {
				req.Header.Set("Authorization", tt.authorization)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body struct {
				Message   string `json:"message"`
				RequestID string `json:"request_id"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
				t.Fatalf("HTTP %d: the body is not JSON: %v", resp.StatusCode, err)
			}
			id := resp.Header.Get(apigw.RequestIDHeader)
			if resp.StatusCode != tt.status || id == "" {
				t.Fatalf("HTTP %d with %s %q, want %d with an id", resp.StatusCode, apigw.RequestIDHeader, id, tt.status)
			}
			if seen[id] {
				t.Errorf("request id %s was given twice", id)
			}
			seen[id] = true
			if tt.gateway && body.Message == "" {
				t.Errorf("the gateway's answer has no message")
			}
			if !tt.gateway && body.RequestID != id {
				t.Errorf("the route saw request id %q, the header says %q", body.RequestID, id)
			}
		})
	}

	t.Run("a body that does not arrive in time", func(t *testing.T) {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		// Promise 10 bytes and send 1: the read timeout (500 ms) cuts it off.
		fmt.Fprintf(conn, "POST /echo/1 HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n{")
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("no answer: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestTimeout || resp.Header.Get(apigw.RequestIDHeader) == "" {
			t.Errorf("HTTP %d with %s %q, want 408 with an id", resp.StatusCode, apigw.RequestIDHeader, resp.Header.Get(apigw.RequestIDHeader))
		}
	})

	t.Run("a body over 10 MB that has not arrived yet", func(t *testing.T) {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		// Declare 10 MB + 1 and send none of it: the length alone is refused,
		// however slowly the body would come (waiting for it would end in
		// the read timeout's 408).
		fmt.Fprintf(conn, "POST /echo/1 HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", 10<<20+1)
		_ = conn.SetReadDeadline(time.Now().Add(time.Minute))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("no answer: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge || resp.Header.Get(apigw.RequestIDHeader) == "" {
			t.Errorf("HTTP %d with %s %q, want 413 with an id", resp.StatusCode, apigw.RequestIDHeader, resp.Header.Get(apigw.RequestIDHeader))
		}
	})
}

// TestABodyOfUnknownLengthIsRefusedOnceItPasses10MB: a chunked body
// declares no length; the gateway reads it up to the limit and answers 413
// once one byte more has come, without reading the rest.
func TestABodyOfUnknownLengthIsRefusedOnceItPasses10MB(t *testing.T) {
	ran := false
	mux := http.NewServeMux()
	apigw.Mount(mux, []apigw.Route{{Method: http.MethodPost, Path: "/x", Handler: func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		ran = true
		return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusOK}, nil
	}}}, nil, apigw.DefaultTimeouts, slog.New(slog.DiscardHandler))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	// 10 MB + 1 in chunks, then a body that never ends: only the limit can
	// end the request.
	stop := make(untilClosed)
	defer close(stop)
	endless := io.MultiReader(strings.NewReader(strings.Repeat(" ", 10<<20+1)), stop)
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/x", endless)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = -1 // chunked
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || ran {
		t.Errorf("HTTP %d (route ran: %v), want 413 from the gateway", resp.StatusCode, ran)
	}
}

// untilClosed is a body that sends nothing more until it is closed.
type untilClosed chan struct{}

func (c untilClosed) Read([]byte) (int, error) { <-c; return 0, io.EOF }

// TestAMissingIdentitySourceIsTheGatewaysOwn401: without an Authorization
// header (or with an empty one) the gateway answers 401
// {"message":"Unauthorized"} itself, as API Gateway does for an authorizer
// with an identity source: neither the authorizer nor the route runs.
func TestAMissingIdentitySourceIsTheGatewaysOwn401(t *testing.T) {
	ran := 0
	route := func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		ran++
		return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusOK}, nil
	}
	authorizer := func(context.Context, events.APIGatewayV2CustomAuthorizerV2Request) (events.APIGatewayV2CustomAuthorizerSimpleResponse, error) {
		ran++
		return events.APIGatewayV2CustomAuthorizerSimpleResponse{IsAuthorized: true}, nil
	}
	mux := http.NewServeMux()
	apigw.Mount(mux, []apigw.Route{{Method: http.MethodGet, Path: "/x", Handler: route}},
		&apigw.LambdaAuthorizer{Func: authorizer, CacheTTL: time.Minute}, apigw.DefaultTimeouts, slog.New(slog.NewTextHandler(io.Discard, nil)))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for name, header := range map[string][]string{"no header": nil, "an empty header": {""}} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/x", nil)
		for _, v := range header {
			req.Header.Add("Authorization", v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || string(body) != `{"message":"Unauthorized"}`+"\n" ||
			resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get(apigw.RequestIDHeader) == "" {
			t.Errorf("%s: HTTP %d %q, Content-Type %q, %s %q; want the gateway's 401 {\"message\":\"Unauthorized\"} with its request id",
				name, resp.StatusCode, body, resp.Header.Get("Content-Type"), apigw.RequestIDHeader, resp.Header.Get(apigw.RequestIDHeader))
		}
	}
	if ran != 0 {
		t.Errorf("the authorizer or the route ran %d times", ran)
	}
}

// TestTheAuthorizersAnswersAreCachedByTheIdentitySourceForTheTTL: with a
// TTL, one answer per Authorization value serves every route until it
// expires, allowing and denying alike; errors are not cached; with no TTL
// every request invokes the authorizer.
func TestTheAuthorizersAnswersAreCachedByTheIdentitySourceForTheTTL(t *testing.T) {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	calls := map[string]int{}
	authorizer := func(_ context.Context, req events.APIGatewayV2CustomAuthorizerV2Request) (events.APIGatewayV2CustomAuthorizerSimpleResponse, error) {
		id := req.IdentitySource[0]
		calls[id]++
		switch id {
		case "fail":
			return events.APIGatewayV2CustomAuthorizerSimpleResponse{}, errors.New("authorizer down")
		case "deny":
			return events.APIGatewayV2CustomAuthorizerSimpleResponse{IsAuthorized: false}, nil
		}
		return events.APIGatewayV2CustomAuthorizerSimpleResponse{IsAuthorized: true,
			Context: map[string]any{"who": id, "call": calls[id]}}, nil
	}
	route := func(_ context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		c := req.RequestContext.Authorizer.Lambda
		return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusOK, Body: fmt.Sprintf("%v/%v", c["who"], c["call"])}, nil
	}
	for _, ttl := range []time.Duration{0, time.Minute} {
		t.Run(fmt.Sprint("TTL ", ttl), func(t *testing.T) {
			clear(calls)
			mux := http.NewServeMux()
			apigw.Mount(mux, []apigw.Route{
				{Method: http.MethodGet, Path: "/a", Handler: route},
				{Method: http.MethodPost, Path: "/b", Handler: route},
			}, &apigw.LambdaAuthorizer{Func: authorizer, CacheTTL: ttl, Now: func() time.Time { return now }},
				apigw.DefaultTimeouts, slog.New(slog.NewTextHandler(io.Discard, nil)))
			srv := httptest.NewServer(mux)
			defer srv.Close()
			do := func(method, path, authorization string) (int, string) {
				t.Helper()
				req, _ := http.NewRequest(method, srv.URL+path, nil)
				req.Header.Set("Authorization", authorization)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				body, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, string(body)
			}
			do(http.MethodGet, "/a", "k1")
			_, second := do(http.MethodPost, "/b", "k1") // another route, the same identity
			do(http.MethodGet, "/a", "k2")
			do(http.MethodGet, "/a", "deny")
			if code, _ := do(http.MethodGet, "/a", "deny"); code != http.StatusForbidden {
				t.Errorf("a denial answered from the cache: HTTP %d, want 403", code)
			}
			do(http.MethodGet, "/a", "fail")
			if code, _ := do(http.MethodGet, "/a", "fail"); code != http.StatusInternalServerError {
				t.Errorf("a failing authorizer: HTTP %d, want 500", code)
			}
			want := map[string]int{"k1": 2, "k2": 1, "deny": 2, "fail": 2}
			wantSecond := "k1/2"
			if ttl > 0 {
				want = map[string]int{"k1": 1, "k2": 1, "deny": 1, "fail": 2}
				wantSecond = "k1/1" // the first route's answer, from the cache
			}
			if !reflect.DeepEqual(calls, want) || second != wantSecond {
				t.Errorf("authorizer calls %v, the second route saw %q; want %v and %q", calls, second, want, wantSecond)
			}
			if ttl == 0 {
				return
			}
			now = now.Add(ttl - time.Millisecond)
			do(http.MethodGet, "/a", "k1")
			if calls["k1"] != 1 {
				t.Errorf("an answer was not reused until its TTL: %d calls", calls["k1"])
			}
			now = now.Add(time.Millisecond)
			if _, body := do(http.MethodGet, "/a", "k1"); calls["k1"] != 2 || body != "k1/2" {
				t.Errorf("an answer was reused past its TTL: %d calls, the route saw %q", calls["k1"], body)
			}
		})
	}
}

// TestAHandlerPastTheIntegrationTimeoutGets503AndRunsOn: as API Gateway's
// HTTP API does at its 30 s integration timeout (shortened here), the
// client gets the gateway's own 503 while the handler is still running;
// the handler is not canceled and finishes its work, and a handler that
// ends in time answers as usual.
func TestAHandlerPastTheIntegrationTimeoutGets503AndRunsOn(t *testing.T) {
	release := make(chan struct{})
	finished := make(chan error, 1)
	slow := func(ctx context.Context, _ events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		<-release
		finished <- ctx.Err() // the work goes on with a live context
		return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusOK, Body: `{"late":true}`}, nil
	}
	quick := func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusOK, Body: `{"quick":true}`}, nil
	}
	mux := http.NewServeMux()
	timeouts := apigw.DefaultTimeouts
	timeouts.Integration = 50 * time.Millisecond
	apigw.Mount(mux, []apigw.Route{
		{Method: http.MethodPost, Path: "/slow", Handler: slow},
		{Method: http.MethodGet, Path: "/quick", Handler: quick},
	}, nil, timeouts, slog.New(slog.NewTextHandler(io.Discard, nil)))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	defer close(release)

	resp, err := http.Post(srv.URL+"/slow", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatalf("the client got no answer: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || strings.TrimSpace(string(body)) != `{"message":"Service Unavailable"}` ||
		resp.Header.Get(apigw.RequestIDHeader) == "" {
		t.Errorf("past the integration timeout: HTTP %d %s (request id %q), want the gateway's 503",
			resp.StatusCode, body, resp.Header.Get(apigw.RequestIDHeader))
	}
	select {
	case err := <-finished:
		t.Fatalf("the handler ended (context %v) before the client had its 503", err)
	default:
	}
	release <- struct{}{}
	if err := <-finished; err != nil {
		t.Errorf("the handler's context ended with the gateway's wait: %v", err)
	}

	resp, err = http.Get(srv.URL + "/quick")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != `{"quick":true}` {
		t.Errorf("a handler within the timeout: HTTP %d %s", resp.StatusCode, body)
	}
}

// TestAnEventOverLambdasPayloadLimitIsRefusedBeforeTheRoute: the gateway
// measures the event it built (the body escaped as a JSON string, or
// base64-encoded when its type is not text, plus the headers and the
// authorizer's context) and answers 413 {"message":"Request Too Long"}
// itself for one of 6 MiB or more, as AWS does, without invoking the
// route; every event a route gets is under the limit.
func TestAnEventOverLambdasPayloadLimitIsRefusedBeforeTheRoute(t *testing.T) {
	var got []int
	measure := func(_ context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		n, err := apigw.EventSize(req)
		if err != nil {
			return events.APIGatewayV2HTTPResponse{}, err
		}
		got = append(got, n)
		return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusNoContent}, nil
	}
	allow := func(context.Context, events.APIGatewayV2CustomAuthorizerV2Request) (events.APIGatewayV2CustomAuthorizerSimpleResponse, error) {
		return events.APIGatewayV2CustomAuthorizerSimpleResponse{IsAuthorized: true, Context: map[string]any{"user_id": "usr_1"}}, nil
	}
	mux := http.NewServeMux()
	apigw.Mount(mux, []apigw.Route{{Method: http.MethodPost, Path: "/measure", Handler: measure}},
		&apigw.LambdaAuthorizer{Func: allow}, apigw.Timeouts{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	const limit = apigw.LambdaPayloadLimit
	str := func(n int, c string) string { return `"` + strings.Repeat(c, n) + `"` }
	tests := []struct {
		name, contentType, body string
		refused                 bool
	}{
		{"JSON a little under the limit", "application/json", str(limit-4<<10, "a"), false},
		{"JSON at the limit", "application/json", str(limit, "a"), true},
		{"JSON under the limit in bytes, over it escaped", "application/json", str(limit/2+1, `"`), true},
		{"three quarters of the limit as JSON", "application/json", str(limit/4*3, "a"), false},
		{"the same without a Content-Type, base64-encoded", "", str(limit/4*3, "a"), true},
		{"the same as an image, base64-encoded", "image/png", str(limit/4*3, "a"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got = nil
			req, err := http.NewRequest(http.MethodPost, srv.URL+"/measure", strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer k")
			if tt.contentType != "" {
				req.Header.Set("Content-Type", tt.contentType)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			refused := resp.StatusCode == http.StatusRequestEntityTooLarge && strings.TrimSpace(string(body)) == `{"message":"Request Too Long"}`
			if refused != tt.refused || (refused && len(got) > 0) || (!refused && resp.StatusCode != http.StatusNoContent) {
				t.Fatalf("HTTP %d %.100s (route ran with events of %v bytes), want refused by the gateway: %v", resp.StatusCode, body, got, tt.refused)
			}
			for _, n := range got {
				if n >= limit {
					t.Errorf("the route got an event of %d bytes, at or over the %d limit", n, limit)
				}
			}
		})
	}
}
