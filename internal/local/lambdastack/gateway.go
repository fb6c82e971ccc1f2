package lambdastack

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/mediagen-dev/mediagen/internal/local/apigw"
)

// integrationFunction finds the function in an integration's or
// authorizer's URI (...:lambda:path/2015-03-31/functions/<arn>/invocations).
var integrationFunction = regexp.MustCompile(`/functions/(.+)/invocations$`)

// mountAPI serves every HTTP API of the expanded template on mux: each
// path and method of its OpenAPI body invokes its integration's function
// with a payload format 2.0 event, behind its Lambda authorizer (with the
// authorizer's cache TTL) unless the route says NONE; API Gateway's own
// limits (10 MB bodies, the 30 s integration timeout) are apigw's. The
// handler it returns answers CORS as the API's configuration says.
func (s *Stack) mountAPI(mux *http.ServeMux) (http.Handler, error) {
	var handler http.Handler = mux
	apis := s.resourcesOfType("AWS::ApiGatewayV2::Api")
	if len(apis) > 1 {
		return nil, fmt.Errorf("the template has %d HTTP APIs; one listener serves one", len(apis))
	}
	for _, logical := range apis {
		props, err := s.properties(logical)
		if err != nil {
			return nil, err
		}
		body, _ := props["Body"].(map[string]any)
		if body == nil {
			return nil, fmt.Errorf("%s has no OpenAPI Body", logical)
		}
		cors, err := apigw.CORSFromBody(body)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", logical, err)
		}
		if cors != nil {
			handler = cors.Wrap(mux)
		}
		authorizers := map[string]*apigw.LambdaAuthorizer{}
		schemes, _ := body["components"].(map[string]any)["securitySchemes"].(map[string]any)
		for name, sc := range schemes {
			a, _ := sc.(map[string]any)["x-amazon-apigateway-authorizer"].(map[string]any)
			if a == nil {
				continue
			}
			if a["type"] != "request" || fmt.Sprint(a["authorizerPayloadFormatVersion"]) != "2.0" || a["enableSimpleResponses"] != true {
				return nil, fmt.Errorf("%s: authorizer %s is not a payload 2.0 request authorizer with simple responses, the one shape modelled here", logical, name)
			}
			if ids, _ := a["identitySource"].([]any); len(ids) != 1 || ids[0] != "$request.header.Authorization" {
				return nil, fmt.Errorf("%s: authorizer %s's identity source is %v; apigw models $request.header.Authorization", logical, name, a["identitySource"])
			}
			fn, err := s.uriFunction(fmt.Sprint(a["authorizerUri"]))
			if err != nil {
				return nil, fmt.Errorf("%s: authorizer %s: %w", logical, name, err)
			}
			ttl := time.Duration(intOf(a["authorizerResultTtlInSeconds"], 0)) * time.Second
			authorizers[name] = &apigw.LambdaAuthorizer{CacheTTL: ttl, Now: s.cfg.GatewayNow,
				Func: func(ctx context.Context, req events.APIGatewayV2CustomAuthorizerV2Request) (resp events.APIGatewayV2CustomAuthorizerSimpleResponse, err error) {
					err = invokeJSON(ctx, fn, req, &resp)
					return resp, err
				}}
		}
		paths, _ := body["paths"].(map[string]any)
		byAuth := map[string][]apigw.Route{}
		for _, path := range sortedKeys(paths) {
			methods, _ := paths[path].(map[string]any)
			for _, method := range sortedKeys(methods) {
				op, _ := methods[method].(map[string]any)
				integ, _ := op["x-amazon-apigateway-integration"].(map[string]any)
				if integ == nil {
					continue
				}
				if integ["type"] != "aws_proxy" || fmt.Sprint(integ["payloadFormatVersion"]) != "2.0" {
					return nil, fmt.Errorf("%s: %s %s is not a Lambda proxy integration with payload format 2.0", logical, method, path)
				}
				fn, err := s.uriFunction(fmt.Sprint(integ["uri"]))
				if err != nil {
					return nil, fmt.Errorf("%s: %s %s: %w", logical, method, path, err)
				}
				auth := ""
				if sec, _ := op["security"].([]any); len(sec) > 0 {
					for k := range sec[0].(map[string]any) {
						auth = k
					}
				}
				if auth != "NONE" && auth != "" && authorizers[auth] == nil {
					return nil, fmt.Errorf("%s: %s %s names authorizer %s, which the API does not define", logical, method, path, auth)
				}
				byAuth[auth] = append(byAuth[auth], apigw.Route{Method: strings.ToUpper(method), Path: path,
					Handler: func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (resp events.APIGatewayV2HTTPResponse, err error) {
						err = invokeJSON(ctx, fn, ev, &resp)
						return resp, err
					}})
			}
		}
		for auth, routes := range byAuth {
			apigw.Mount(mux, routes, authorizers[auth], apigw.DefaultTimeouts, s.cfg.Log)
		}
	}
	return handler, nil
}

// uriFunction is the function an integration URI invokes.
func (s *Stack) uriFunction(uri string) (*Function, error) {
	m := integrationFunction.FindStringSubmatch(uri)
	if m == nil {
		return nil, fmt.Errorf("URI %s invokes no Lambda function", uri)
	}
	return s.functionOfARN(m[1])
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
