package lambdahttp_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/mediagen-dev/mediagen/internal/api/httpapi"
	"github.com/mediagen-dev/mediagen/internal/api/lambdahttp"
)

// An HTTP API event as API Gateway sends it (payload 2.0), with the
// authorizer's context, reaches the route with every field it reads, and
// the route's answer goes back whole.
func TestRouteCarriesTheEventBothWays(t *testing.T) {
	raw := `{"version":"2.0","routeKey":"POST /api/generations/{id}/cancel","rawPath":"/api/generations/7/cancel",
		"headers":{"authorization":"Bearer k","idempotency-key":"abc"},
		"queryStringParameters":{"limit":"5"},
		"requestContext":{"http":{"method":"POST","path":"/api/generations/7/cancel"},"requestId":"r-1",
			"authorizer":{"lambda":{"user_id":"u1","rate_limit":100}}},
		"pathParameters":{"id":"7"},"body":"e30=","isBase64Encoded":true}`
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal([]byte(raw), &ev); err != nil {
		t.Fatal(err)
	}
	var got httpapi.Request
	h := lambdahttp.Route(func(_ context.Context, req httpapi.Request) (httpapi.Response, error) {
		got = req
		return httpapi.Response{StatusCode: 202, Headers: map[string]string{"X-A": "b"}, Body: "{}"}, nil
	})
	resp, err := h(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	want := httpapi.Request{RouteKey: "POST /api/generations/{id}/cancel", Method: "POST", RequestID: "r-1",
		Headers:               map[string]string{"authorization": "Bearer k", "idempotency-key": "abc"},
		PathParameters:        map[string]string{"id": "7"},
		QueryStringParameters: map[string]string{"limit": "5"},
		Body:                  "e30=", IsBase64Encoded: true,
		Authorizer: map[string]any{"user_id": "u1", "rate_limit": float64(100)}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the route got\n%+v\nwant\n%+v", got, want)
	}
	if resp.StatusCode != 202 || resp.Headers["X-A"] != "b" || resp.Body != "{}" {
		t.Errorf("answer %+v", resp)
	}
}

func TestAuthorizerCarriesHeadersAndContext(t *testing.T) {
	a := lambdahttp.Authorizer(func(_ context.Context, req httpapi.AuthorizerRequest) (httpapi.AuthorizerResult, error) {
		return httpapi.AuthorizerResult{IsAuthorized: req.Headers["authorization"] == "Bearer k" && req.RouteKey == "GET /x",
			Context: map[string]any{"user_id": "u1"}}, nil
	})
	resp, err := a(context.Background(), events.APIGatewayV2CustomAuthorizerV2Request{RouteKey: "GET /x",
		Headers: map[string]string{"authorization": "Bearer k"}})
	if err != nil || !resp.IsAuthorized || resp.Context["user_id"] != "u1" {
		t.Errorf("authorizer answered %+v, %v", resp, err)
	}
}

// The stream function matches a function URL's path to its routes itself
// (a function URL sends every path to its function): the route gets its
// path parameters and the request's headers, lowercased; a path no route
// has is the function's own 404 in the API's envelope.
func TestStreamFunctionMatchesThePathToItsRoutes(t *testing.T) {
	var got httpapi.Request
	h := lambdahttp.StreamFunction([]lambdahttp.StreamRoute{
		{Method: "GET", Path: "/api/generations/{id}/events", Handler: func(_ context.Context, req httpapi.Request) (httpapi.StreamResponse, error) {
			got = req
			return httpapi.StreamResponse{StatusCode: 200, Headers: map[string]string{"Content-Type": "text/event-stream"}}, nil
		}},
	})
	for _, c := range []struct {
		method, path string
		status       int
		id           string
	}{
		{"GET", "/api/generations/abc-1/events", 200, "abc-1"},
		{"GET", "/api/generations/a%2Fb/events", 200, "a/b"},
		{"POST", "/api/generations/abc-1/events", 404, ""},
		{"GET", "/api/generations/abc-1", 404, ""},
		{"GET", "/api/generations//events", 404, ""},
	} {
		got = httpapi.Request{}
		ev := events.LambdaFunctionURLRequest{RawPath: c.path, Headers: map[string]string{"Authorization": "Bearer k"},
			RequestContext: events.LambdaFunctionURLRequestContext{RequestID: "r1",
				HTTP: events.LambdaFunctionURLRequestContextHTTPDescription{Method: c.method}}}
		resp, err := h(context.Background(), ev)
		if err != nil || resp.StatusCode != c.status {
			t.Errorf("%s %s: %+v, %v; want %d", c.method, c.path, resp, err, c.status)
			continue
		}
		if c.status == 200 && (got.PathParameters["id"] != c.id || got.Headers["authorization"] != "Bearer k" ||
			got.RouteKey != "GET /api/generations/{id}/events" || got.RequestID != "r1") {
			t.Errorf("%s %s: the route got %+v", c.method, c.path, got)
		}
		if c.status == 404 && resp.Headers["Content-Type"] != "application/json" {
			t.Errorf("%s %s: a 404 of type %q, want the JSON envelope", c.method, c.path, resp.Headers["Content-Type"])
		}
	}
}
