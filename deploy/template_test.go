package deploy

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/mediagen-dev/mediagen/shared/prod"
	"github.com/mediagen-dev/mediagen/shared/store/dynamostore"
	"github.com/mediagen-dev/mediagen/statemachines"
)

func load(t *testing.T) *Template {
	t.Helper()
	tpl, err := Load("../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

// functionFolders maps each function resource to its folder under
// functions/, read from its Makefile build target.
func functionFolders(t *testing.T, tpl *Template) map[string]string {
	t.Helper()
	mk, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for name, r := range tpl.Resources {
		if r.Type != "AWS::Serverless::Function" {
			continue
		}
		m := regexp.MustCompile(`\b` + name + `=([a-z0-9-]+)`).FindSubmatch(mk)
		if m == nil {
			t.Errorf("%s: the Makefile's FUNCTIONS list has no %s=<folder> for its build-%s target", name, name, name)
			continue
		}
		out[name] = string(m[1])
	}
	return out
}

func walk(v any, visit func(map[string]any)) {
	switch x := v.(type) {
	case map[string]any:
		visit(x)
		for _, val := range x {
			walk(val, visit)
		}
	case []any:
		for _, val := range x {
			walk(val, visit)
		}
	}
}

var pseudo = []string{"AWS::Region", "AWS::StackName", "AWS::AccountId", "AWS::URLSuffix", "AWS::Partition", "AWS::NoValue", "AWS::StackId", "AWS::NotificationARNs"}

func TestEveryReferenceNamesSomethingThatExists(t *testing.T) {
	tpl := load(t)
	exists := func(name string) bool {
		_, res := tpl.Resources[name]
		_, par := tpl.Parameters[name]
		return res || par || slices.Contains(pseudo, name)
	}
	check := func(where string, v any) {
		walk(v, func(m map[string]any) {
			if ref, ok := m["Ref"].(string); ok && !exists(ref) {
				t.Errorf("%s: Ref %s names nothing", where, ref)
			}
			if ga, ok := m["Fn::GetAtt"].([]any); ok {
				if name, _ := ga[0].(string); tpl.Resources[name].Type == "" {
					t.Errorf("%s: GetAtt %v names no resource", where, ga)
				}
			}
			if sub, ok := m["Fn::Sub"]; ok {
				text, vars := "", map[string]any{}
				switch s := sub.(type) {
				case string:
					text = s
				case []any:
					text, _ = s[0].(string)
					vars, _ = s[1].(map[string]any)
				}
				for _, ph := range regexp.MustCompile(`\$\{([^}!]+)\}`).FindAllStringSubmatch(text, -1) {
					name, _, _ := strings.Cut(ph[1], ".")
					if _, ok := vars[ph[1]]; !ok && !exists(name) {
						t.Errorf("%s: Sub ${%s} names nothing", where, ph[1])
					}
				}
			}
		})
	}
	for name, r := range tpl.Resources {
		check(name, r.Properties)
	}
	check("Outputs", tpl.Outputs)
	check("Globals", tpl.Globals)
}

func TestEveryRouteOfTheSpecReachesItsFunction(t *testing.T) {
	tpl := load(t)
	folders := functionFolders(t, tpl)
	routes := map[string]string{
		"POST /api/generations/generate":       "generate",
		"GET /api/generations/status/{id}":     "status",
		"POST /api/long-story/videos/estimate": "longstory-estimate",
		"POST /api/long-story/videos":          "longstory-create",
		"GET /api/long-story/videos/{videoId}": "longstory-status",
	}
	found := map[string]string{}
	for name, r := range tpl.Resources {
		events, _ := r.Properties["Events"].(map[string]any)
		for _, e := range events {
			em, _ := e.(map[string]any)
			if em["Type"] != "HttpApi" {
				continue
			}
			p, _ := em["Properties"].(map[string]any)
			if api, _ := p["ApiId"].(map[string]any); api["Ref"] != "HttpApi" {
				t.Errorf("%s: a route event not on the HttpApi", name)
			}
			found[fmt.Sprintf("%s %s", p["Method"], p["Path"])] = folders[name]
		}
	}
	for route, folder := range routes {
		if found[route] != folder {
			t.Errorf("route %s reaches %q, want functions/%s", route, found[route], folder)
		}
	}
	mk, _ := os.ReadFile("../Makefile")
	for name, folder := range folders {
		r := tpl.Resources[name]
		if r.Properties["CodeUri"] != "." || r.Metadata["BuildMethod"] != "makefile" {
			t.Errorf("%s: CodeUri %v, BuildMethod %v; want . and makefile", name, r.Properties["CodeUri"], r.Metadata["BuildMethod"])
		}
		if !strings.Contains(string(mk), "build-$(1):") {
			t.Errorf("the Makefile has no build-<LogicalId> target rule")
		}
		if _, err := os.Stat("../functions/" + folder + "/main.go"); err != nil {
			t.Errorf("%s builds functions/%s, which has no main.go", name, folder)
		}
	}
	entries, _ := os.ReadDir("../functions")
	for _, e := range entries {
		if !slices.Contains(mapsValues(folders), e.Name()) {
			t.Errorf("functions/%s is not in the template", e.Name())
		}
	}
	g := globalsOf(tpl.Globals, "Function")
	logging, _ := g["LoggingConfig"].(map[string]any)
	if g["Runtime"] != "provided.al2023" || fmt.Sprint(g["Architectures"]) != "[arm64]" || g["Handler"] != "bootstrap" ||
		logging["LogFormat"] != "JSON" || g["Tracing"] != "Active" {
		t.Errorf("Globals.Function = %v", g)
	}
	api := tpl.Resources["HttpApi"].Properties
	auth, _ := api["Auth"].(map[string]any)
	if auth["DefaultAuthorizer"] == nil || api["CorsConfiguration"] == nil || api["AccessLogSettings"] == nil || api["DefaultRouteSettings"] == nil {
		t.Errorf("HttpApi lacks the default authorizer, CORS, access logs or throttling: %v", api)
	}
}

func mapsValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

func envOf(r Resource) map[string]any {
	env, _ := r.Properties["Environment"].(map[string]any)
	vars, _ := env["Variables"].(map[string]any)
	return vars
}

func TestEveryVariableAFunctionReadsIsSet(t *testing.T) {
	tpl := load(t)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv(prod.EnvUpstreamToken, "x")
	for name, folder := range functionFolders(t, tpl) {
		read, err := prod.ReadsEnvironment(context.Background(), folder)
		if err != nil {
			t.Fatalf("%s: %v", folder, err)
		}
		vars := envOf(tpl.Resources[name])
		for _, v := range read {
			if _, ok := vars[v]; !ok && v != prod.EnvUpstreamToken {
				t.Errorf("%s reads %s, which the template does not set for it", name, v)
			}
		}
		if _, ok := vars[prod.EnvUpstreamToken]; ok {
			t.Errorf("%s: %s is for sam local only; the token lives in Secrets Manager", name, prod.EnvUpstreamToken)
		}
	}
}

func TestEveryWorkflowPlaceholderIsSubstitutedAndUsed(t *testing.T) {
	tpl := load(t)
	sm := tpl.Resources["LongStoryStateMachine"].Properties
	if sm["DefinitionUri"] != "statemachines/long-story.asl.json" {
		t.Errorf("DefinitionUri %v", sm["DefinitionUri"])
	}
	subs, _ := sm["DefinitionSubstitutions"].(map[string]any)
	used := map[string]bool{}
	for _, m := range regexp.MustCompile(`\$\{([A-Za-z0-9_]+)\}`).FindAllStringSubmatch(string(statemachines.LongStory), -1) {
		used[m[1]] = true
		if _, ok := subs[m[1]]; !ok {
			t.Errorf("placeholder ${%s} has no DefinitionSubstitution", m[1])
		}
	}
	for k := range subs {
		if !used[k] {
			t.Errorf("substitution %s is not used by the definition", k)
		}
	}
}

func TestQueuesHaveDeadLettersAndFitThePoller(t *testing.T) {
	tpl := load(t)
	dlqs := map[string]bool{}
	for _, r := range tpl.Resources {
		if rp, ok := r.Properties["RedrivePolicy"].(map[string]any); ok {
			if ga, ok := rp["deadLetterTargetArn"].(map[string]any)["Fn::GetAtt"].([]any); ok {
				dlqs[ga[0].(string)] = true
			}
		}
	}
	for name, r := range tpl.Resources {
		if r.Type == "AWS::SQS::Queue" && r.Properties["RedrivePolicy"] == nil && !dlqs[name] {
			t.Errorf("queue %s has no dead-letter queue", name)
		}
	}
	poller := tpl.Resources["PollerFunction"].Properties
	timeout, _ := poller["Timeout"].(int)
	if vis, _ := tpl.Resources["PollQueue"].Properties["VisibilityTimeout"].(int); vis < 6*timeout {
		t.Errorf("PollQueue visibility %d s is under 6 x the poller's %d s", vis, timeout)
	}
	ev, _ := poller["Events"].(map[string]any)["Polls"].(map[string]any)["Properties"].(map[string]any)
	if fmt.Sprint(ev["FunctionResponseTypes"]) != "[ReportBatchItemFailures]" {
		t.Errorf("the poller's SQS event does not report batch item failures: %v", ev)
	}
}

func TestTablesMatchTheStoresSchema(t *testing.T) {
	tpl := load(t)
	byName := map[string]Resource{}
	for _, r := range tpl.Resources {
		if r.Type == "AWS::DynamoDB::Table" {
			sub, _ := r.Properties["TableName"].(map[string]any)["Fn::Sub"].(string)
			byName[strings.ReplaceAll(sub, "${AWS::StackName}", "STACK")] = r
		}
	}
	for _, want := range dynamostore.Schema(dynamostore.TablesWithPrefix("STACK")) {
		name := aws.ToString(want.TableName)
		r, ok := byName[name]
		if !ok {
			t.Errorf("no table %s in the template", name)
			continue
		}
		p := r.Properties
		if p["BillingMode"] != "PAY_PER_REQUEST" || fmt.Sprint(p["PointInTimeRecoverySpecification"]) != "map[PointInTimeRecoveryEnabled:true]" {
			t.Errorf("%s: not on-demand with point-in-time recovery", name)
		}
		var keys, attrs, gsis []string
		for _, k := range want.KeySchema {
			keys = append(keys, fmt.Sprint(map[string]any{"AttributeName": aws.ToString(k.AttributeName), "KeyType": string(k.KeyType)}))
		}
		for _, a := range want.AttributeDefinitions {
			attrs = append(attrs, fmt.Sprint(map[string]any{"AttributeName": aws.ToString(a.AttributeName), "AttributeType": string(a.AttributeType)}))
		}
		for _, g := range want.GlobalSecondaryIndexes {
			var gk []any
			for _, k := range g.KeySchema {
				gk = append(gk, map[string]any{"AttributeName": aws.ToString(k.AttributeName), "KeyType": string(k.KeyType)})
			}
			gsis = append(gsis, fmt.Sprint(map[string]any{"IndexName": aws.ToString(g.IndexName), "KeySchema": gk,
				"Projection": map[string]any{"ProjectionType": string(g.Projection.ProjectionType)}}))
		}
		for what, pair := range map[string][2][]string{
			"KeySchema": {keys, stringsOf(p["KeySchema"])}, "AttributeDefinitions": {attrs, stringsOf(p["AttributeDefinitions"])},
			"GlobalSecondaryIndexes": {gsis, stringsOf(p["GlobalSecondaryIndexes"])},
		} {
			w, g := pair[0], pair[1]
			sort.Strings(w)
			sort.Strings(g)
			if !slices.Equal(w, g) {
				t.Errorf("%s %s = %v, the store's schema says %v", name, what, g, w)
			}
		}
	}
	if ttl := tpl.Resources["RateLimitsTable"].Properties["TimeToLiveSpecification"]; fmt.Sprint(ttl) != "map[AttributeName:expires_at Enabled:true]" {
		t.Errorf("rate-limit counters do not expire: %v", ttl)
	}
}

func stringsOf(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, x := range list {
		out = append(out, fmt.Sprint(x))
	}
	return out
}

// policyTargets lists, per SAM policy template, the resource parameter it
// takes and the service it grants.
var policyTargets = map[string][2]string{
	"DynamoDBCrudPolicy": {"TableName", "dynamodb"}, "DynamoDBReadPolicy": {"TableName", "dynamodb"},
	"SQSSendMessagePolicy": {"QueueName", "sqs"}, "S3WritePolicy": {"BucketName", "s3"}, "S3CrudPolicy": {"BucketName", "s3"},
	"S3ReadPolicy": {"BucketName", "s3"}, "AWSSecretsManagerGetSecretValuePolicy": {"SecretArn", "secretsmanager"},
	"StepFunctionsExecutionPolicy": {"StateMachineName", "states"}, "LambdaInvokePolicy": {"FunctionName", "lambda"},
}

func TestEveryFunctionsPoliciesCoverWhatItTouches(t *testing.T) {
	tpl := load(t)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv(prod.EnvUpstreamToken, "x")
	// What a variable says the function touches, and the resource it names.
	touches := map[string]string{
		"ACCOUNTS_TABLE": "AccountsTable", "API_KEYS_TABLE": "ApiKeysTable", "GENERATIONS_TABLE": "GenerationsTable",
		"LONG_VIDEOS_TABLE": "LongVideosTable", "RATE_LIMITS_TABLE": "RateLimitsTable", "COUNTERS_TABLE": "CountersTable",
		"POLL_QUEUE_URL": "PollQueue", "OUTPUT_BUCKET": "OutputBucket", "STATE_MACHINE_ARN": "LongStoryStateMachine",
		"UPSTREAM_TOKEN_SECRET_ARN": "UpstreamTokenSecret",
	}
	// Globals hand every function every table name; only the variables a
	// function's adapters read count.
	for name, folder := range functionFolders(t, tpl) {
		read, err := prod.ReadsEnvironment(context.Background(), folder)
		if err != nil {
			t.Fatal(err)
		}
		covered := map[string]bool{}
		policies, _ := tpl.Resources[name].Properties["Policies"].([]any)
		for _, p := range policies {
			pm, ok := p.(map[string]any)
			if !ok {
				continue
			}
			for tmpl, arg := range pm {
				target, ok := policyTargets[tmpl]
				if !ok {
					continue
				}
				walk(arg, func(m map[string]any) {
					if ref, ok := m["Ref"].(string); ok {
						covered[ref] = true
					}
					if ga, ok := m["Fn::GetAtt"].([]any); ok {
						covered[ga[0].(string)] = true
					}
				})
				_ = target
			}
		}
		for _, v := range read {
			res, ok := touches[v]
			if !ok || (v == "UPSTREAM_TOKEN_SECRET_ARN" && !slices.Contains(read, "UPSTREAM_BASE_URL")) {
				continue
			}
			if !covered[res] && !untouched(folder, v) {
				t.Errorf("%s reads %s but no policy grants it %s", name, v, res)
			}
		}
	}
}

// untouched: the store adapter reads every table name when it is built,
// but a function only calls the tables its use case touches; and finalize
// reads the bucket's name only to form the video's URL. These pairs are the
// ones no call of that function reaches.
func untouched(folder, variable string) bool {
	if folder == "longstory-finalize" && variable == "OUTPUT_BUCKET" {
		return true
	}
	used := map[string][]string{
		"authorizer":         {"ACCOUNTS_TABLE", "API_KEYS_TABLE"},
		"generate":           {"ACCOUNTS_TABLE", "API_KEYS_TABLE", "GENERATIONS_TABLE", "RATE_LIMITS_TABLE", "COUNTERS_TABLE"},
		"status":             {"ACCOUNTS_TABLE", "API_KEYS_TABLE", "GENERATIONS_TABLE", "RATE_LIMITS_TABLE"},
		"poller":             {"ACCOUNTS_TABLE", "GENERATIONS_TABLE"},
		"sweeper":            {"ACCOUNTS_TABLE", "GENERATIONS_TABLE", "LONG_VIDEOS_TABLE"},
		"longstory-estimate": {"ACCOUNTS_TABLE", "API_KEYS_TABLE", "RATE_LIMITS_TABLE"},
		"longstory-create":   {"ACCOUNTS_TABLE", "API_KEYS_TABLE", "LONG_VIDEOS_TABLE", "RATE_LIMITS_TABLE"},
		"longstory-status":   {"ACCOUNTS_TABLE", "API_KEYS_TABLE", "LONG_VIDEOS_TABLE", "RATE_LIMITS_TABLE"},
		"longstory-finalize": {"ACCOUNTS_TABLE", "LONG_VIDEOS_TABLE"},
		"longstory-fail":     {"ACCOUNTS_TABLE", "LONG_VIDEOS_TABLE"},
	}
	if !strings.HasSuffix(variable, "_TABLE") {
		return false
	}
	return !slices.Contains(used[folder], variable)
}

func TestAssembleHasTheFfmpegLayerItBuilds(t *testing.T) {
	tpl := load(t)
	layer := tpl.Resources["FfmpegLayer"]
	mk, _ := os.ReadFile("../Makefile")
	if layer.Type != "AWS::Serverless::LayerVersion" || layer.Metadata["BuildMethod"] != "makefile" ||
		!strings.Contains(string(mk), "\nbuild-FfmpegLayer:") || fmt.Sprint(layer.Properties["CompatibleArchitectures"]) != "[arm64]" {
		t.Errorf("FfmpegLayer = %+v; want an arm64 layer built by the Makefile's build-FfmpegLayer", layer)
	}
	assemble := tpl.Resources["AssembleFunction"].Properties
	if fmt.Sprint(assemble["Layers"]) != "[map[Ref:FfmpegLayer]]" {
		t.Errorf("AssembleFunction layers %v, want the FfmpegLayer", assemble["Layers"])
	}
	if env := envOf(tpl.Resources["AssembleFunction"]); env["FFMPEG_PATH"] != "/opt/bin/ffmpeg" || env["FFPROBE_PATH"] != "/opt/bin/ffprobe" {
		t.Errorf("AssembleFunction does not point ffmpeg at the layer: %v", env)
	}
}

func TestNoDataPlaneActionOnEveryResource(t *testing.T) {
	tpl := load(t)
	for name, r := range tpl.Resources {
		walk(r.Properties["Policies"], func(m map[string]any) {
			if m["Effect"] != "Allow" || fmt.Sprint(m["Resource"]) != "*" {
				return
			}
			for _, a := range strings.Fields(strings.Trim(fmt.Sprint(m["Action"]), "[]")) {
				if a != "polly:SynthesizeSpeech" { // Polly has no resource-level permission for it
					t.Errorf("%s: %s on every resource", name, a)
				}
			}
		})
	}
	b := tpl.Resources["OutputBucket"].Properties
	if fmt.Sprint(b["PublicAccessBlockConfiguration"]) != "map[BlockPublicAcls:true BlockPublicPolicy:true IgnorePublicAcls:true RestrictPublicBuckets:true]" || b["BucketEncryption"] == nil {
		t.Errorf("the output bucket is not private and encrypted: %v", b)
	}
}
