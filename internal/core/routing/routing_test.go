package routing

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/mediagen-dev/mediagen/internal/core/catalog"
)

// file is a valid routing file with every variant on one upstream, changed
// by edit.
func file(t *testing.T, edit func(m map[string]any)) []byte {
	t.Helper()
	raw, _ := json.Marshal(Single("rep", ProtocolReplicate, "https://api.replicate.com/v1", []string{"replicate.delivery", "*.replicate.delivery"}))
	var m map[string]any
	json.Unmarshal(raw, &m)
	edit(m)
	out, _ := json.Marshal(m)
	return out
}

func TestARoutingFileIsRefusedWithOneLineNamingTheProblem(t *testing.T) {
	ups := func(m map[string]any) map[string]any { return m["upstreams"].(map[string]any)["rep"].(map[string]any) }
	tests := []struct {
		name string
		edit func(m map[string]any)
		says string
	}{
		{"an unknown upstream", func(m map[string]any) {
			m["variants"].(map[string]any)["provider-a/zeta"] = []any{map[string]any{"upstream": "nowhere", "model": "a/b"}}
		}, `variant provider-a/zeta, route 1: unknown upstream "nowhere"`},
		{"a missing variant", func(m map[string]any) { delete(m["variants"].(map[string]any), "provider-b/beta-2") }, "variant provider-b/beta-2 has no route"},
		{"a bad protocol", func(m map[string]any) { ups(m)["protocol"] = "grpc" }, `upstream "rep": protocol "grpc" is not "replicate" or "fal"`},
		{"a variant not in the catalog", func(m map[string]any) {
			m["variants"].(map[string]any)["provider-z/omega"] = []any{}
		}, `variant "provider-z/omega" is not in the catalog`},
		{"a bad type", func(m map[string]any) {
			m["variants"].(map[string]any)["provider-a/zeta"] = []any{map[string]any{"upstream": "rep", "model": "a/b", "types": map[string]any{"n": "float"}}}
		}, `types.n is "float"`},
		{"a token in the file", func(m map[string]any) { ups(m)["token"] = "r8_secret" }, `unknown field "token"`},
		{"no output hosts", func(m map[string]any) { ups(m)["output_hosts"] = []any{} }, "output_hosts is empty"},
		{"an output host with a path", func(m map[string]any) { ups(m)["output_hosts"] = []any{"cdn.example/x"} }, `output host "cdn.example/x" is not`},
		{"an output host with a bad port", func(m map[string]any) { ups(m)["output_hosts"] = []any{"cdn.example:99999"} }, `output host "cdn.example:99999" is not`},
		{"an output host wildcard in the middle", func(m map[string]any) { ups(m)["output_hosts"] = []any{"cdn.*.example"} }, `output host "cdn.*.example" is not`},
		{"a model that is no Replicate model", func(m map[string]any) {
			m["variants"].(map[string]any)["provider-a/zeta"] = []any{map[string]any{"upstream": "rep", "model": "just-a-name"}}
		}, `model "just-a-name" is not owner/name`},
	}
	for _, tt := range tests {
		_, err := parse(file(t, tt.edit))
		if err == nil || !strings.Contains(err.Error(), tt.says) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: Parse = %v, want one line saying %q", tt.name, err, tt.says)
		}
	}
	if _, err := parse(file(t, func(map[string]any) {})); err != nil {
		t.Errorf("a valid file: %v", err)
	}
	withPorts := func(m map[string]any) {
		ups(m)["output_hosts"] = []any{"files.example:8443", "*.example.net:443", "[::1]:9000"}
	}
	if _, err := parse(file(t, withPorts)); err != nil {
		t.Errorf("output hosts with ports: %v", err)
	}
}

func TestTheDefaultFileRoutesEveryVariantToTheSimulator(t *testing.T) {
	c := Default()
	if !c.UsesBuiltin() {
		t.Fatal("the default file does not use the built-in simulator")
	}
	c.Bind("http://127.0.0.1:1", "http://127.0.0.1:1/fal", "127.0.0.2:2")
	for _, v := range catalog.All() {
		routes := c.Routes(v.Model, v.Version)
		if len(routes) == 0 || c.Upstreams[routes[0].Upstream].BaseURL != "http://127.0.0.1:1" {
			t.Errorf("%s/%s: routes %+v", v.Model, v.Version, routes)
		}
	}
	if !reflect.DeepEqual(c.OutputHosts(), []string{"127.0.0.2:2"}) {
		t.Errorf("output hosts = %v, want the simulator's files host", c.OutputHosts())
	}
}

func TestInputsAreTypedByTheRouteThenTheSchema(t *testing.T) {
	zetaPro, _ := catalog.Lookup("provider-a", "zeta-pro")
	theta, _ := catalog.Lookup("provider-a", "theta-4-fast")
	beta, _ := catalog.Lookup("provider-b", "beta-2")
	tests := []struct {
		name     string
		route    Route
		v        catalog.Variant
		resolved map[string]any
		count    int
		schema   map[string]string
		want     map[string]any
		jobs     int
	}{
		{"schema types", Route{Model: "o/m"}, beta, map[string]any{"prompt": "p", "seconds": "8", "aspect_ratio": "landscape"}, 1,
			map[string]string{"seconds": "integer", "aspect_ratio": "string"},
			map[string]any{"prompt": "p", "seconds": int64(8), "aspect_ratio": "landscape"}, 1},
		{"route types, renames and constants win", Route{Model: "o/m", Rename: map[string]string{"seconds": "duration"},
			Types: map[string]string{"duration": "number"}, Set: map[string]any{"fps": 24}}, beta,
			map[string]any{"prompt": "p", "seconds": "4"}, 1, map[string]string{"duration": "integer"},
			map[string]any{"prompt": "p", "duration": 4.0, "fps": 24}, 1},
		{"untyped fields go as sent", Route{Model: "o/m"}, beta, map[string]any{"prompt": "p", "seconds": "4"}, 1, nil,
			map[string]any{"prompt": "p", "seconds": "4"}, 1},
		{"the model's own count field", Route{Model: "o/m"}, zetaPro, map[string]any{"prompt": "p", "num_images": "3"}, 3,
			map[string]string{"num_images": "integer"}, map[string]any{"prompt": "p", "num_images": int64(3)}, 1},
		{"a count the schema names", Route{Model: "o/m"}, theta, map[string]any{"prompt": "p"}, 2,
			map[string]string{"num_outputs": "integer"}, map[string]any{"prompt": "p", "num_outputs": int64(2)}, 1},
		{"a count the route names", Route{Model: "o/m", Rename: map[string]string{"image_count": "n"}}, theta, map[string]any{"prompt": "p"}, 2,
			nil, map[string]any{"prompt": "p", "n": 2}, 1},
		{"no count: one job per image", Route{Model: "o/m"}, theta, map[string]any{"prompt": "p"}, 3, map[string]string{},
			map[string]any{"prompt": "p"}, 3},
	}
	for _, tt := range tests {
		plan, err := tt.route.Input(tt.v, tt.resolved, tt.count, tt.schema)
		if err != nil || !reflect.DeepEqual(plan.Input, tt.want) || plan.Jobs != tt.jobs {
			t.Errorf("%s: Input = %#v (%d jobs), %v; want %#v (%d jobs)", tt.name, plan.Input, plan.Jobs, err, tt.want, tt.jobs)
		}
	}
	_, err := Route{Model: "o/m", Types: map[string]string{"aspect_ratio": "integer"}}.Input(beta,
		map[string]any{"prompt": "p", "aspect_ratio": "landscape"}, 1, nil)
	var conv *ConvertError
	if !errors.As(err, &conv) || conv.Field != "aspect_ratio" {
		t.Errorf("a value the type cannot hold = %v, want a ConvertError naming aspect_ratio", err)
	}
}
