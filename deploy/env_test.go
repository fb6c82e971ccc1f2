package deploy

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mediagen-dev/mediagen/internal/aws/dynamostore"
	"github.com/mediagen-dev/mediagen/internal/aws/lambdawiring"
	"github.com/mediagen-dev/mediagen/internal/core/routing"
)

// localOnly are the variables the template declares empty for one reason:
// `sam local invoke --env-vars env.json` only overrides the variables a
// function declares, so these must be declared for env.json to reach the
// function (and mediagen-dev lambdas fills WEBHOOK_LOOPBACK_PORTS the same way).
// In AWS an empty value is inert (TestLocalOnlyVariablesAreInertInAWS);
// the provider token in particular is never in the template, only in
// Secrets Manager.
var localOnly = []string{
	lambdawiring.EnvUpstreamTokens, lambdawiring.EnvWebhookLoopbackPorts,
	"AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_S3",
	"AWS_REQUEST_CHECKSUM_CALCULATION", "AWS_RESPONSE_CHECKSUM_VALIDATION",
}

// setButNotRead are variables a function gets that lambdawiring.ReadsEnvironment
// cannot see, and who reads them.
var setButNotRead = map[string]map[string]string{
	"AssembleFunction": {
		"FFMPEG_PATH":  "internal/adapters/ffmpeg reads it (os.Getenv): the layer's /opt/bin is not on PATH",
		"FFPROBE_PATH": "internal/adapters/ffmpeg reads it (os.Getenv): the layer's /opt/bin is not on PATH",
	},
	// ffprobe checks a music_url given as a URL or an uploaded file before
	// any credit moves.
	"LongStoryCreateFunction": {
		"FFPROBE_PATH": "internal/adapters/ffmpeg reads it (os.Getenv): the layer's /opt/bin is not on PATH",
	},
}

// expectedValue is what each variable must be set to.
var expectedValue = map[string]any{
	"ACCOUNTS_TABLE":             map[string]any{"Ref": "AccountsTable"},
	"API_KEYS_TABLE":             map[string]any{"Ref": "ApiKeysTable"},
	"GENERATIONS_TABLE":          map[string]any{"Ref": "GenerationsTable"},
	"LONG_VIDEOS_TABLE":          map[string]any{"Ref": "LongVideosTable"},
	"RATE_LIMITS_TABLE":          map[string]any{"Ref": "RateLimitsTable"},
	"COUNTERS_TABLE":             map[string]any{"Ref": "CountersTable"},
	"IDEMPOTENCY_TABLE":          map[string]any{"Ref": "IdempotencyTable"},
	"LEDGER_TABLE":               map[string]any{"Ref": "LedgerTable"},
	"SLOTS_TABLE":                map[string]any{"Ref": "SlotsTable"},
	"POLL_QUEUE_URL":             map[string]any{"Ref": "PollQueue"}, // Ref of a queue is its URL
	"OUTPUT_BUCKET":              map[string]any{"Ref": "OutputBucket"},
	"MEDIA_BASE_URL":             map[string]any{"Fn::Sub": "https://${MediaDistribution.DomainName}"},
	"MEDIA_DISTRIBUTION_ID":      map[string]any{"Ref": "MediaDistribution"}, // Ref of a distribution is its id
	"ROUTING_FILE":               map[string]any{"Ref": "RoutingFile"},
	"UPSTREAM_TOKENS_SECRET_ARN": map[string]any{"Ref": "UpstreamTokenSecret"}, // Ref of a secret is its ARN
	"WEBHOOK_QUEUE_URL":          map[string]any{"Ref": "WebhookQueue"},
	// A parameter, not !Sub https://${HttpApi}...: the API's integrations
	// name the route functions (TestNoCircularDependency).
	"PUBLIC_BASE_URL":   map[string]any{"Ref": "PublicBaseUrl"},
	"STATE_MACHINE_ARN": map[string]any{"Ref": "LongStoryStateMachine"},
	"PRICE_FILE":        map[string]any{"Ref": "PriceFile"},
	"JWT_ISSUER":        map[string]any{"Ref": "JwtIssuer"},
	"JWT_AUDIENCE":      map[string]any{"Ref": "JwtAudience"},
	"JWKS_URL":          map[string]any{"Ref": "JwksUrl"},
	"FFMPEG_PATH":       "/opt/bin/ffmpeg",
	"FFPROBE_PATH":      "/opt/bin/ffprobe",
	// The layer's fonts (build-FfmpegLayer).
	"CAPTION_FONT_DIR": "/opt/fonts",
}

func variables(props map[string]any) map[string]any {
	env, _ := props["Environment"].(map[string]any)
	vars, _ := env["Variables"].(map[string]any)
	if vars == nil {
		return map[string]any{}
	}
	return vars
}

func globalVariables(tpl *Template) map[string]any {
	g, _ := tpl.Globals["Function"].(map[string]any)
	return variables(g)
}

func TestEveryVariableAFunctionReadsIsSet(t *testing.T) {
	tpl := tmpl(t)
	globals := globalVariables(tpl)
	readByAny := map[string]bool{}
	for _, f := range functions {
		r := resource(t, f.ID, "AWS::Serverless::Function")
		vars := variables(r.Properties)
		read := reads(t, f.Folder)
		for _, v := range read {
			readByAny[v] = true
			if _, ok := vars[v]; !ok {
				t.Errorf("%s reads %s (lambdawiring.ReadsEnvironment), which template.yaml does not set for it (Globals.Function or its Environment.Variables)", f.ID, v)
			}
		}
		for v, val := range vars {
			if slices.Contains(localOnly, v) {
				if val != "" {
					t.Errorf("%s: %s is %s; it may only be declared empty, for sam local invoke (the provider token lives in Secrets Manager: UpstreamTokenSecret)", f.ID, v, show(val))
				}
				continue
			}
			if want, ok := expectedValue[v]; !ok {
				t.Errorf("%s: %s = %s: a variable the test does not know; add its expected value to expectedValue", f.ID, v, show(val))
			} else if show(val) != show(want) {
				t.Errorf("%s: %s = %s, want %s", f.ID, v, show(val), show(want))
			}
		}
		// A variable set on the function itself (not by Globals) that the
		// function never reads names a resource it has no business with.
		for v := range variables(r.Declared) {
			if slices.Contains(read, v) {
				continue
			}
			if why, ok := setButNotRead[f.ID][v]; ok {
				t.Logf("%s: %s: %s", f.ID, v, why)
				continue
			}
			t.Errorf("%s: Environment.Variables.%s is set but the function never reads it", f.ID, v)
		}
		if slices.Contains(read, lambdawiring.EnvUpstreamTokens) {
			if _, ok := vars[lambdawiring.EnvUpstreamTokens]; !ok {
				t.Errorf("%s reads %s: declare it empty (%s: \"\") so that env.json can set it under sam local invoke", f.ID, lambdawiring.EnvUpstreamTokens, lambdawiring.EnvUpstreamTokens)
			}
		}
	}
	for v, val := range globals {
		if slices.Contains(localOnly, v) {
			if val != "" {
				t.Errorf("Globals.Function: %s is %s; it may only be declared empty, for sam local invoke", v, show(val))
			}
			if v == lambdawiring.EnvUpstreamTokens {
				t.Errorf("Globals.Function: %s is declared for every function; declare it (empty) only on the functions that read it", v)
			}
			continue
		}
		if !readByAny[v] {
			t.Errorf("Globals.Function: %s is set for every function but none reads it", v)
		}
		for res, rv := range resourceVariable {
			if rv == v && !strings.HasPrefix(res, "table:") {
				t.Errorf("Globals.Function: %s names %s for every function; set it only on the functions that read it (and hold a policy on it)", v, res)
			}
		}
	}
	for name := range tpl.Parameters {
		if regexp.MustCompile(`(?i)token|secret|password|credential`).MatchString(name) {
			t.Errorf("Parameters.%s: a secret is never a template parameter (it would show in the console and in samconfig.toml); it lives in UpstreamTokenSecret", name)
		}
	}
}

// TestEnvJSONReachesTheFunctions: env.json (sam local invoke --env-vars)
// only takes effect for variables the template declares, and it should
// give every variable a function reads a local value.
func TestEnvJSONReachesTheFunctions(t *testing.T) {
	tpl := tmpl(t)
	raw, err := os.ReadFile("../env.json")
	if err != nil {
		t.Fatal(err)
	}
	var env map[string]map[string]string
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatalf("env.json: %v (want {\"Parameters\": {NAME: \"value\"}, \"<LogicalId>\": {...}})", err)
	}
	declared := map[string]any{}
	for _, f := range functions {
		for v, val := range variables(tpl.Resources[f.ID].Properties) {
			declared[v] = val
		}
	}
	for block, vars := range env {
		if block != "Parameters" {
			if r, ok := tpl.Resources[block]; !ok || r.Type != "AWS::Serverless::Function" {
				t.Errorf("env.json: block %q names no function of template.yaml", block)
				continue
			}
		}
		for v := range vars {
			fvars := declared
			if block != "Parameters" {
				fvars = variables(tpl.Resources[block].Properties)
			}
			if _, ok := fvars[v]; !ok {
				t.Errorf("env.json: %s.%s is ignored by sam local invoke: no function declares %s in template.yaml", block, v, v)
			}
		}
	}
	local := func(fn, v string) (string, bool) {
		if val, ok := env[fn][v]; ok {
			return val, true
		}
		val, ok := env["Parameters"][v]
		return val, ok
	}
	for _, f := range functions {
		for _, v := range reads(t, f.Folder) {
			if _, ok := local(f.ID, v); !ok {
				t.Errorf("env.json gives %s no local value for %s, which it reads", f.ID, v)
			}
		}
	}
	var tokens map[string]string
	if raw, _ := local("GenerateFunction", lambdawiring.EnvUpstreamTokens); json.Unmarshal([]byte(raw), &tokens) != nil || len(tokens) == 0 {
		t.Errorf("env.json: %s is %q; sam local invoke needs the tokens there as {\"<upstream>\": \"<token>\"} (there is no Secrets Manager locally)", lambdawiring.EnvUpstreamTokens, raw)
	}
	tables := dynamostore.TablesFromEnv(func(k string) string { return env["Parameters"][k] })
	if tables != dynamostore.TablesWithPrefix("mediagen-local") {
		t.Errorf("env.json: the tables are %+v, want the mediagen-local-* tables %+v", tables, dynamostore.TablesWithPrefix("mediagen-local"))
	}
	for _, v := range []string{"AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_S3"} {
		if val := env["Parameters"][v]; !strings.HasPrefix(val, "http://host.docker.internal:") {
			t.Errorf("env.json: %s is %q; from inside sam local's container the host is http://host.docker.internal", v, val)
		}
	}
}

// TestLocalOnlyVariablesAreInertInAWS proves that the empty values the
// template declares for sam local change nothing in AWS: the SDK keeps its
// endpoints and checksums, and an empty UPSTREAM_TOKENS is not a token (the
// function goes to Secrets Manager).
func TestLocalOnlyVariablesAreInertInAWS(t *testing.T) {
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "x")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "x")
	for _, v := range localOnly {
		t.Setenv(v, "")
	}
	ctx := context.Background()
	cfg, err := lambdawiring.AWSConfig(ctx)
	if err != nil {
		t.Fatalf("with the local-only variables empty the AWS configuration does not load: %v", err)
	}
	if cfg.BaseEndpoint != nil {
		t.Errorf("empty local-only variables set an endpoint: %s", aws.ToString(cfg.BaseEndpoint))
	}
	if cfg.RequestChecksumCalculation == aws.RequestChecksumCalculationWhenRequired ||
		cfg.ResponseChecksumValidation == aws.ResponseChecksumValidationWhenRequired {
		t.Errorf("empty AWS_*_CHECKSUM_* variables changed the checksum defaults")
	}
	if ep := dynamodb.NewFromConfig(cfg).Options().BaseEndpoint; ep != nil {
		t.Errorf("an empty AWS_ENDPOINT_URL_DYNAMODB points DynamoDB at %q", *ep)
	}
	if ep := s3.NewFromConfig(cfg).Options().BaseEndpoint; ep != nil {
		t.Errorf("an empty AWS_ENDPOINT_URL_S3 points S3 at %q", *ep)
	}
	// The same variables with env.json's values do reach the clients.
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", "http://host.docker.internal:8000")
	if cfg, err = lambdawiring.AWSConfig(ctx); err != nil {
		t.Fatal(err)
	}
	if ep := aws.ToString(dynamodb.NewFromConfig(cfg).Options().BaseEndpoint); ep != "http://host.docker.internal:8000" {
		t.Errorf("AWS_ENDPOINT_URL_DYNAMODB does not reach the DynamoDB client (endpoint %q); env.json would not work", ep)
	}

	routingFile := filepath.Join(t.TempDir(), "routing.json")
	raw, _ := json.Marshal(routing.Single("rep", routing.ProtocolReplicate, "https://upstream.invalid", []string{"upstream.invalid"}))
	if err := os.WriteFile(routingFile, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(lambdawiring.EnvRoutingFile, routingFile)
	t.Setenv(lambdawiring.EnvUpstreamTokensSecret, "")
	t.Setenv(lambdawiring.EnvUpstreamTokens, "")
	_, err = lambdawiring.Handler(ctx, "submit-scene")
	if err == nil || !strings.Contains(err.Error(), lambdawiring.EnvUpstreamTokensSecret) {
		t.Errorf("with UPSTREAM_TOKENS empty the function must need the secret (%s); it built with error %v", lambdawiring.EnvUpstreamTokensSecret, err)
	}
	// Without a routing file, the embedded one (the local simulator) is refused.
	t.Setenv(lambdawiring.EnvRoutingFile, "")
	t.Setenv(lambdawiring.EnvUpstreamTokens, `{"rep":"x"}`)
	if _, err = lambdawiring.Handler(ctx, "submit-scene"); err == nil || !strings.Contains(err.Error(), lambdawiring.EnvRoutingFile) {
		t.Errorf("with no routing file the function must refuse to start naming %s; it built with error %v", lambdawiring.EnvRoutingFile, err)
	}
}

// sortedKeys lists a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
