package apigw_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/mediagen-dev/mediagen/internal/local/apigw"
)

// The gateway answers CORS as an HTTP API configured with
// CorsConfiguration does: preflights itself (no route, no authorizer),
// and the configured headers, not the integration's, on answers to an
// allowed origin.
func TestCORSIsAnsweredByTheGatewayAsConfigured(t *testing.T) {
	body := map[string]any{"x-amazon-apigateway-cors": map[string]any{
		"allowOrigins":  []any{"*"},
		"allowMethods":  []any{"GET", "POST", "DELETE", "OPTIONS"},
		"allowHeaders":  []any{"Authorization", "Content-Type"},
		"exposeHeaders": []any{"Retry-After"},
		"maxAge":        600,
	}}
	cors, err := apigw.CORSFromBody(body)
	if err != nil || cors == nil {
		t.Fatalf("CORSFromBody: %v, %v", cors, err)
	}
	var routeCalls, authorizerCalls atomic.Int32
	mux := http.NewServeMux()
	apigw.Mount(mux, []apigw.Route{{Method: http.MethodPost, Path: "/api/things",
		Handler: func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			routeCalls.Add(1)
			// An integration's own CORS header is ignored by the gateway.
			return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusOK, Body: "{}",
				Headers: map[string]string{"Access-Control-Allow-Origin": "https://integration.example"}}, nil
		}}}, &apigw.LambdaAuthorizer{Func: func(context.Context, events.APIGatewayV2CustomAuthorizerV2Request) (events.APIGatewayV2CustomAuthorizerSimpleResponse, error) {
		authorizerCalls.Add(1)
		return events.APIGatewayV2CustomAuthorizerSimpleResponse{IsAuthorized: true}, nil
	}}, apigw.DefaultTimeouts, nil)
	srv := httptest.NewServer(cors.Wrap(mux))
	defer srv.Close()

	for _, tt := range []struct {
		name                         string
		method                       string
		header                       map[string]string
		wantStatus                   int
		wantOrigin, wantMethods      string
		wantMaxAge, wantExpose       string
		wantRouteCalls, wantAuthCall int32
	}{
		{"a preflight", http.MethodOptions,
			map[string]string{"Origin": "https://app.example", "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization"},
			http.StatusNoContent, "*", "GET,POST,DELETE,OPTIONS", "600", "", 0, 0},
		{"a preflight for a method not allowed", http.MethodOptions,
			map[string]string{"Origin": "https://app.example", "Access-Control-Request-Method": "PUT"},
			http.StatusNoContent, "", "", "", "", 0, 0},
		{"a request from another origin", http.MethodPost,
			map[string]string{"Origin": "https://app.example", "Authorization": "k"},
			http.StatusOK, "*", "", "", "retry-after", 1, 1},
		{"a request without an origin", http.MethodPost,
			map[string]string{"Authorization": "k2"},
			http.StatusOK, "", "", "", "", 1, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			routeBefore, authBefore := routeCalls.Load(), authorizerCalls.Load()
			req, _ := http.NewRequest(tt.method, srv.URL+"/api/things", nil)
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			h := resp.Header
			if resp.StatusCode != tt.wantStatus || h.Get("Access-Control-Allow-Origin") != tt.wantOrigin ||
				h.Get("Access-Control-Allow-Methods") != tt.wantMethods || h.Get("Access-Control-Max-Age") != tt.wantMaxAge ||
				h.Get("Access-Control-Expose-Headers") != tt.wantExpose {
				t.Errorf("HTTP %d, headers %v; want %d, origin %q, methods %q, max-age %q, expose %q",
					resp.StatusCode, h, tt.wantStatus, tt.wantOrigin, tt.wantMethods, tt.wantMaxAge, tt.wantExpose)
			}
			if got := routeCalls.Load() - routeBefore; got != tt.wantRouteCalls {
				t.Errorf("the route ran %d times, want %d", got, tt.wantRouteCalls)
			}
			if got := authorizerCalls.Load() - authBefore; got != tt.wantAuthCall {
				t.Errorf("the authorizer ran %d times, want %d", got, tt.wantAuthCall)
			}
		})
	}
}
