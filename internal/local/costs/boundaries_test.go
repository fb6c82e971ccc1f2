package costs

import (
	"context"
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
