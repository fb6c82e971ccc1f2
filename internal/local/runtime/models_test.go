package runtime_test

import (
	"net/http"
	"testing"

	"github.com/mediagen-dev/mediagen/internal/core/catalog"
)

func TestModelsListsEveryVariantWithoutCredentials(t *testing.T) {
	rt := start(t, runtimeConfig())
	a := call(t, rt, http.MethodGet, "/api/models", "", nil)
	if a.status != http.StatusOK {
		t.Fatalf("GET /api/models without a key: HTTP %d %s", a.status, a.body)
	}
	if a.header.Get("X-RateLimit-Limit") != "" {
		t.Errorf("a public route counted against an account: %v", a.header)
	}
	models, _ := a.decoded["models"].([]any)
	all := catalog.All()
	if len(models) != len(all) {
		t.Fatalf("%d models listed, the catalog has %d", len(models), len(all))
	}
	for i, raw := range models {
		m := raw.(map[string]any)
		v := all[i]
		if m["model"] != v.Model || m["version"] != v.Version || m["kind"] != string(v.Kind) {
			t.Errorf("models[%d] = %v %v %v, want %s %s %s", i, m["model"], m["version"], m["kind"], v.Model, v.Version, v.Kind)
		}
		schema, _ := m["input_schema"].(map[string]any)
		props, _ := schema["properties"].(map[string]any)
		if schema["additionalProperties"] != false || len(props) != len(v.Fields) {
			t.Errorf("%s: input_schema %v does not describe its %d fields", v.Version, schema, len(v.Fields))
		}
		// The time-left a client shows rests on the variant's typical duration.
		if want := v.TypicalDuration().Seconds(); m["typical_seconds"] != want || want <= 0 {
			t.Errorf("%s: typical_seconds %v, want the catalog's %v", v.Version, m["typical_seconds"], want)
		}
		price, _ := m["price"].(map[string]any)
		if price["credits_per_unit"] == nil || price["unit"] == nil {
			t.Errorf("%s: price %v", v.Version, price)
		}
	}
	// beta-2 is 0.10 USD a second: 13.00 credits with the 30 % margin.
	beta2 := models[2].(map[string]any)["price"].(map[string]any)
	if beta2["basis"] != "per_second" || beta2["credits_per_unit"] != "13.00" || beta2["credits_at_defaults"] != nil {
		t.Errorf("beta-2 price %v, want 13.00 per second and no default price (seconds is required)", beta2)
	}
}
