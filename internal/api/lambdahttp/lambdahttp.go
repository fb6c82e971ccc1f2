// Package lambdahttp adapts the API's routes and authorizer (package
// httpapi) to API Gateway's HTTP API Lambda events, payload format 2.0. The
// Lambda functions and the local runtime's gateway both go through it, so
// they run the same code from the event on.
package lambdahttp

import (
	"context"

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
