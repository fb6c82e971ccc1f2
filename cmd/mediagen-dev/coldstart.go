package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/deploy"
	"github.com/mediagen-dev/mediagen/internal/aws/dynamostore"
	"github.com/mediagen-dev/mediagen/internal/aws/lambdawiring"
	"github.com/mediagen-dev/mediagen/internal/core/accounts"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/routing"
	"github.com/mediagen-dev/mediagen/internal/local/lambdaruntime"
	"github.com/mediagen-dev/mediagen/internal/local/runtime"
	"github.com/mediagen-dev/mediagen/internal/testkit/testsupport"
)

// coldStartFunctions are the functions whose cold starts the bench times,
// in this order: the authorizer's answer is the context the routes' events
// carry, and the status event reads the generation the generate event made.
var coldStartFunctions = []string{"authorizer", "generate", "status"}

// coldStartResult is one function's cold starts.
type coldStartResult struct {
	name                          string
	binaryBytes                   int64
	total, init, firstEvent, warm []time.Duration
}

// benchColdStarts builds the authorizer, generate and status functions as
// the Lambda build does (for this machine's OS and architecture), starts
// each runs times as Lambda starts a new execution environment (its
// Runtime API emulated on loopback, the environment template.yaml gives it
// with local stand-ins: DynamoDB and SQS on moto's server, the upstream
// simulator, the tokens in UPSTREAM_TOKENS) and times it from the process's
// start to its answer to its sample event (events/<folder>.json, with a
// real key and ids). Each answer must be a success.
func benchColdStarts(ctx context.Context, runs int, dynamo *testsupport.DynamoDB, rep *benchReport) error {
	root, err := testsupport.ModuleRoot()
	if err != nil {
		return fmt.Errorf("cold starts need the source tree (run from the repository): %w", err)
	}
	dir, err := os.MkdirTemp("", "mediagen-cold-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	tmpl, err := deploy.Load(filepath.Join(root, "template.yaml"))
	if err != nil {
		return err
	}

	// Local stand-ins: fresh tables on moto's server, a poll queue there
	// too, the simulator as the upstream (jobs never start within the
	// bench, so no render competes for the CPU), and a real account.
	tables, err := dynamo.NewTables(ctx, "bench-cold")
	if err != nil {
		return err
	}
	queueURL, err := createQueue(ctx, dynamo.Endpoint, fmt.Sprintf("bench-cold-poll-%d-%d", os.Getpid(), time.Now().UnixNano()%1e9))
	if err != nil {
		return err
	}
	sim, err := runtime.StartSimulator(runtime.SimulatorConfig{Latency: time.Hour, HTTPFiles: true})
	if err != nil {
		return err
	}
	defer sim.Close()
	rc := routing.Default()
	sim.Bind(rc)
	routingFile, err := json.Marshal(rc)
	if err != nil {
		return err
	}
	tokens, _ := json.Marshal(map[string]string{"simulator": sim.Token})
	acct, err := (&accounts.Service{Store: dynamostore.New(dynamo.Client(), tables)}).CreateAccount(ctx, accounts.NewAccount{
		Plan: domain.PlanEnterprise, Credits: decimal.NewFromInt(1_000_000), RateLimit: 1_000_000_000})
	if err != nil {
		return err
	}
	resources := map[string]string{
		"AccountsTable": tables.Accounts, "ApiKeysTable": tables.APIKeys, "GenerationsTable": tables.Generations,
		"LongVideosTable": tables.LongVideos, "RateLimitsTable": tables.RateLimits, "CountersTable": tables.Counters,
		"IdempotencyTable": tables.Idempotency, "LedgerTable": tables.Ledger, "SlotsTable": tables.Slots,
		"PollQueue": queueURL,
		// Never written: the sample event's input is far below what is
		// kept in the bucket (generation.InputInlineMax).
		"OutputBucket": "mediagen-bench-outputs",
		// Never read: UPSTREAM_TOKENS is set below, as env.json sets it for
		// sam local invoke.
		"UpstreamTokenSecret": "arn:aws:secretsmanager:us-east-1:123456789012:secret:mediagen-upstream-tokens-bench",
	}
	// What env.json gives sam local invoke, for the variables the template
	// declares for it (empty in AWS), and the SQS endpoint.
	local := map[string]string{
		"AWS_ENDPOINT_URL_DYNAMODB":        dynamo.Endpoint,
		"AWS_REQUEST_CHECKSUM_CALCULATION": "when_required",
		"AWS_RESPONSE_CHECKSUM_VALIDATION": "when_required",
		lambdawiring.EnvUpstreamTokens:     string(tokens),
	}

	var (
		authContext map[string]any
		generated   string
	)
	for _, name := range coldStartFunctions {
		fn, err := coldStartFunction(ctx, root, dir, tmpl, name, resources, local)
		if err != nil {
			return err
		}
		fn.Env["AWS_ENDPOINT_URL_SQS"] = dynamo.Endpoint
		if err := os.WriteFile(filepath.Join(fn.TaskRoot, "routing.json"), routingFile, 0o644); err != nil {
			return err
		}
		event, err := sampleEvent(root, name, acct.APIKey, authContext, generated)
		if err != nil {
			return err
		}
		st, err := os.Stat(fn.Bootstrap)
		if err != nil {
			return err
		}
		res := coldStartResult{name: name, binaryBytes: st.Size()}
		for i := 0; i < runs; i++ {
			// The same event twice more in the same process: the last is the
			// warm time, what the first event's own work takes.
			cs, err := lambdaruntime.RunColdStart(ctx, fn, event, event, event)
			if err != nil {
				return fmt.Errorf("cold start %s: %w", name, err)
			}
			answer, err := coldStartAnswer(name, cs.Invocation, acct.UserID)
			for _, l := range cs.Later {
				if err == nil {
					_, err = coldStartAnswer(name, l, acct.UserID)
				}
			}
			if err != nil {
				return fmt.Errorf("cold start %s, run %d: %w", name, i+1, err)
			}
			switch {
			case name == "authorizer" && authContext == nil:
				authContext, _ = answer["context"].(map[string]any)
			case name == "generate" && generated == "":
				var body struct{ UUID string }
				json.Unmarshal([]byte(fmt.Sprint(answer["body"])), &body)
				generated = body.UUID
			}
			res.total = append(res.total, cs.Total)
			res.init = append(res.init, cs.Init)
			res.firstEvent = append(res.firstEvent, cs.FirstEvent)
			res.warm = append(res.warm, cs.Warm[len(cs.Warm)-1])
		}
		if runs > 0 {
			addColdStart(rep, res)
		}
	}
	return nil
}

// coldStartFunction builds one function's bootstrap into dir/<name> with
// the Makefile's Lambda build (its flags, for this machine's OS and
// architecture) and configures it as the template does (templateFunction).
func coldStartFunction(ctx context.Context, root, dir string, tmpl *deploy.Template, name string, resources, local map[string]string) (lambdaruntime.Function, error) {
	logical := logicalID(name)
	out := filepath.Join(dir, name)
	build := exec.CommandContext(ctx, "make", "-s", "-C", root, "build-"+logical, "ARTIFACTS_DIR="+out,
		fmt.Sprintf("LAMBDA_GOFLAGS=GOOS=%s GOARCH=%s CGO_ENABLED=0", goruntime.GOOS, goruntime.GOARCH))
	if raw, err := build.CombinedOutput(); err != nil {
		return lambdaruntime.Function{}, fmt.Errorf("build %s: %w\n%s", logical, err, raw)
	}
	fn, err := templateFunction(tmpl, name, resources, local)
	fn.Bootstrap, fn.TaskRoot = filepath.Join(out, "bootstrap"), out
	return fn, err
}

// templateFunction is the function's environment, memory and timeout as
// the template sets them, each resource it names (!Ref) replaced by its
// local stand-in in resources, and each variable in local set to that
// value when the template declares it.
func templateFunction(tmpl *deploy.Template, name string, resources, local map[string]string) (lambdaruntime.Function, error) {
	logical := logicalID(name)
	res, ok := tmpl.Resources[logical]
	if !ok {
		return lambdaruntime.Function{}, fmt.Errorf("template.yaml has no %s", logical)
	}
	v, err := tmpl.Evaluate(res.Properties, nil)
	if err != nil {
		return lambdaruntime.Function{}, fmt.Errorf("%s: %w", logical, err)
	}
	props, _ := v.(map[string]any)
	envProp, _ := props["Environment"].(map[string]any)
	vars, _ := envProp["Variables"].(map[string]any)
	env := map[string]string{}
	for k, val := range vars {
		switch x := val.(type) {
		case string:
			env[k] = x
		case map[string]any:
			ref, _ := x["Ref"].(string)
			s, ok := resources[ref]
			if !ok {
				return lambdaruntime.Function{}, fmt.Errorf("%s: %s is %v, which the bench has no local stand-in for (cmd/mediagen/coldstart.go)", logical, k, x)
			}
			env[k] = s
		default:
			env[k] = fmt.Sprint(x)
		}
		if l, ok := local[k]; ok {
			env[k] = l
		}
	}
	return lambdaruntime.Function{Name: "mediagen-bench-" + name, MemoryMB: intProp(props["MemorySize"], 128),
		Timeout: time.Duration(intProp(props["Timeout"], 3)) * time.Second, Region: "us-east-1", Env: env}, nil
}

// logicalID is a function folder's logical ID (generation-estimate:
// GenerationEstimateFunction), as scripts/build-lambdas.sh reads it.
func logicalID(folder string) string {
	parts := strings.Split(folder, "-")
	for i, p := range parts {
		if p != "" {
			parts[i] = strings.ToUpper(p[:1]) + p[1:]
		}
	}
	return strings.Join(parts, "") + "Function"
}

func intProp(v any, def int) int {
	switch x := v.(type) {
	case int:
		return x
	case float64:
		return int(x)
	}
	return def
}

// sampleEvent is events/<name>.json with the account's key in the
// Authorization header (and the authorizer's identity source), the
// generation id in a status event's path, and the authorizer's context in a
// route's event, as API Gateway passes it on.
func sampleEvent(root, name, key string, authContext map[string]any, generationID string) ([]byte, error) {
	raw, err := os.ReadFile(filepath.Join(root, "events", name+".json"))
	if err != nil {
		return nil, err
	}
	var ev map[string]any
	if err := json.Unmarshal(raw, &ev); err != nil {
		return nil, fmt.Errorf("events/%s.json: %w", name, err)
	}
	headers, _ := ev["headers"].(map[string]any)
	if headers == nil {
		return nil, fmt.Errorf("events/%s.json has no headers", name)
	}
	headers["authorization"] = "Bearer " + key
	if _, ok := ev["identitySource"]; ok {
		ev["identitySource"] = []string{"Bearer " + key}
	}
	rc, _ := ev["requestContext"].(map[string]any)
	if name != "authorizer" && rc != nil && authContext != nil {
		rc["authorizer"] = map[string]any{"lambda": authContext}
	}
	if params, ok := ev["pathParameters"].(map[string]any); ok && params["id"] != nil {
		if generationID == "" {
			return nil, fmt.Errorf("events/%s.json needs a generation id and none was made", name)
		}
		old := fmt.Sprint(params["id"])
		params["id"] = generationID
		ev["rawPath"] = strings.ReplaceAll(fmt.Sprint(ev["rawPath"]), old, generationID)
		if h, ok := rc["http"].(map[string]any); ok {
			h["path"] = strings.ReplaceAll(fmt.Sprint(h["path"]), old, generationID)
		}
	}
	return json.Marshal(ev)
}

// coldStartAnswer checks that the function answered its event with a
// success: the authorizer the account, a route a 2xx.
func coldStartAnswer(name string, inv *lambdaruntime.Invocation, userID string) (map[string]any, error) {
	if inv.Err != nil {
		return nil, fmt.Errorf("the function failed: %w", inv.Err)
	}
	var answer map[string]any
	if err := json.Unmarshal(inv.Response, &answer); err != nil {
		return nil, fmt.Errorf("answer %s: %w", inv.Response, err)
	}
	if name == "authorizer" {
		ctx, _ := answer["context"].(map[string]any)
		if answer["isAuthorized"] != true || ctx["user_id"] != userID {
			return nil, fmt.Errorf("the authorizer did not find the account: %s", inv.Response)
		}
		return answer, nil
	}
	if code, _ := answer["statusCode"].(float64); code < 200 || code > 299 {
		return nil, fmt.Errorf("answered %v: %v", answer["statusCode"], answer["body"])
	}
	return answer, nil
}

// addColdStart reports one function's cold starts and binary.
func addColdStart(rep *benchReport, r coldStartResult) {
	med := func(d []time.Duration) time.Duration { return percentile(d, 50) }
	rep.add("cold start: "+r.name, med(r.total).Seconds()*1000, "ms", "", nil,
		fmt.Sprintf("median of %d, max %s; init %s, first event %s, same event warm %s (medians); binary %.1f MiB",
			len(r.total), msShort(slices.Max(r.total)), msShort(med(r.init)), msShort(med(r.firstEvent)), msShort(med(r.warm)),
			float64(r.binaryBytes)/(1<<20)))
	rep.add("  binary: "+r.name, float64(r.binaryBytes), "bytes", "", nil, fmt.Sprintf("%s/%s, the Lambda build's flags", goruntime.GOOS, goruntime.GOARCH))
}

func msShort(d time.Duration) string { return fmt.Sprintf("%.1f ms", d.Seconds()*1000) }

// createQueue creates an SQS queue on the server at endpoint (moto's).
func createQueue(ctx context.Context, endpoint, name string) (string, error) {
	c := sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	out, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		return "", fmt.Errorf("create the poll queue on %s: %w", endpoint, err)
	}
	return aws.ToString(out.QueueUrl), nil
}
