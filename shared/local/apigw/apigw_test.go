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
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/mediagen-dev/mediagen/shared/local/apigw"
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
	}, authorizer, timeouts, log)
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
		{"the route's answer", "/echo/1", "", "{}", http.StatusBadRequest, false},
		{"a body over 10 MB", "/echo/1", "", strings.Repeat(" ", 10<<20+1), http.StatusRequestEntityTooLarge, true},
		{"the authorizer denies", "/echo/1", "deny", "{}", http.StatusForbidden, true},
		{"the authorizer fails", "/echo/1", "fail", "{}", http.StatusInternalServerError, true},
		{"the handler fails", "/fail", "", "{}", http.StatusInternalServerError, true},
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
}
