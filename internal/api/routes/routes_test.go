package routes

import (
	"context"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"log/slog"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
	"gopkg.in/yaml.v3"

	"github.com/mediagen-dev/mediagen/api"

	"github.com/mediagen-dev/mediagen/internal/api/httpapi"
	"github.com/mediagen-dev/mediagen/internal/core/accounts"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/generation"
	"github.com/mediagen-dev/mediagen/internal/core/longform"
	"github.com/mediagen-dev/mediagen/internal/core/media"
	"github.com/mediagen-dev/mediagen/internal/core/pricing"
	"github.com/mediagen-dev/mediagen/internal/local/sqlitestore"
)

// The table names each route once, each function serves one route, and
// every route behind the authorizer names the scope a key needs (a public
// one none).
func TestTableNamesEachRouteOnceWithItsFunctionAndScope(t *testing.T) {
	keys, functions := map[string]bool{}, map[string]string{}
	for _, r := range Table() {
		if keys[r.Key()] {
			t.Errorf("route %s is listed twice", r.Key())
		}
		keys[r.Key()] = true
		if prev, ok := functions[r.Function]; ok {
			t.Errorf("functions/%s serves %s and %s: one function per route", r.Function, prev, r.Key())
		}
		functions[r.Function] = r.Key()
		if !strings.HasPrefix(r.Path, "/api/") || !slices.Contains([]string{http.MethodGet, http.MethodPost, http.MethodDelete}, r.Method) {
			t.Errorf("route %s: want GET, POST or DELETE on a path under /api/", r.Key())
		}
		switch {
		case r.Auth == Public && r.Scope != "":
			t.Errorf("public route %s names scope %q, which no one checks", r.Key(), r.Scope)
		case r.Auth == authorizer && !slices.Contains(domain.AllScopes, r.Scope):
			t.Errorf("route %s behind the authorizer names scope %q, not one of %v", r.Key(), r.Scope, domain.AllScopes)
		}
	}
}

func TestLogicalIDIsTheFolderInCamelCase(t *testing.T) {
	tests := []struct{ folder, id, name string }{
		{"generate", "GenerateFunction", "Generate"},
		{"open-api", "OpenApiFunction", "OpenAPI"},
		{"account-webhook-secret-rotate", "AccountWebhookSecretRotateFunction", "AccountWebhookSecretRotate"},
	}
	for _, tt := range tests {
		r := Route{Function: tt.folder}
		if got := LogicalID(tt.folder); got != tt.id || r.LogicalID() != tt.id {
			t.Errorf("LogicalID(%q) = %q, want %q", tt.folder, got, tt.id)
		}
		if got := r.Name(); got != tt.name {
			t.Errorf("Name of functions/%s = %q, want %q", tt.folder, got, tt.name)
		}
	}
}

// A function wired without a port its route uses fails to build, naming
// the port, instead of answering its first request with a panic; a route
// behind the authorizer uses the Gate.
func TestBuildRefusesPortsWithoutTheRoutesOwn(t *testing.T) {
	for _, r := range Table() {
		t.Run(r.Key(), func(t *testing.T) {
			if _, err := r.Build(fullPorts(t, nil)); err != nil {
				t.Fatalf("Build on every port: %v", err)
			}
			_, err := r.Build(Ports{})
			switch {
			case r.Key() == "GET /api/openapi.json":
				if err != nil {
					t.Errorf("the document uses no port: %v", err)
				}
			case !errors.Is(err, errMissingPort):
				t.Errorf("Build(Ports{}) = %v, want ErrMissingPort", err)
			}
			noGate := fullPorts(t, nil)
			noGate.Gate = nil
			if _, err := r.Build(noGate); (r.Auth == authorizer) != (errors.Is(err, errMissingPort) && strings.Contains(err.Error(), "Gate")) {
				t.Errorf("Build without the Gate = %v; a route behind the authorizer (%s: %s) must refuse it, naming it", err, r.Key(), r.Auth)
			}
		})
	}
}

// fullPorts fills every port; the gate's is st (a zero store when nil).
// The use cases are zero values: the tests here stop at the gate.
func fullPorts(t *testing.T, st *sqlitestore.Store) Ports {
	t.Helper()
	if st == nil {
		st = &sqlitestore.Store{}
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	return Ports{Gate: &httpapi.Gate{Store: st, Log: log}, Log: log, Prices: pricing.Default(),
		GenerationCreator: &generation.Creator{}, GenerationReader: &generation.Reader{}, GenerationEstimate: &generation.Estimator{},
		GenerationCanceler: &generation.Canceler{}, GenerationRemover: &generation.OutputRemover{}, UpstreamCallbacks: &generation.Callbacks{},
		VideoCreator: &longform.Creator{}, VideoReader: &longform.Reader{}, VideoCanceler: &longform.Canceler{}, VideoRegenerator: &longform.Regenerator{}, VideoRemover: &longform.OutputRemover{}, VoiceLister: &longform.VoiceLister{}, Uploads: &media.Uploads{},
		Secrets: st, Journal: st, Usage: st, KeyCreator: &accounts.KeyCreator{Store: st}, KeyLister: &accounts.KeyLister{Keys: st, Spend: st},
		KeyRevoker: &accounts.KeyRevoker{Store: st}, SecretRotator: &accounts.WebhookSecretRotator{Store: st},
		Streams: httpapi.Streams{Leases: st}}
}

// The scope the table names is the one the route's handler asks for: a key
// holding every other scope is refused 403 insufficient_scope, naming it.
func TestEachRouteRefusesAKeyWithoutTheTablesScope(t *testing.T) {
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	acct, err := (&accounts.Service{Store: st}).CreateAccount(ctx, accounts.NewAccount{Plan: domain.PlanEnterprise, Credits: decimal.NewFromInt(10), RateLimit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	ports := fullPorts(t, st)
	for _, r := range Table() {
		if r.Auth == Public {
			continue
		}
		t.Run(r.Key(), func(t *testing.T) {
			others := slices.DeleteFunc(slices.Clone(domain.AllScopes), func(s domain.Scope) bool { return s == r.Scope })
			_, plain, err := (&accounts.KeyCreator{Store: st}).Create(ctx, acct.UserID, domain.Caller{Scopes: domain.AllScopes},
				accounts.NewKey{Name: "without " + string(r.Scope), Scopes: others})
			if err != nil {
				t.Fatal(err)
			}
			h, err := r.Build(ports)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := h(ctx, httpapi.Request{RouteKey: r.Key(), Method: r.Method, Body: "{}",
				Headers:        map[string]string{"authorization": "Bearer " + plain, "content-type": "application/json"},
				PathParameters: map[string]string{"id": "1", "videoId": "v", "prefix": "p"}})
			if err != nil {
				t.Fatal(err)
			}
			var body struct {
				Error struct{ Code, Message string } `json:"error"`
			}
			json.Unmarshal([]byte(resp.Body), &body)
			if resp.StatusCode != http.StatusForbidden || body.Error.Code != "insufficient_scope" || !strings.Contains(body.Error.Message, string(r.Scope)) {
				t.Errorf("a key with %v answered %d %s; want 403 insufficient_scope naming %s", others, resp.StatusCode, resp.Body, r.Scope)
			}
		})
	}
}

// Both composition roots import the table, so it imports neither of them:
// no local package (the runtime imports the table) and no Lambda wiring
// (which imports the table).
func TestTableImportsNoCompositionRoot(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.Contains(dep, "/internal/local/") || strings.Contains(dep, "/internal/aws/lambdawiring") {
			t.Errorf("routes links %s", dep)
		}
	}
}

// api/openapi.yaml documents exactly the table's routes, and a route
// without credentials (security: []) exactly where the table says public;
// each missing or extra operation is named.
func TestOpenAPIDocumentsExactlyTheTablesRoutes(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]yaml.Node `yaml:"paths"`
	}
	if err := yaml.Unmarshal(api.OpenAPIYAML(), &doc); err != nil {
		t.Fatalf("openapi.yaml: %v", err)
	}
	documented := map[string]bool{} // route key -> public
	servers := map[string]bool{}    // route key -> its path names servers of its own
	for path, ops := range doc.Paths {
		_, ownServers := ops["servers"]
		for method, node := range ops {
			if !slices.Contains([]string{"get", "put", "post", "delete", "patch", "head", "options", "trace"}, method) {
				continue // parameters, summary, servers: not an operation
			}
			var op struct {
				Security *[]any `yaml:"security"`
			}
			if err := node.Decode(&op); err != nil {
				t.Fatalf("openapi.yaml %s %s: %v", method, path, err)
			}
			key := strings.ToUpper(method) + " " + path
			documented[key] = op.Security != nil && len(*op.Security) == 0
			servers[key] = ownServers
		}
	}
	for _, r := range Table() {
		public, ok := documented[r.Key()]
		switch {
		case !ok:
			t.Errorf("route %s (functions/%s) has no operation in api/openapi.yaml", r.Key(), r.Function)
		case public != (r.Auth == Public):
			t.Errorf("route %s: openapi.yaml says public %v, routes.Table says auth %s", r.Key(), public, r.Auth)
		case servers[r.Key()]:
			t.Errorf("route %s: openapi.yaml gives its path servers of its own; the HTTP API serves it", r.Key())
		}
		delete(documented, r.Key())
	}
	// The streams are served by the stream function's URL, not the HTTP
	// API: their paths name that server (the stack's StreamUrl output).
	for _, r := range StreamTable() {
		public, ok := documented[r.Key()]
		switch {
		case !ok:
			t.Errorf("stream route %s has no operation in api/openapi.yaml", r.Key())
		case public:
			t.Errorf("stream route %s: openapi.yaml says it is public; the function checks the API key", r.Key())
		case !servers[r.Key()]:
			t.Errorf("stream route %s: its path in openapi.yaml does not name the stream function's URL as its server", r.Key())
		}
		delete(documented, r.Key())
	}
	for key := range documented {
		t.Errorf("api/openapi.yaml documents %s, which is not in routes.Table nor routes.StreamTable", key)
	}
}

// Every route function of this package (Generate, Status, ...) is in
// Table, once: a route written but not listed would be deployed by its
// function yet mounted by no local runtime, metered by no meter and checked
// by no test.
func TestTableListsEveryRouteFunctionOnce(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "routes.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var declared, listed []string
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Recv != nil {
			continue
		}
		if fn.Name.Name == "Table" {
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if call, ok := n.(*ast.CallExpr); ok {
					if id, ok := call.Fun.(*ast.Ident); ok {
						listed = append(listed, id.Name)
					}
				}
				return true
			})
			continue
		}
		if fn.Type.Params.NumFields() != 0 || fn.Type.Results.NumFields() != 1 {
			continue
		}
		if id, ok := fn.Type.Results.List[0].Type.(*ast.Ident); ok && id.Name == "Route" {
			declared = append(declared, fn.Name.Name)
		}
	}
	for i, r := range Table() {
		if i < len(listed) && listed[i] != r.Name() {
			t.Errorf("Table's route %d, %s, is %s(); want it named %s, after its function's folder %s", i, r.Key(), listed[i], r.Name(), r.Function)
		}
	}
	slices.Sort(declared)
	slices.Sort(listed)
	if !slices.Equal(declared, listed) {
		t.Errorf("routes.go declares the routes %v; Table lists %v", declared, listed)
	}
}
