package runtime_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/local/runtime"
	"github.com/mediagen-dev/mediagen/internal/local/simulator"
)

// simTokenEnv names the variable the test routing files take the
// simulator's token from, as a real upstream's token_env would.
const simTokenEnv = "MEDIAGEN_TEST_SIMULATOR_TOKEN"

// routed starts a simulator on addresses of its own and a runtime whose
// routing file is made by routes from the simulator's faces: its Replicate
// face as the upstream "sim-replicate" (its base URL in the /v1 form), its
// fal face as "sim-fal". routes gives each variant's route list.
func routed(t *testing.T, cfg runtime.Config, routes func(v catalog.Variant, fal map[string]any, rep map[string]any) []any) (*runtime.Runtime, *runtime.Simulator) {
	t.Helper()
	sim, err := runtime.StartSimulator(runtime.SimulatorConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	t.Setenv(simTokenEnv, sim.Token)
	_, inputs, _ := runtime.SimulatorModels()
	file := map[string]any{
		"upstreams": map[string]any{
			"sim-replicate": map[string]any{"protocol": "replicate", "base_url": sim.BaseURL + "/v1", "token_env": simTokenEnv,
				"output_hosts": []string{"*.replicate.delivery", sim.FilesHost}},
			"sim-fal": map[string]any{"protocol": "fal", "base_url": sim.FalURL, "token_env": simTokenEnv,
				"output_hosts": []string{sim.FilesHost}, "jwks_url": sim.FalURL + "/.well-known/jwks.json"},
		},
	}
	variants := map[string]any{}
	for _, v := range catalog.All() {
		name := v.Model + "/" + v.Version
		rep := map[string]any{"upstream": "sim-replicate", "model": name}
		// fal publishes no schema the service reads: the route gives the
		// types, and names the image count field when the app has one.
		types := map[string]string{}
		for field, typ := range inputs[name] {
			if typ != "array" && typ != "string" {
				types[field] = typ
			}
		}
		fal := map[string]any{"upstream": "sim-fal", "model": name, "types": types}
		if _, ok := inputs[name]["num_outputs"]; ok {
			fal["rename"] = map[string]string{"image_count": "num_outputs"}
		}
		if v.Version == "beta-2" {
			fal["model"] = name + "/text-to-video" // an app id with a sub-path
		}
		variants[name] = routes(v, fal, rep)
	}
	file["variants"] = variants
	raw, err := json.MarshalIndent(file, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	cfg.RoutingFile = filepath.Join(t.TempDir(), "routing.json")
	cfg.UpstreamCAs = append(cfg.UpstreamCAs, sim.CA.Cert) // its files are on https, with its own CA
	if err := os.WriteFile(cfg.RoutingFile, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	rt := start(t, cfg)
	if rt.Simulator != nil {
		t.Error("the runtime started its built-in simulator although the routing file does not use it")
	}
	return rt, sim
}

// TestEveryVariantRunsOnTheReplicateAndFalFacesWithTypedInputs routes half
// the variants to the simulator's Replicate face and half to its fal face:
// every one completes, its files download from the service, the record and
// the status view name the upstream, the price is the variant's, and the
// simulator (which refuses a value of the wrong JSON type with 422, as
// real models do) received typed inputs. Models that take no image count
// ran one job per image.
func TestEveryVariantRunsOnTheReplicateAndFalFacesWithTypedInputs(t *testing.T) {
	onFal := func(v catalog.Variant) bool {
		return slices.IndexFunc(catalog.All(), func(o catalog.Variant) bool { return o.Version == v.Version })%2 == 1
	}
	rt, sim := routed(t, runtime.Config{}, func(v catalog.Variant, fal, rep map[string]any) []any {
		if onFal(v) {
			return []any{fal}
		}
		return []any{rep}
	})
	owner := newAccount(t, rt, domain.PlanEnterprise, 10000)
	dir := t.TempDir()
	for _, c := range variantCases {
		v, _ := catalog.Lookup(c.model, c.version)
		want := "sim-replicate"
		if onFal(v) {
			want = "sim-fal"
		}
		body := map[string]any{"model": c.model, "model_version": c.version, "input": c.input}
		if c.imageCount > 0 {
			body["image_count"] = c.imageCount
		}
		est := call(t, rt, http.MethodPost, "/api/generations/estimate", owner.APIKey, body)
		a := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, body)
		if a.status != http.StatusOK {
			t.Errorf("%s: generate: HTTP %d %s", c.version, a.status, a.body)
			continue
		}
		if got := a.str("upstream"); got != want {
			t.Errorf("%s: the record names upstream %q, want %q", c.version, got, want)
		}
		if a.str("credits_used") != est.str("credits") {
			t.Errorf("%s: charged %s, the estimate says %s: the route must not change the price", c.version, a.str("credits_used"), est.str("credits"))
		}
		s, ok := waitFinal(t, rt, owner.APIKey, a.str("uuid"), 2*time.Minute)
		if !ok || s.str("status") != "completed" || s.str("upstream") != want {
			t.Errorf("%s: ended %s on %q: %s", c.version, s.str("status"), s.str("upstream"), s.body)
			continue
		}
		outs, _ := s.decoded["output"].([]any)
		count := max(c.count, 1)
		if len(outs) != count {
			t.Errorf("%s: %d outputs, want %d", c.version, len(outs), count)
		}
		for i, o := range outs {
			if _, ok := download(t, o.(string), dir, c.version+"-"+string(rune('0'+i))); !ok {
				t.Errorf("%s: output %d does not download", c.version, i)
			}
		}
		jobs := sim.Predictions(c.model + "/" + c.version)
		wantJobs := 1
		if v.Version == "theta-4-fast" || v.Version == "iota-v3-turbo" {
			wantJobs = count // the model takes no count: one job per image
		}
		if len(jobs) != wantJobs {
			t.Errorf("%s: %d upstream jobs, want %d", c.version, len(jobs), wantJobs)
		}
		for _, p := range jobs {
			var in map[string]any
			json.Unmarshal(p.Input, &in)
			for _, field := range []string{"duration", "seconds", "n_frames", "fps", "num_images", "num_outputs"} {
				if val, ok := in[field]; ok {
					if _, isNumber := val.(float64); !isNumber {
						t.Errorf("%s: %s went upstream as %#v, want a JSON number", c.version, field, val)
					}
				}
			}
			if b, ok := in["generate_audio"]; ok {
				if _, isBool := b.(bool); !isBool {
					t.Errorf("%s: generate_audio went upstream as %#v, want a boolean", c.version, b)
				}
			}
		}
	}
}

// failoverRoutes puts theta-4-fast on the Replicate face first and the fal
// face second; every other variant on the Replicate face alone.
func failoverRoutes(v catalog.Variant, fal, rep map[string]any) []any {
	if v.Version == "theta-4-fast" {
		return []any{rep, fal}
	}
	return []any{rep}
}

const thetaModel = "provider-a/theta-4-fast"

func TestAGenerationWhoseFirstRouteAnswers503CompletesOnItsSecond(t *testing.T) {
	rt, sim := routed(t, runtime.Config{}, failoverRoutes)
	owner := newAccount(t, rt, domain.PlanEnterprise, 1000)
	sim.Inject(simulator.Fault{Face: simulator.FaceReplicate, Model: thetaModel, Status: http.StatusServiceUnavailable, Count: 100})
	a := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, imageBody("a lighthouse in fog"))
	if a.status != http.StatusOK || a.str("upstream") != "sim-fal" {
		t.Fatalf("generate: HTTP %d %s, want the record to name sim-fal", a.status, a.body)
	}
	s, ok := waitFinal(t, rt, owner.APIKey, a.str("uuid"), time.Minute)
	if !ok || s.str("status") != "completed" || s.str("upstream") != "sim-fal" {
		t.Fatalf("ended %s: %s, want completed on sim-fal", s.str("status"), s.body)
	}
	if n := sim.Jobs(thetaModel); n != 1 {
		t.Errorf("%d upstream jobs, want the one on the second route", n)
	}
	if acct := settledAccount(t, rt, owner.UserID); acct.Captured.String() != "2.6" {
		t.Errorf("captured %s credits, want theta-4-fast's 2.60 whichever route ran it", acct.Captured)
	}
}

// TestACreateThatMayHaveStartedIsNeitherRetriedNorFailedOver: a create
// answered 500 after the job started, or that times out after the body was
// sent, may have started a paid job. It is not sent again, nor to the
// second route: the job it started is found (by the generation id in its
// callback URL) and canceled, the generation fails and its hold is
// released.
func TestACreateThatMayHaveStartedIsNeitherRetriedNorFailedOver(t *testing.T) {
	tests := []struct {
		name  string
		fault simulator.Fault
	}{
		{"answered 500", simulator.Fault{Face: simulator.FaceReplicate, Model: thetaModel, Status: 500, AfterCreate: true}},
		{"times out after sending", simulator.Fault{Face: simulator.FaceReplicate, Model: thetaModel, Status: 200, AfterCreate: true, Hang: 5 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt, sim := routed(t, runtime.Config{UpstreamTimeout: time.Second}, failoverRoutes)
			owner := newAccount(t, rt, domain.PlanEnterprise, 1000)
			sim.Inject(tt.fault)
			a := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, imageBody("a paid job "+simulator.MarkerSlow))
			if a.status != http.StatusBadGateway || a.str("error", "code") != "upstream_unavailable" {
				t.Errorf("generate: HTTP %d %s, want 502 upstream_unavailable", a.status, a.body)
			}
			jobs := sim.Predictions(thetaModel)
			if len(jobs) != 1 {
				t.Fatalf("%d upstream jobs, want exactly the one the create started", len(jobs))
			}
			if jobs[0].Status != simulator.StatusCanceled {
				t.Errorf("the started job is %s, want canceled", jobs[0].Status)
			}
			list := call(t, rt, http.MethodGet, "/api/generations", owner.APIKey, nil)
			items, _ := list.decoded["data"].([]any)
			if len(items) != 1 || items[0].(map[string]any)["status"] != "failed" {
				t.Errorf("generations = %s, want one failed", list.body)
			}
			acct := account(t, rt, owner.UserID)
			if !acct.Held.IsZero() || !acct.Captured.IsZero() || acct.Balance.String() != "1000" {
				t.Errorf("balance %s held %s captured %s, want the hold released", acct.Balance, acct.Held, acct.Captured)
			}
		})
	}
}

// TestARefusalAboutTheInputIsNotFailedOver: a 422 from the first route's
// model is the provider's final word: the second route is not tried, the
// caller hears the provider's reason and pays nothing.
func TestARefusalAboutTheInputIsNotFailedOver(t *testing.T) {
	rt, sim := routed(t, runtime.Config{}, failoverRoutes)
	owner := newAccount(t, rt, domain.PlanEnterprise, 1000)
	sim.Inject(simulator.Fault{Face: simulator.FaceReplicate, Model: thetaModel, Status: http.StatusUnprocessableEntity})
	a := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, imageBody("refused"))
	if a.status != http.StatusBadGateway || a.str("error", "code") != "upstream_refused" || !strings.Contains(a.str("error", "message"), "simulated fault") {
		t.Errorf("generate: HTTP %d %s, want 502 upstream_refused with the provider's reason", a.status, a.body)
	}
	if n := sim.Jobs(thetaModel); n != 0 {
		t.Errorf("%d upstream jobs, want none (no failover after a 422)", n)
	}
	if acct := account(t, rt, owner.UserID); !acct.Held.IsZero() || acct.Balance.String() != "1000" {
		t.Errorf("balance %s held %s, want nothing charged", acct.Balance, acct.Held)
	}
}
