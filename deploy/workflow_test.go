package deploy

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/aws/lambdawiring"
	"github.com/mediagen-dev/mediagen/internal/core/store"
	"github.com/mediagen-dev/mediagen/internal/core/webhook"
	"github.com/mediagen-dev/mediagen/statemachines"
)

const definitionFile = "statemachines/long-story.asl.json"

// number reads an integer property.
func number(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case float64:
		return int(n), n == float64(int(n))
	}
	return 0, false
}

func TestEveryWorkflowPlaceholderIsSubstitutedAndUsed(t *testing.T) {
	sm := resource(t, "LongStoryStateMachine", "AWS::Serverless::StateMachine")
	p := sm.Properties
	if p["DefinitionUri"] != definitionFile {
		t.Errorf("LongStoryStateMachine: DefinitionUri is %s, want %s (the file the local runtime runs too)", show(p["DefinitionUri"]), definitionFile)
	}
	if _, ok := p["Definition"]; ok {
		t.Errorf("LongStoryStateMachine: an inline Definition besides DefinitionUri")
	}
	if p["Type"] != "STANDARD" {
		t.Errorf("LongStoryStateMachine: Type is %s, want STANDARD (executions run up to an hour and are named per video)", show(p["Type"]))
	}
	raw, err := os.ReadFile("../" + definitionFile)
	if err != nil {
		t.Fatal(err)
	}
	if string(raw) != string(statemachines.LongStory) {
		t.Fatalf("%s differs from the definition embedded in package statemachines", definitionFile)
	}
	used := map[string]bool{}
	for _, m := range regexp.MustCompile(`\$\{([^}]+)\}`).FindAllStringSubmatch(string(raw), -1) {
		used[m[1]] = true
	}
	if got, want := sortedKeys(used), slices.Sorted(slices.Values(statemachines.LongStoryTasks)); !slices.Equal(got, want) {
		t.Errorf("%s uses the placeholders %v, statemachines.LongStoryTasks lists %v", definitionFile, got, want)
	}
	subs, _ := p["DefinitionSubstitutions"].(map[string]any)
	for name := range used {
		if _, ok := subs[name]; !ok {
			t.Errorf("LongStoryStateMachine: placeholder ${%s} of %s has no DefinitionSubstitutions entry", name, definitionFile)
		}
	}
	taskFunction := map[string]string{}
	for _, name := range sortedKeys(subs) {
		if !used[name] {
			t.Errorf("LongStoryStateMachine: DefinitionSubstitutions.%s is not a placeholder of %s", name, definitionFile)
		}
		fn, attr, ok := getAtt(subs[name])
		want := strings.TrimSuffix(name, "Arn")
		if !ok || attr != "Arn" || fn != want {
			t.Errorf("LongStoryStateMachine: DefinitionSubstitutions.%s is %s, want !GetAtt %s.Arn", name, show(subs[name]), want)
			continue
		}
		if r, ok := tmpl(t).Resources[fn]; !ok || r.Type != "AWS::Serverless::Function" {
			t.Errorf("LongStoryStateMachine: DefinitionSubstitutions.%s names %s, which is not a function of the template", name, fn)
			continue
		}
		taskFunction[name] = fn
	}

	// A task's state gives up before its function does, or the state
	// retries both ways its invocation may end too long: a state that
	// times out fails with States.Timeout while the function runs on, and
	// a function past its own Timeout is stopped by Lambda and reported as
	// Sandbox.Timedout (older: Lambda.Unknown). A state waiting on a task
	// token times the wait for the token, which outlasts the invocation:
	// its function's timeout must be retried.
	var def map[string]any
	if err := json.Unmarshal(raw, &def); err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks(t, def) {
		fn, ok := taskFunction[task.placeholder]
		if !ok {
			continue
		}
		fnTimeout, err := tmpl(t).FunctionTimeout(fn)
		if err != nil {
			t.Errorf("%s: %v", definitionFile, err)
			continue
		}
		stateTimeout, _ := number(task.state["TimeoutSeconds"])
		bothRetried := retrier(task.state, "States.Timeout") != nil && retrier(task.state, "Sandbox.Timedout") != nil
		switch {
		case stateTimeout == 0:
			t.Errorf("%s: state %s has no TimeoutSeconds; a hung task would hold the execution", definitionFile, task.name)
		case task.token && retrier(task.state, "Sandbox.Timedout") == nil:
			t.Errorf("%s: state %s waits for a task token %d s, beyond %s's Timeout %s, and does not retry Sandbox.Timedout", definitionFile, task.name, stateTimeout, fn, fnTimeout)
		case !task.token && time.Duration(stateTimeout)*time.Second >= fnTimeout && !bothRetried:
			t.Errorf("%s: state %s's TimeoutSeconds %d s is not below %s's Timeout %s, and it does not retry both States.Timeout and Sandbox.Timedout: the function dies first, with Sandbox.Timedout", definitionFile, task.name, stateTimeout, fn, fnTimeout)
		}
	}

	logging, _ := p["Logging"].(map[string]any)
	// A state's input carries the video's prompt and scripts: prod logs
	// errors only, never the data. Elsewhere any level will do.
	for _, stage := range []string{"prod", "dev"} {
		got, err := tmpl(t).Evaluate(logging, map[string]string{"Stage": stage})
		if err != nil {
			t.Fatalf("LongStoryStateMachine.Logging: %v", err)
		}
		l, _ := got.(map[string]any)
		if stage == "prod" && (l["Level"] != "ERROR" || l["IncludeExecutionData"] != false) {
			t.Errorf("LongStoryStateMachine: Logging with Stage=prod is %s, want Level ERROR and IncludeExecutionData false (no prompt in the logs)", show(l))
		}
		if !slices.Contains([]any{"ALL", "ERROR", "FATAL"}, l["Level"]) {
			t.Errorf("LongStoryStateMachine: Logging.Level with Stage=%s is %s, want ALL, ERROR or FATAL", stage, show(l["Level"]))
		}
	}
	dests, _ := logging["Destinations"].([]any)
	if len(dests) != 1 {
		t.Errorf("LongStoryStateMachine: Logging.Destinations is %s, want one log group", show(logging["Destinations"]))
	} else {
		cw, _ := dests[0].(map[string]any)["CloudWatchLogsLogGroup"].(map[string]any)
		if lg, attr, ok := getAtt(cw["LogGroupArn"]); !ok || attr != "Arn" || tmpl(t).Resources[lg].Type != "AWS::Logs::LogGroup" {
			t.Errorf("LongStoryStateMachine: Logging.Destinations[0] is %s, want CloudWatchLogsLogGroup.LogGroupArn !GetAtt <an AWS::Logs::LogGroup>.Arn", show(dests[0]))
		}
	}
	if tracing, _ := p["Tracing"].(map[string]any); tracing["Enabled"] != true {
		t.Errorf("LongStoryStateMachine: Tracing is %s, want Enabled: true", show(p["Tracing"]))
	}
}

func TestQueuesHaveDeadLettersAndFitTheirConsumers(t *testing.T) {
	tpl := tmpl(t)
	const defaultRetention = 345600 // SQS's default, 4 days
	retention := func(name string) int {
		if n, ok := number(tpl.Resources[name].Properties["MessageRetentionPeriod"]); ok {
			return n
		}
		return defaultRetention
	}
	deadLetterOf := map[string]string{}
	queues := ofType(tpl, "AWS::SQS::Queue")
	for _, name := range queues {
		p := tpl.Resources[name].Properties
		// SSE-SQS: encrypted at rest with keys SQS manages, free; a
		// KmsMasterKeyId (SSE-KMS) bills KMS requests per data key reuse
		// period.
		if p["SqsManagedSseEnabled"] != true || p["KmsMasterKeyId"] != nil {
			t.Errorf("%s: SqsManagedSseEnabled %s, KmsMasterKeyId %s; want SqsManagedSseEnabled: true and no KMS key (SSE-SQS, no KMS charges)", name, show(p["SqsManagedSseEnabled"]), show(p["KmsMasterKeyId"]))
		}
		rp, ok := p["RedrivePolicy"].(map[string]any)
		if !ok {
			continue
		}
		dlq, attr, ok := getAtt(rp["deadLetterTargetArn"])
		if !ok || attr != "Arn" || tpl.Resources[dlq].Type != "AWS::SQS::Queue" {
			t.Errorf("%s: RedrivePolicy.deadLetterTargetArn is %s, want !GetAtt <a queue>.Arn", name, show(rp["deadLetterTargetArn"]))
			continue
		}
		if n, ok := number(rp["maxReceiveCount"]); !ok || n < 1 {
			t.Errorf("%s: RedrivePolicy.maxReceiveCount is %s", name, show(rp["maxReceiveCount"]))
		}
		if retention(dlq) <= retention(name) {
			t.Errorf("%s: its dead-letter queue %s keeps messages %d s, not longer than the queue itself (%d s): a message could expire before anyone looks", name, dlq, retention(dlq), retention(name))
		}
		deadLetterOf[dlq] = name
	}
	// An event rule's dead-letter queue (DeadLetterConfig) is one too.
	for dlq, of := range deadLetterQueues(t) {
		if _, ok := deadLetterOf[dlq]; !ok {
			deadLetterOf[dlq] = of
		}
	}
	for _, name := range queues {
		if _, isDLQ := deadLetterOf[name]; !isDLQ && tpl.Resources[name].Properties["RedrivePolicy"] == nil {
			t.Errorf("%s: a queue with no dead-letter queue (RedrivePolicy) that is not one itself", name)
		}
	}

	// Each queue's consumer, and why its batch fits its timeout.
	consumerOf := map[string]string{"PollQueue": "PollerFunction", "WebhookQueue": "WebhooksFunction"}
	for q := range consumerOf {
		p := resource(t, q, "AWS::SQS::Queue").Properties
		rp, _ := p["RedrivePolicy"].(map[string]any)
		if rp == nil {
			t.Errorf("%s has no RedrivePolicy", q)
			continue
		}
		if n, _ := number(rp["maxReceiveCount"]); n != 5 {
			t.Errorf("%s: maxReceiveCount is %s, want 5 (docs/deploy.md: DLQ after 5 receives)", q, show(rp["maxReceiveCount"]))
		}
		if dlq, _, _ := getAtt(rp["deadLetterTargetArn"]); retention(dlq) != 1209600 {
			t.Errorf("%s's dead-letter queue %s keeps messages %d s, want 14 days (1209600)", q, dlq, retention(dlq))
		}
	}
	consumers := map[string][]string{}
	for _, f := range functions {
		fp := tpl.Resources[f.ID].Properties
		timeout, ok := number(fp["Timeout"])
		if !ok {
			t.Errorf("%s: Timeout %s is not a number", f.ID, show(fp["Timeout"]))
		}
		for ename, ep := range sqsTriggers(tpl, f.ID) {
			q, attr, _ := getAtt(ep["Queue"])
			if _, known := consumerOf[q]; !known || attr != "Arn" {
				t.Errorf("%s: Queue is %s, want !GetAtt <one of %v>.Arn", ename, show(ep["Queue"]), sortedKeys(consumerOf))
				continue
			}
			consumers[q] = append(consumers[q], f.ID)
			batch, ok := number(ep["BatchSize"])
			if !ok || batch < 1 || batch > 10 {
				t.Errorf("%s: BatchSize is %s, want 1 to 10", ename, show(ep["BatchSize"]))
			}
			frt, _ := ep["FunctionResponseTypes"].([]any)
			if !slices.Contains(frt, any("ReportBatchItemFailures")) {
				t.Errorf("%s: FunctionResponseTypes is %s; the handler answers partial batch failures, which Lambda ignores (and deletes the failed messages) without ReportBatchItemFailures", ename, show(ep["FunctionResponseTypes"]))
			}
			if vis, _ := number(tpl.Resources[q].Properties["VisibilityTimeout"]); vis < 6*timeout {
				t.Errorf("%s: VisibilityTimeout %d s is under 6 x %s's Timeout (%d s): Lambda advises 6x, or a slow batch is delivered twice", q, vis, f.ID, timeout)
			}
			// The deliverer handles a batch one message after another, each
			// waiting up to webhook.Timeout for the receiver.
			if q == "WebhookQueue" {
				if worst := time.Duration(batch) * (webhook.Timeout + 2*time.Second); worst > time.Duration(timeout)*time.Second {
					t.Errorf("%s: a batch of %d attempts may take %s (%s each for the receiver, plus the store and queue calls), over its Timeout of %d s", f.ID, batch, worst, webhook.Timeout, timeout)
				}
			}
		}
	}
	for q, want := range consumerOf {
		if !slices.Equal(consumers[q], []string{want}) {
			t.Errorf("%s is consumed by %v, want %s alone", q, consumers[q], want)
		}
	}
	// A retry is a new message delayed by the backoff, and SQS delays a
	// message by 15 minutes at most.
	for i, d := range webhook.DefaultBackoff {
		if d > 15*time.Minute {
			t.Errorf("webhook.DefaultBackoff[%d] is %s; SQS's DelaySeconds stops at 900 s", i, d)
		}
	}
}

// task is a Task state of the definition.
type task struct {
	name, placeholder string
	state             map[string]any
	token             bool // waits for a task token
}

// tasks lists every Task state, through Parallel branches and Map
// processors.
func tasks(t *testing.T, def map[string]any) []task {
	t.Helper()
	var out []task
	var walk func(states map[string]any)
	walk = func(states map[string]any) {
		for _, name := range sortedKeys(states) {
			sm, _ := states[name].(map[string]any)
			switch sm["Type"] {
			case "Task":
				tk := task{name: name, state: sm}
				res, _ := sm["Resource"].(string)
				if res == "arn:aws:states:::lambda:invoke.waitForTaskToken" {
					tk.token = true
					params, _ := sm["Parameters"].(map[string]any)
					res, _ = params["FunctionName"].(string)
				}
				m := regexp.MustCompile(`^\$\{([A-Za-z0-9_]+)\}$`).FindStringSubmatch(res)
				if m == nil {
					t.Errorf("%s: state %s's Resource %q is not one ${placeholder}", definitionFile, name, res)
					continue
				}
				tk.placeholder = m[1]
				out = append(out, tk)
			case "Parallel":
				branches, _ := sm["Branches"].([]any)
				for _, b := range branches {
					bm, _ := b.(map[string]any)
					inner, _ := bm["States"].(map[string]any)
					walk(inner)
				}
			case "Map":
				for _, key := range []string{"ItemProcessor", "Iterator"} {
					if p, ok := sm[key].(map[string]any); ok {
						inner, _ := p["States"].(map[string]any)
						walk(inner)
					}
				}
			}
		}
	}
	states, _ := def["States"].(map[string]any)
	walk(states)
	return out
}

// lambdaErrors are the errors of a Lambda invocation that AWS's best
// practice for Step Functions asks every Lambda task to retry
// (https://docs.aws.amazon.com/step-functions/latest/dg/bp-lambda-serviceexception.html),
// and Sandbox.Timedout, a function killed at its timeout.
var lambdaErrors = []string{"Lambda.Unknown", "Lambda.ServiceException", "Lambda.ClientExecutionTimeoutException",
	"Lambda.AWSLambdaException", "Lambda.SdkClientException", "Lambda.TooManyRequestsException", "Sandbox.Timedout"}

// retrier is the retrier of a state that catches an error (nil: none).
func retrier(state map[string]any, err string) map[string]any {
	retry, _ := state["Retry"].([]any)
	for _, r := range retry {
		rm, _ := r.(map[string]any)
		for _, e := range stringsOf(rm["ErrorEquals"]) {
			if e == err || e == "States.ALL" {
				return rm
			}
		}
	}
	return nil
}

// schedule is how long a retrier waits over all its retries, in seconds.
func schedule(r map[string]any) float64 {
	interval, ok := number(r["IntervalSeconds"])
	if !ok {
		interval = 1
	}
	attempts, ok := number(r["MaxAttempts"])
	if !ok {
		attempts = 3
	}
	rate, _ := r["BackoffRate"].(float64)
	if n, ok := number(r["BackoffRate"]); ok {
		rate = float64(n)
	}
	if rate == 0 {
		rate = 2
	}
	maxDelay, hasMax := number(r["MaxDelaySeconds"])
	total, wait := 0.0, float64(interval)
	for range attempts {
		if hasMax && wait > float64(maxDelay) {
			wait = float64(maxDelay)
		}
		total += wait
		wait *= rate
	}
	return total
}

// Every Lambda task retries the invocation errors AWS asks to retry and a
// function killed at its timeout; a scene waiting for a slot gives up
// within the execution's time, leaving room for the assembly, and asks
// often enough to keep its place in line; SubmitScene outlasts the
// upstream client's worst case.
func TestTheWorkflowRetriesLambdasErrorsWithinItsTime(t *testing.T) {
	raw, err := os.ReadFile("../" + definitionFile)
	if err != nil {
		t.Fatal(err)
	}
	var def map[string]any
	if err := json.Unmarshal(raw, &def); err != nil {
		t.Fatal(err)
	}
	byName := map[string]map[string]any{}
	for _, tk := range tasks(t, def) {
		byName[tk.name] = tk.state
		for _, e := range lambdaErrors {
			if retrier(tk.state, e) == nil {
				t.Errorf("%s: state %s does not retry %s", definitionFile, tk.name, e)
			}
		}
	}

	execution, _ := number(def["TimeoutSeconds"])
	slots := retrier(byName["Scene"], "SlotsFullError")
	if slots == nil {
		t.Fatalf("%s: state Scene does not retry SlotsFullError", definitionFile)
	}
	wait := schedule(slots)
	assemble, _ := number(byName["Assemble"]["TimeoutSeconds"])
	finalize, _ := number(byName["Finalize"]["TimeoutSeconds"])
	if left := float64(execution) - wait - float64(assemble) - float64(finalize); left < 0 {
		t.Errorf("%s: a scene may wait %.0f s for a slot, which with Assemble (%d s) and Finalize (%d s) outlasts the execution's %d s: a provider backlog ends TIMED_OUT", definitionFile, wait, assemble, finalize, execution)
	}
	if maxDelay, ok := number(slots["MaxDelaySeconds"]); !ok || time.Duration(maxDelay)*time.Second >= store.SlotWaiterTimeout {
		t.Errorf("%s: the SlotsFullError retries are up to %s apart, not within store.SlotWaiterTimeout (%s): a waiting scene would lose its place in line", definitionFile, show(slots["MaxDelaySeconds"]), store.SlotWaiterTimeout)
	}
	t.Logf("a scene waits at most %.0f s for a slot; the execution has %d s", wait, execution)

	submit, _ := number(tmpl(t).Resources["SubmitSceneFunction"].Properties["Timeout"])
	worst := lambdawiring.UpstreamTuning.WorstCase()
	if time.Duration(submit)*time.Second < worst+20*time.Second {
		t.Errorf("SubmitSceneFunction: Timeout %d s is not well beyond the upstream client's worst case %s: a slow create would end as a function timeout with the create left in flight", submit, worst)
	}
}
