package costs

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/mediagen-dev/mediagen/internal/api/routes"
	"github.com/mediagen-dev/mediagen/internal/local/apigw"
)

// Every route of the API is billed as an invocation of the function that
// serves it in template.yaml (routes.Table, which the deploy tests hold the
// template to), never under its raw route key.
func TestEveryRouteIsMeteredUnderItsFunction(t *testing.T) {
	for _, rt := range routes.Table() {
		t.Run(rt.Key(), func(t *testing.T) {
			m := &Meter{}
			wrapped := m.Routes([]apigw.Route{{Method: rt.Method, Path: rt.Path,
				Handler: func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
					return events.APIGatewayV2HTTPResponse{StatusCode: 200}, nil
				}}})
			if _, err := wrapped[0].Handler(context.Background(), events.APIGatewayV2HTTPRequest{}); err != nil {
				t.Fatal(err)
			}
			got := m.Snapshot()
			if got.APIRequests != 1 || got.ByFunction[rt.Function] != 1 || len(got.ByFunction) != 1 {
				t.Errorf("one call of %s counted %d API requests and invocations %v; want 1 and {%s: 1}",
					rt.Key(), got.APIRequests, got.ByFunction, rt.Function)
			}
		})
	}
}

// The stream function's URL is billed as one invocation of the stream
// function (routes.StreamFunction) lasting until its stream ended, and no
// API Gateway request (a function URL is not the HTTP API); a call
// refused before a stream (no body) is one invocation too.
func TestEveryStreamIsMeteredAsAnInvocationOfTheStreamFunction(t *testing.T) {
	for _, c := range []struct {
		name string
		body io.Reader
	}{
		{"a stream", strings.NewReader("id: 1\nevent: completed\ndata: {}\n\n")},
		{"a refusal without a body", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := &Meter{}
			fn := m.FunctionURL(func(context.Context, events.LambdaFunctionURLRequest) (*events.LambdaFunctionURLStreamingResponse, error) {
				return &events.LambdaFunctionURLStreamingResponse{StatusCode: 200, Body: c.body}, nil
			})
			resp, err := fn(context.Background(), events.LambdaFunctionURLRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Body != nil {
				if got := m.Snapshot(); got.LambdaInvocations != 0 {
					t.Errorf("counted %d invocations while the stream is open; want it counted when it ends", got.LambdaInvocations)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.(io.Closer).Close()
				resp.Body.(io.Closer).Close() // twice: still one invocation
			}
			got := m.Snapshot()
			if got.APIRequests != 0 || got.LambdaInvocations != 1 || got.ByFunction[routes.StreamFunction] != 1 || len(got.ByFunction) != 1 {
				t.Errorf("one stream counted %d API requests and invocations %v; want 0 and {%s: 1}",
					got.APIRequests, got.ByFunction, routes.StreamFunction)
			}
		})
	}
}
