// Package lambdahttp adapts the API's routes and authorizer (package
// httpapi) to API Gateway's HTTP API Lambda events, payload format 2.0. The
// Lambda functions and the local runtime's gateway both go through it, so
// they run the same code from the event on.
package lambdahttp

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/mediagen-dev/mediagen/internal/api/httpapi"
)

// Route is h as a Lambda handler of HTTP API events.
func Route(h httpapi.Handler) func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	return func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		req := httpapi.Request{
			RouteKey:              ev.RouteKey,
			Method:                ev.RequestContext.HTTP.Method,
			RequestID:             ev.RequestContext.RequestID,
			Headers:               ev.Headers,
			PathParameters:        ev.PathParameters,
			QueryStringParameters: ev.QueryStringParameters,
			Body:                  ev.Body,
			IsBase64Encoded:       ev.IsBase64Encoded,
		}
		if a := ev.RequestContext.Authorizer; a != nil {
			req.Authorizer = a.Lambda
		}
		resp, err := h(ctx, req)
		return events.APIGatewayV2HTTPResponse{StatusCode: resp.StatusCode, Headers: resp.Headers, Body: resp.Body,
			IsBase64Encoded: resp.IsBase64Encoded}, err
	}
}

// Authorizer is a as the HTTP API's Lambda authorizer with simple
// responses.
func Authorizer(a func(context.Context, httpapi.AuthorizerRequest) (httpapi.AuthorizerResult, error)) func(context.Context, events.APIGatewayV2CustomAuthorizerV2Request) (events.APIGatewayV2CustomAuthorizerSimpleResponse, error) {
	return func(ctx context.Context, ev events.APIGatewayV2CustomAuthorizerV2Request) (events.APIGatewayV2CustomAuthorizerSimpleResponse, error) {
		res, err := a(ctx, httpapi.AuthorizerRequest{RouteKey: ev.RouteKey, Headers: ev.Headers})
		return events.APIGatewayV2CustomAuthorizerSimpleResponse{IsAuthorized: res.IsAuthorized, Context: res.Context}, err
	}
}

// StreamRoute is a streaming route the stream function serves: its
// method, path pattern ("/api/generations/{id}/events") and handler.
type StreamRoute struct {
	Method, Path string
	Handler      httpapi.StreamHandler
}

// StreamFunction is routes as the handler of a Lambda function URL with
// InvokeMode RESPONSE_STREAM: a function URL sends every path to its one
// function, so the function matches the request's path to its routes
// itself (their path parameters with it) and answers 404 otherwise. The
// answer's head goes first, then its body as it is read.
func StreamFunction(routes []StreamRoute) func(context.Context, events.LambdaFunctionURLRequest) (*events.LambdaFunctionURLStreamingResponse, error) {
	return func(ctx context.Context, ev events.LambdaFunctionURLRequest) (*events.LambdaFunctionURLStreamingResponse, error) {
		method := ev.RequestContext.HTTP.Method
		for _, rt := range routes {
			params, ok := MatchPath(rt.Path, ev.RawPath)
			if !ok || !strings.EqualFold(rt.Method, method) {
				continue
			}
			headers := make(map[string]string, len(ev.Headers))
			for k, v := range ev.Headers {
				headers[strings.ToLower(k)] = v
			}
			resp, err := rt.Handler(ctx, httpapi.Request{RouteKey: rt.Method + " " + rt.Path, Method: method,
				RequestID: ev.RequestContext.RequestID, Headers: headers, PathParameters: params,
				QueryStringParameters: ev.QueryStringParameters, Body: ev.Body, IsBase64Encoded: ev.IsBase64Encoded})
			if err != nil {
				return nil, err
			}
			out := &events.LambdaFunctionURLStreamingResponse{StatusCode: resp.StatusCode, Headers: resp.Headers}
			if resp.Body != nil {
				out.Body = resp.Body
			}
			return out, nil
		}
		body := fmt.Sprintf(`{"error":{"code":"not_found","message":"no route %s %s here: this URL serves the event streams"},"request_id":%q}`,
			method, ev.RawPath, ev.RequestContext.RequestID)
		return &events.LambdaFunctionURLStreamingResponse{StatusCode: http.StatusNotFound,
			Headers: map[string]string{"Content-Type": "application/json"}, Body: strings.NewReader(body)}, nil
	}
}

// MatchPath matches a path to a route's pattern, whose {name} segments
// each take one segment of the path: the parameters, and whether it
// matched.
func MatchPath(pattern, path string) (map[string]string, bool) {
	want := strings.Split(strings.Trim(pattern, "/"), "/")
	got := strings.Split(strings.Trim(path, "/"), "/")
	if len(want) != len(got) {
		return nil, false
	}
	params := map[string]string{}
	for i, seg := range want {
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
			v, err := url.PathUnescape(got[i])
			if err != nil || v == "" {
				return nil, false
			}
			params[seg[1:len(seg)-1]] = v
			continue
		}
		if seg != got[i] {
			return nil, false
		}
	}
	return params, true
}
