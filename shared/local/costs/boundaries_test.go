package costs_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/mediagen-dev/mediagen"
	"github.com/mediagen-dev/mediagen/shared/local/apigw"
	"github.com/mediagen-dev/mediagen/shared/local/costs"
)

// TestEveryRouteOfTheTemplateIsMeteredUnderItsFunction: a call of each
// route template.yaml deploys counts one invocation of the function the
// template puts behind it (its folder under functions/), never of a raw
// route key, as the bill of the deployed stack would.
func TestEveryRouteOfTheTemplateIsMeteredUnderItsFunction(t *testing.T) {
	routes, err := mediagen.Routes()
	if err != nil {
		t.Fatal(err)
	}
	if len(routes) < 21 {
		t.Fatalf("template.yaml has %d routes, want at least the 21 of the API", len(routes))
	}
	m := &costs.Meter{}
	var mounted []apigw.Route
	for _, r := range routes {
		mounted = append(mounted, apigw.Route{Method: r.Method, Path: r.Path,
			Handler: func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
				return events.APIGatewayV2HTTPResponse{StatusCode: 200}, nil
			}})
	}
	for _, r := range m.Routes(mounted) {
		if _, err := r.Handler(context.Background(), events.APIGatewayV2HTTPRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	c := m.Snapshot()
	want := map[string]int64{}
	for _, r := range routes {
		want[r.Function]++
	}
	for _, r := range routes {
		if got := c.ByFunction[r.Function]; got != want[r.Function] {
			t.Errorf("%s: %d invocations of %s, want %d", r.Key(), got, r.Function, want[r.Function])
		}
	}
	for name := range c.ByFunction {
		if strings.Contains(name, "/") {
			t.Errorf("invocations metered under the route key %q, not a function", name)
		}
	}
	if c.ByFunction["account-keys-list"] != 1 || c.ByFunction["open-api"] != 1 {
		t.Errorf("by function %v: want account-keys-list (GET /api/account/keys) and open-api (GET /api/openapi.json) once each", c.ByFunction)
	}
}
