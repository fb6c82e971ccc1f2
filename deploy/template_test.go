package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	apiroutes "github.com/mediagen-dev/mediagen/internal/api/routes"
	"github.com/mediagen-dev/mediagen/internal/aws/lambdawiring"
)

// The functions of the service: logical ID in template.yaml and folder
// under functions/ (each main.go runs lambdawiring.Build("<folder>",
// lambdawiring.<Constructor>)), from the Lambda wiring's registry.
var functions = func() []struct{ ID, Folder string } {
	var out []struct{ ID, Folder string }
	for _, folder := range lambdawiring.FunctionNames() {
		out = append(out, struct{ ID, Folder string }{apiroutes.LogicalID(folder), folder})
	}
	return out
}()

// The routes of the API (routes.Table, the one list of them) and the
// logical ID of the function behind each.
var routes = func() []struct{ Method, Path, Function string } {
	var out []struct{ Method, Path, Function string }
	for _, r := range apiroutes.Table() {
		out = append(out, struct{ Method, Path, Function string }{r.Method, r.Path, r.LogicalID()})
	}
	return out
}()

// publicRoutes need no credentials: their events say Auth: {Authorizer: NONE}.
// The provider's callback proves itself with its signature instead.
var publicRoutes = func() []string {
	var out []string
	for _, r := range apiroutes.Table() {
		if r.Auth == apiroutes.Public {
			out = append(out, r.Key())
		}
	}
	return out
}()

var (
	loadOnce sync.Once
	loaded   *Template
	loadErr  error
)

// tmpl is ../template.yaml, parsed once.
// ofType is the logical IDs of the template's resources of the given
// types, sorted.
func ofType(tpl *Template, types ...string) []string {
	var ids []string
	for name, r := range tpl.Resources {
		if slices.Contains(types, r.Type) {
			ids = append(ids, name)
		}
	}
	slices.Sort(ids)
	return ids
}

func tmpl(t *testing.T) *Template {
	t.Helper()
	loadOnce.Do(func() { loaded, loadErr = Load("../template.yaml") })
	if loadErr != nil {
		t.Fatalf("template.yaml does not load: %v", loadErr)
	}
	return loaded
}

// resource is the named resource, which must exist with the given type.
func resource(t *testing.T, name, typ string) Resource {
	t.Helper()
	r, ok := tmpl(t).Resources[name]
	if !ok {
		t.Fatalf("template.yaml has no resource %s (%s)", name, typ)
	}
	if r.Type != typ {
		t.Fatalf("%s: Type is %s, want %s", name, r.Type, typ)
	}
	return r
}

var (
	readsMu sync.Mutex
	readsOf = map[string][]string{}
)

// reads is what lambdawiring.ReadsEnvironment learns the function reads, computed
// once per folder.
func reads(t *testing.T, folder string) []string {
	t.Helper()
	readsMu.Lock()
	defer readsMu.Unlock()
	if vars, ok := readsOf[folder]; ok {
		return vars
	}
	t.Setenv("AWS_REGION", "us-east-1")
	vars, err := lambdawiring.ReadsEnvironment(context.Background(), folder)
	if err != nil {
		t.Fatalf("functions/%s does not build with a full environment: %v", folder, err)
	}
	readsOf[folder] = vars
	return vars
}

// show renders a template value for a message.
func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// walk visits every map inside v, with its path.
func walk(v any, path string, visit func(path string, m map[string]any)) {
	switch x := v.(type) {
	case map[string]any:
		visit(path, x)
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			walk(x[k], path+"."+k, visit)
		}
	case []any:
		for i, val := range x {
			walk(val, fmt.Sprintf("%s[%d]", path, i), visit)
		}
	}
}

// ref returns X of {"Ref": X}.
func ref(v any) (string, bool) {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return "", false
	}
	s, ok := m["Ref"].(string)
	return s, ok
}

// getAtt returns X and A of {"Fn::GetAtt": [X, A]}.
func getAtt(v any) (string, string, bool) {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return "", "", false
	}
	l, ok := m["Fn::GetAtt"].([]any)
	if !ok || len(l) != 2 {
		return "", "", false
	}
	res, _ := l[0].(string)
	attr, _ := l[1].(string)
	return res, attr, res != "" && attr != ""
}

// sub returns the text and variables of {"Fn::Sub": text} or
// {"Fn::Sub": [text, {vars}]}.
func sub(v any) (string, map[string]any, bool) {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return "", nil, false
	}
	switch s := m["Fn::Sub"].(type) {
	case string:
		return s, nil, true
	case []any:
		if len(s) == 2 {
			text, _ := s[0].(string)
			vars, _ := s[1].(map[string]any)
			return text, vars, true
		}
	}
	return "", nil, false
}

var subVar = regexp.MustCompile(`\$\{([^}]*)\}`)

// placeholders lists the ${...} of a Sub text, without ${!literals}.
func placeholders(text string) []string {
	var out []string
	for _, m := range subVar.FindAllStringSubmatch(text, -1) {
		if !strings.HasPrefix(m[1], "!") {
			out = append(out, m[1])
		}
	}
	return out
}

var pseudoParameters = []string{
	"AWS::AccountId", "AWS::NotificationARNs", "AWS::NoValue", "AWS::Partition", "AWS::Region",
	"AWS::StackId", "AWS::StackName", "AWS::URLSuffix",
}

// attributes lists the Fn::GetAtt attributes of the resource types the
// template uses (CloudFormation and SAM references).
var attributes = map[string][]string{
	"AWS::Serverless::Function":            {"Arn"},
	"AWS::Serverless::StateMachine":        {"Arn", "Name"},
	"AWS::Serverless::HttpApi":             {"ApiEndpoint"},
	"AWS::SQS::Queue":                      {"Arn", "QueueName", "QueueUrl"},
	"AWS::DynamoDB::Table":                 {"Arn", "StreamArn"},
	"AWS::S3::Bucket":                      {"Arn", "DomainName", "DualStackDomainName", "RegionalDomainName", "WebsiteURL"},
	"AWS::Logs::LogGroup":                  {"Arn"},
	"AWS::CloudFront::Distribution":        {"DomainName", "Id"},
	"AWS::CloudFront::OriginAccessControl": {"Id"},
	"AWS::SecretsManager::Secret":          {"Id"},
	"AWS::Lambda::Url":                     {"FunctionArn", "FunctionUrl"},
}

func TestEveryReferenceNamesSomethingThatExists(t *testing.T) {
	tpl := tmpl(t)
	usedParams, usedConds, usedMaps := map[string]bool{}, map[string]bool{}, map[string]bool{}
	named := func(where, name string) {
		if _, ok := tpl.Parameters[name]; ok {
			usedParams[name] = true
			return
		}
		if _, ok := tpl.Resources[name]; ok || slices.Contains(pseudoParameters, name) {
			return
		}
		t.Errorf("%s: %s is neither a parameter, a resource of the template nor a pseudo parameter", where, name)
	}
	attribute := func(where, res, attr string) {
		r, ok := tpl.Resources[res]
		if !ok {
			t.Errorf("%s: Fn::GetAtt %s.%s: no resource %s in the template", where, res, attr, res)
			return
		}
		known, ok := attributes[r.Type]
		if !ok {
			t.Errorf("%s: Fn::GetAtt %s.%s: the test does not know the attributes of %s; add them to attributes", where, res, attr, r.Type)
			return
		}
		if !slices.Contains(known, attr) {
			t.Errorf("%s: Fn::GetAtt %s.%s: a %s has no attribute %s (it has %v)", where, res, attr, r.Type, attr, known)
		}
	}
	check := func(where string, v any) {
		walk(v, where, func(path string, m map[string]any) {
			if name, ok := ref(m); ok {
				named(path, name)
			}
			if res, attr, ok := getAtt(m); ok {
				attribute(path, res, attr)
			} else if _, ok := m["Fn::GetAtt"]; ok {
				t.Errorf("%s: Fn::GetAtt %s is not [resource, attribute]", path, show(m["Fn::GetAtt"]))
			}
			if text, vars, ok := sub(m); ok {
				for _, ph := range placeholders(text) {
					if _, ok := vars[ph]; ok {
						continue
					}
					if res, attr, dotted := strings.Cut(ph, "."); dotted && !strings.HasPrefix(ph, "AWS::") {
						attribute(path+" (Fn::Sub ${"+ph+"})", res, attr)
						continue
					}
					named(path, ph)
				}
				for k := range vars {
					if !slices.Contains(placeholders(text), k) {
						t.Errorf("%s: Fn::Sub variable %s is not used in %q", path, k, text)
					}
				}
			} else if _, ok := m["Fn::Sub"]; ok {
				t.Errorf("%s: Fn::Sub %s is neither a string nor [string, {variables}]", path, show(m["Fn::Sub"]))
			}
			if args, ok := m["Fn::FindInMap"].([]any); ok {
				mapName, _ := args[0].(string)
				top, _ := args[1].(string)
				key, _ := args[2].(string)
				entry, _ := tpl.Mappings[mapName].(map[string]any)
				second, _ := entry[top].(map[string]any)
				if _, ok := second[key]; !ok || len(args) != 3 {
					t.Errorf("%s: Fn::FindInMap %s names no entry of Mappings", path, show(args))
				}
				usedMaps[mapName] = true
			}
			if name, ok := m["Condition"].(string); ok && len(m) == 1 {
				if _, ok := tpl.Conditions[name]; !ok {
					t.Errorf("%s: Condition %s is not in Conditions", path, name)
				}
				usedConds[name] = true
			}
			if cond, ok := m["Fn::If"].([]any); ok {
				name, _ := cond[0].(string)
				if _, ok := tpl.Conditions[name]; !ok || len(cond) != 3 {
					t.Errorf("%s: Fn::If %s: no condition %q in Conditions, or not [condition, then, else]", path, show(cond), name)
				}
				usedConds[name] = true
			}
		})
	}
	names := make([]string, 0, len(tpl.Resources))
	for name := range tpl.Resources {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		r := tpl.Resources[name]
		check(name+".Properties", r.Declared)
		check(name+".Metadata", r.Metadata)
		if r.Condition != "" {
			if _, ok := tpl.Conditions[r.Condition]; !ok {
				t.Errorf("%s: Condition %s is not in Conditions", name, r.Condition)
			}
			usedConds[r.Condition] = true
		}
	}
	check("Globals", tpl.Globals)
	check("Conditions", tpl.Conditions)
	check("Outputs", tpl.Outputs)
	for name := range tpl.Parameters {
		if !usedParams[name] {
			t.Errorf("Parameters.%s is never used (a parameter nobody reads only confuses sam deploy --guided)", name)
		}
	}
	for name := range tpl.Mappings {
		if !usedMaps[name] {
			t.Errorf("Mappings.%s is never used", name)
		}
	}
	for name := range tpl.Conditions {
		if !usedConds[name] {
			t.Errorf("Conditions.%s is never used", name)
		}
	}
}

func TestEveryFunctionFolderIsInTheTemplateAndBack(t *testing.T) {
	tpl := tmpl(t)
	want := map[string]string{}
	for _, f := range functions {
		want[f.ID] = f.Folder
	}
	for name, r := range tpl.Resources {
		if r.Type == "AWS::Serverless::Function" || r.Type == "AWS::Lambda::Function" {
			if _, ok := want[name]; !ok {
				t.Errorf("%s: a function the test does not know; add it to functions (with its folder under functions/)", name)
			}
		}
	}
	for _, f := range functions {
		if r, ok := tpl.Resources[f.ID]; !ok || r.Type != "AWS::Serverless::Function" {
			t.Errorf("functions/%s has no AWS::Serverless::Function %s in template.yaml", f.Folder, f.ID)
		}
	}
	entries, err := os.ReadDir("../functions")
	if err != nil {
		t.Fatal(err)
	}
	var folders []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		folders = append(folders, e.Name())
		if !slices.ContainsFunc(functions, func(f struct{ ID, Folder string }) bool { return f.Folder == e.Name() }) {
			t.Errorf("functions/%s is not deployed: no function of template.yaml builds it", e.Name())
		}
	}
	for _, f := range functions {
		if !slices.Contains(folders, f.Folder) {
			t.Errorf("%s builds functions/%s, which does not exist", f.ID, f.Folder)
		}
	}
	if !slices.Equal(sortedFolders(), lambdawiring.FunctionNames()) {
		t.Errorf("the functions deployed %v are not the handlers of lambdawiring.Functions() %v", sortedFolders(), lambdawiring.FunctionNames())
	}
}

// constructorName is the package name (lambdawiring or storewiring) and
// the name of a constructor.
func constructorName(c lambdawiring.Constructor) (pkg, name string) {
	if c == nil {
		return "lambdawiring", "<none>"
	}
	full := runtime.FuncForPC(reflect.ValueOf(c).Pointer()).Name()
	dot := strings.LastIndex(full, ".")
	return full[strings.LastIndex(full[:dot], "/")+1 : dot], full[dot+1:]
}

func sortedFolders() []string {
	var out []string
	for _, f := range functions {
		out = append(out, f.Folder)
	}
	sort.Strings(out)
	return out
}

// TestEveryFunctionBuildsFromItsFolder: each function is built by SAM
// through the Makefile (CodeUri ".", BuildMethod makefile), and the target
// SAM runs, build-<LogicalId>, builds a linux/arm64 bootstrap from
// ./functions/<folder>, whose main.go runs that folder's handler.
func TestEveryFunctionBuildsFromItsFolder(t *testing.T) {
	makeBin, err := exec.LookPath("make")
	if err != nil {
		t.Fatalf("make is needed: sam build runs the Makefile's build-<LogicalId> targets (%v)", err)
	}
	for _, f := range functions {
		t.Run(f.ID, func(t *testing.T) {
			r := resource(t, f.ID, "AWS::Serverless::Function")
			if r.Properties["CodeUri"] != "." {
				t.Errorf("%s: CodeUri is %s; want \".\" (the module root, so SAM's build cache sees internal/)", f.ID, show(r.Properties["CodeUri"]))
			}
			if r.Metadata["BuildMethod"] != "makefile" {
				t.Errorf("%s: Metadata.BuildMethod is %s; want makefile", f.ID, show(r.Metadata["BuildMethod"]))
			}
			main, err := os.ReadFile(filepath.Join("..", "functions", f.Folder, "main.go"))
			if err != nil {
				t.Fatalf("%s: functions/%s has no main.go: %v", f.ID, f.Folder, err)
			}
			// main.go calls its constructor by name (so the binary links only
			// that function's code), from the package that defines it
			// (storewiring for the functions that use only DynamoDB, so they
			// link no other AWS client), and it is the one the registry names.
			m := regexp.MustCompile(`(\w+)\.Build\("` + regexp.QuoteMeta(f.Folder) + `",\s*(\w+)\.(\w+)\)`).FindSubmatch(main)
			pkg, want := constructorName(lambdawiring.Functions()[f.Folder])
			if m == nil || string(m[1]) != string(m[2]) {
				t.Errorf("functions/%s/main.go does not run %s.Build(%q, %s.<Constructor>)", f.Folder, pkg, f.Folder, pkg)
			} else if got := string(m[2]) + "." + string(m[3]); got != pkg+"."+want {
				t.Errorf("functions/%s/main.go builds %s; lambdawiring.Functions() names %s.%s", f.Folder, got, pkg, want)
			}
			artifacts := "/ARTIFACTS/" + f.ID
			out, err := exec.Command(makeBin, "-s", "-n", "-C", "..", "build-"+f.ID, "ARTIFACTS_DIR="+artifacts).CombinedOutput()
			if err != nil {
				t.Fatalf("Makefile: `make build-%s` (what sam build runs for %s) fails: %v\n%s", f.ID, f.ID, err, out)
			}
			cmd := strings.TrimSpace(string(out))
			for _, want := range []string{"GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0", "-tags lambda.norpc",
				" build ", "-o " + artifacts + "/bootstrap ./functions/" + f.Folder} {
				if !strings.Contains(cmd, want) {
					t.Errorf("Makefile: build-%s runs %q, which lacks %q", f.ID, cmd, want)
				}
			}
			if n := strings.Count(cmd, "./functions/"); n != 1 {
				t.Errorf("Makefile: build-%s builds %d function folders: %q", f.ID, n, cmd)
			}
		})
	}
}

func TestEveryRouteOfTheSpecReachesItsFunction(t *testing.T) {
	tpl := tmpl(t)
	resource(t, "HttpApi", "AWS::Serverless::HttpApi")
	found := map[string]string{} // "METHOD path" -> function
	for _, f := range functions {
		r := tpl.Resources[f.ID]
		events, _ := r.Properties["Events"].(map[string]any)
		for ename, e := range events {
			em, _ := e.(map[string]any)
			where := fmt.Sprintf("%s.Events.%s", f.ID, ename)
			if em["Type"] == "Api" {
				t.Errorf("%s: a REST API event; the service is an HTTP API (Type HttpApi)", where)
			}
			if em["Type"] != "HttpApi" {
				continue
			}
			p, _ := em["Properties"].(map[string]any)
			if api, ok := ref(p["ApiId"]); !ok || api != "HttpApi" {
				t.Errorf("%s: ApiId is %s, want !Ref HttpApi (else SAM makes a second, implicit API)", where, show(p["ApiId"]))
			}
			if v, ok := p["PayloadFormatVersion"]; ok && v != "2.0" {
				t.Errorf("%s: PayloadFormatVersion %s; the handlers read API Gateway v2 (2.0) events", where, show(v))
			}
			key := fmt.Sprintf("%s %s", p["Method"], p["Path"])
			auth, hasAuth := p["Auth"]
			switch public := slices.Contains(publicRoutes, key); {
			case public && show(auth) != `{"Authorizer":"NONE"}`:
				t.Errorf("%s: public route %s has Auth %s, want {Authorizer: NONE}", where, key, show(auth))
			case !public && hasAuth:
				t.Errorf("%s: Auth %s overrides the API's default authorizer; every route but %v needs it", where, show(auth), publicRoutes)
			}
			if prev, dup := found[key]; dup {
				t.Errorf("%s: route %s is also %s's", where, key, prev)
			}
			found[key] = f.ID
		}
	}
	for _, rt := range routes {
		key := rt.Method + " " + rt.Path
		if got, ok := found[key]; !ok {
			t.Errorf("route %s of routes.Table is not in template.yaml (want an HttpApi event on %s)", key, rt.Function)
		} else if got != rt.Function {
			t.Errorf("route %s reaches %s, want %s", key, got, rt.Function)
		}
		delete(found, key)
	}
	for key, fn := range found {
		t.Errorf("%s: route %s is not in routes.Table (internal/api/routes)", fn, key)
	}
}

// A function's Timeout is its own, else the Globals', else Lambda's 3 s.
func TestFunctionTimeoutFallsBackToGlobalsThenLambdasDefault(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       time.Duration
		fails      bool
	}{
		{"own", "Globals: {Function: {Timeout: 29}}\nResources: {F: {Type: AWS::Serverless::Function, Properties: {Timeout: 150}}}", 150 * time.Second, false},
		{"Globals", "Globals: {Function: {Timeout: 29}}\nResources: {F: {Type: AWS::Serverless::Function, Properties: {}}}", 29 * time.Second, false},
		{"Lambda's default", "Resources: {F: {Type: AWS::Serverless::Function, Properties: {}}}", 3 * time.Second, false},
		{"not a function", "Resources: {F: {Type: AWS::SQS::Queue, Properties: {}}}", 0, true},
		{"not a number", "Resources: {F: {Type: AWS::Serverless::Function, Properties: {Timeout: !Ref T}}}", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := Parse([]byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			tpl, err := FromDocument(doc)
			if err != nil {
				t.Fatal(err)
			}
			got, err := tpl.FunctionTimeout("F")
			if (err != nil) != tt.fails || got != tt.want {
				t.Errorf("FunctionTimeout = %s, %v; want %s (an error: %v)", got, err, tt.want, tt.fails)
			}
		})
	}
}
