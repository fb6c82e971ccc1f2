package stepfunctions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/testkit/waitfor"
)

func fn(f func(in map[string]any) (any, error)) TaskFunc {
	return func(_ context.Context, raw json.RawMessage) (json.RawMessage, error) {
		var in map[string]any
		json.Unmarshal(raw, &in)
		out, err := f(in)
		if err != nil {
			return nil, err
		}
		return json.Marshal(out)
	}
}

func mustRun(t *testing.T, def string, res map[string]TaskFunc, input string) (map[string]any, error) {
	t.Helper()
	m, err := Load("test", []byte(def), Config{Resources: res, WaitScale: 0.001})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	out, err := m.Run(context.Background(), "x", json.RawMessage(input))
	var got map[string]any
	if err == nil {
		json.Unmarshal(out, &got)
	}
	return got, err
}

func jsonEq(t *testing.T, got any, want string) {
	t.Helper()
	var w any
	json.Unmarshal([]byte(want), &w)
	g, _ := json.Marshal(got)
	wb, _ := json.Marshal(w)
	if string(g) != string(wb) {
		t.Errorf("output %s, want %s", g, wb)
	}
}

// The Pass state example of the States Language specification.
func TestSpecPassResultPath(t *testing.T) {
	got, err := mustRun(t, `{"StartAt":"P","States":{"P":{"Type":"Pass","Result":{"x-datum":0.381018,"y-datum":622.2269926397355},"ResultPath":"$.coords","End":true}}}`,
		nil, `{"georefOf":"Home"}`)
	if err != nil {
		t.Fatal(err)
	}
	jsonEq(t, got, `{"georefOf":"Home","coords":{"x-datum":0.381018,"y-datum":622.2269926397355}}`)
}

// The developer guide's input/output processing example: InputPath,
// Parameters, ResultPath into the raw input, OutputPath.
func TestGuideInputOutputProcessing(t *testing.T) {
	res := map[string]TaskFunc{"arn:aws:lambda:us-east-1:123456789012:function:Hello": fn(func(in map[string]any) (any, error) {
		return "Hello, " + in["who"].(string) + "!", nil
	})}
	got, err := mustRun(t, `{"StartAt":"Hello","States":{"Hello":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:Hello",
		"InputPath":"$.lambda","Parameters":{"who.$":"$.who"},"ResultPath":"$.data.lambdaresult","OutputPath":"$.data","End":true}}}`, res,
		`{"comment":"An input comment.","data":{"val1":23,"val2":17},"extra":"foo","lambda":{"who":"AWS Step Functions"}}`)
	if err != nil {
		t.Fatal(err)
	}
	jsonEq(t, got, `{"val1":23,"val2":17,"lambdaresult":"Hello, AWS Step Functions!"}`)
}

func TestResultSelectorAndNullPaths(t *testing.T) {
	res := map[string]TaskFunc{"r": fn(func(map[string]any) (any, error) {
		return map[string]any{"Payload": map[string]any{"n": 1}, "StatusCode": 200}, nil
	})}
	got, err := mustRun(t, `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"r","ResultSelector":{"n.$":"$.Payload.n","fixed":"yes"},"ResultPath":"$.r","Next":"D"},
		"D":{"Type":"Task","Resource":"r","ResultPath":null,"Next":"E"},"E":{"Type":"Pass","OutputPath":"$.r","End":true}}}`, res, `{"keep":true}`)
	if err != nil {
		t.Fatal(err)
	}
	jsonEq(t, got, `{"n":1,"fixed":"yes"}`)
}

// The specification's Choice example with And, Not and comparison operators.
func TestSpecChoice(t *testing.T) {
	def := `{"StartAt":"C","States":{"C":{"Type":"Choice","Choices":[
		{"Not":{"Variable":"$.type","StringEquals":"Private"},"Next":"Public"},
		{"And":[{"Variable":"$.value","IsPresent":true},{"Variable":"$.value","NumericGreaterThanEquals":20},{"Variable":"$.value","NumericLessThan":30}],"Next":"ValueInTwenties"},
		{"Variable":"$.name","StringMatches":"log-*.txt","Next":"Log"},
		{"Variable":"$.rating","NumericGreaterThanPath":"$.auditThreshold","Next":"Audit"}],
		"Default":"Other"},
		"Public":{"Type":"Pass","Result":"Public","End":true},"ValueInTwenties":{"Type":"Pass","Result":"ValueInTwenties","End":true},
		"Log":{"Type":"Pass","Result":"Log","End":true},"Audit":{"Type":"Pass","Result":"Audit","End":true},"Other":{"Type":"Pass","Result":"Other","End":true}}}`
	m, err := Load("choice", []byte(def), Config{})
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]string{
		`{"type":"Public"}`:                                                      "Public",
		`{"type":"Private","value":25}`:                                          "ValueInTwenties",
		`{"type":"Private","value":35,"name":"log-2026.txt"}`:                    "Log",
		`{"type":"Private","value":35,"name":"x","rating":9,"auditThreshold":5}`: "Audit",
		`{"type":"Private","value":35,"name":"x","rating":1,"auditThreshold":5}`: "Other",
	}
	for input, want := range tests {
		out, err := m.Run(context.Background(), "c", json.RawMessage(input))
		if err != nil || string(out) != `"`+want+`"` {
			t.Errorf("%s → %s, %v; want %s", input, out, err, want)
		}
	}
	noDefault := `{"StartAt":"C","States":{"C":{"Type":"Choice","Choices":[{"Variable":"$.a","BooleanEquals":true,"Next":"Y"}]},"Y":{"Type":"Succeed"}}}`
	if _, err := mustRun(t, noDefault, nil, `{"a":false}`); !strings.Contains(err.Error(), "States.NoChoiceMatched") {
		t.Errorf("no match and no Default: %v", err)
	}
}

func TestParallelRunsBranchesOnTheSameInput(t *testing.T) {
	res := map[string]TaskFunc{
		"double": fn(func(in map[string]any) (any, error) { return in["n"].(float64) * 2, nil }),
		"square": fn(func(in map[string]any) (any, error) { return in["n"].(float64) * in["n"].(float64), nil }),
	}
	got, err := mustRun(t, `{"StartAt":"P","States":{"P":{"Type":"Parallel","ResultPath":"$.results","End":true,"Branches":[
		{"StartAt":"D","States":{"D":{"Type":"Task","Resource":"double","End":true}}},
		{"StartAt":"S","States":{"S":{"Type":"Task","Resource":"square","End":true}}}]}}}`, res, `{"n":3}`)
	if err != nil {
		t.Fatal(err)
	}
	jsonEq(t, got, `{"n":3,"results":[6,9]}`)
}

// The developer guide's Map example over $.shipped with ItemSelector and the
// context object's item index and value, bounded by MaxConcurrency: each
// iteration runs until the test lets one go, once two run at once (or the
// last one runs), so that a third started alongside would be counted.
func TestMapWithItemSelectorAndMaxConcurrency(t *testing.T) {
	var inFlight, peak atomic.Int32
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	res := map[string]TaskFunc{"ship": fn(func(in map[string]any) (any, error) {
		n := inFlight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		<-release
		inFlight.Add(-1)
		item := in["item"].(map[string]any)
		return map[string]any{"index": in["index"], "sku": item["sku"], "ship_date": in["date"]}, nil
	})}
	m, err := Load("test", []byte(`{"StartAt":"M","States":{"M":{"Type":"Map","ItemsPath":"$.shipped","MaxConcurrency":2,
		"ItemSelector":{"date.$":"$.delivery-date","index.$":"$$.Map.Item.Index","item.$":"$$.Map.Item.Value"},
		"ItemProcessor":{"ProcessorConfig":{"Mode":"INLINE"},"StartAt":"Ship","States":{"Ship":{"Type":"Task","Resource":"ship","End":true}}},
		"ResultPath":"$.detail.shipped","End":true}}}`), Config{Resources: res})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	e, err := m.Start(context.Background(), "x", json.RawMessage(`{"delivery-date":"tomorrow","shipped":[{"sku":"a"},{"sku":"b"},{"sku":"c"},{"sku":"d"},{"sku":"e"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	for left := 5; left > 0; left-- {
		want := int32(min(2, left))
		if !waitfor.Condition(t, 10*time.Second, fmt.Sprintf("%d iterations running at once", want), func() bool { return inFlight.Load() == want }) {
			t.FailNow()
		}
		release <- struct{}{}
	}
	out, err := e.Wait()
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	shipped := got["detail"].(map[string]any)["shipped"].([]any)
	if len(shipped) != 5 || shipped[4].(map[string]any)["sku"] != "e" || shipped[2].(map[string]any)["index"] != 2.0 {
		t.Errorf("map output %v, want 5 results in item order", shipped)
	}
	if p := peak.Load(); p != 2 {
		t.Errorf("at most %d iterations ran at once, want MaxConcurrency 2", p)
	}
}

type flakyError struct{}

func (flakyError) Error() string { return "try again" }

func TestRetryBacksOffThenSucceeds(t *testing.T) {
	var calls atomic.Int32
	res := map[string]TaskFunc{"flaky": func(context.Context, json.RawMessage) (json.RawMessage, error) {
		if calls.Add(1) < 3 {
			return nil, &flakyError{}
		}
		return json.RawMessage(`"ok"`), nil
	}}
	got, err := mustRun(t, `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"flaky","ResultPath":"$.r",
		"Retry":[{"ErrorEquals":["Other"],"MaxAttempts":9},{"ErrorEquals":["flakyError"],"IntervalSeconds":1,"MaxAttempts":2,"BackoffRate":2}],"End":true}}}`, res, `{}`)
	if err != nil || got["r"] != "ok" || calls.Load() != 3 {
		t.Errorf("output %v, %v after %d calls; want ok after 3", got, err, calls.Load())
	}
	calls.Store(-10)
	_, err = mustRun(t, `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"flaky","Retry":[{"ErrorEquals":["flakyError"],"MaxAttempts":2}],"End":true}}}`, res, `{}`)
	if ee, ok := asExecutionError(err); !ok || ee.Error != "flakyError" || calls.Load() != -7 {
		t.Errorf("exhausted retries: %v after %d calls, want flakyError after 3", err, calls.Load()+10)
	}
}

func TestCatchRoutesByErrorName(t *testing.T) {
	res := map[string]TaskFunc{
		"named": func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return nil, &TaskError{Name: "SceneFailed", Cause: "scene 2"}
		},
		"plain": func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, errors.New("boom") },
		"slow": func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		},
		"panics": func(context.Context, json.RawMessage) (json.RawMessage, error) { panic("bug") },
	}
	def := func(resource string) string {
		return `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"` + resource + `","TimeoutSeconds":1,"Catch":[
			{"ErrorEquals":["SceneFailed"],"ResultPath":"$.err","Next":"Named"},
			{"ErrorEquals":["States.Timeout"],"ResultPath":"$.err","Next":"TimedOut"},
			{"ErrorEquals":["States.TaskFailed"],"ResultPath":"$.err","Next":"TaskFailed"},
			{"ErrorEquals":["States.ALL"],"Next":"All"}],"End":true},
			"Named":{"Type":"Pass","End":true},"TimedOut":{"Type":"Pass","End":true},"TaskFailed":{"Type":"Pass","End":true},"All":{"Type":"Pass","End":true}}}`
	}
	tests := []struct{ resource, wantErr, wantCause string }{
		{"named", "SceneFailed", "scene 2"},
		{"slow", "States.Timeout", ""},
		{"plain", "errorString", "boom"},
		{"panics", "States.TaskFailed", "the task panicked: bug"},
	}
	for _, tt := range tests {
		m, err := Load("c", []byte(def(tt.resource)), Config{Resources: res, WaitScale: 0.05})
		if err != nil {
			t.Fatal(err)
		}
		out, err := m.Run(context.Background(), "c", json.RawMessage(`{"in":1}`))
		m.Close() // "slow" runs on past its state's timeout until the runner closes
		var got map[string]any
		json.Unmarshal(out, &got)
		e, _ := got["err"].(map[string]any)
		if err != nil || got["in"] != 1.0 || e["Error"] != tt.wantErr || (tt.wantCause != "" && e["Cause"] != tt.wantCause) {
			t.Errorf("%s: output %s, %v; want Error %s caught into $.err", tt.resource, out, err, tt.wantErr)
		}
	}
}

func TestRuntimeErrorsAreNeverCaught(t *testing.T) {
	_, err := mustRun(t, `{"StartAt":"P","States":{"P":{"Type":"Pass","InputPath":"$.missing","Next":"Q",
		"Comment":"no Catch on Pass; a Task catching States.ALL below"},"Q":{"Type":"Succeed"}}}`, nil, `{}`)
	if ee, ok := asExecutionError(err); !ok || ee.Error != "States.Runtime" {
		t.Fatalf("a path that matches nothing: %v, want States.Runtime", err)
	}
	res := map[string]TaskFunc{"r": fn(func(map[string]any) (any, error) { return 1, nil })}
	_, err = mustRun(t, `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"r","Parameters":{"x.$":"$.missing"},
		"Catch":[{"ErrorEquals":["States.ALL"],"Next":"Caught"}],"End":true},"Caught":{"Type":"Succeed"}}}`, res, `{}`)
	if ee, ok := asExecutionError(err); !ok || ee.Error != "States.Runtime" {
		t.Errorf("States.ALL caught a runtime error: %v", err)
	}
}

func TestFailAndMapFailurePropagate(t *testing.T) {
	_, err := mustRun(t, `{"StartAt":"F","States":{"F":{"Type":"Fail","Error":"LongVideoFailed","CausePath":"$.why"}}}`, nil, `{"why":"scene 3 failed"}`)
	if ee, ok := asExecutionError(err); !ok || ee.Error != "LongVideoFailed" || ee.Cause != "scene 3 failed" {
		t.Errorf("Fail state: %v", err)
	}
	res := map[string]TaskFunc{"t": fn(func(in map[string]any) (any, error) {
		if in["n"] == 2.0 {
			return nil, &TaskError{Name: "SceneFailed", Cause: "scene 2"}
		}
		return in, nil
	})}
	_, err = mustRun(t, `{"StartAt":"M","States":{"M":{"Type":"Map","ItemsPath":"$.items","ItemProcessor":{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"t","End":true}}},"End":true}}}`,
		res, `{"items":[{"n":1},{"n":2},{"n":3}]}`)
	if ee, ok := asExecutionError(err); !ok || ee.Error != "SceneFailed" || ee.Cause != "scene 2" {
		t.Errorf("a failing iteration: %v, want the Map to fail with it", err)
	}
}

func TestIntrinsicFunctions(t *testing.T) {
	got, err := mustRun(t, `{"StartAt":"P","States":{"P":{"Type":"Pass","Parameters":{
		"greeting.$":"States.Format('Hello, my name is {}.', $.name)",
		"count.$":"States.ArrayLength($.list)",
		"sum.$":"States.MathAdd($.a, 3)",
		"parsed.$":"States.StringToJson($.json)",
		"text.$":"States.JsonToString($.obj)",
		"both.$":"States.Array($.a, 'x')"},"End":true}}}`, nil,
		`{"name":"Arnav","list":[1,2,3],"a":1,"json":"{\"k\":\"v\"}","obj":{"k":1}}`)
	if err != nil {
		t.Fatal(err)
	}
	jsonEq(t, got, `{"greeting":"Hello, my name is Arnav.","count":3,"sum":4,"parsed":{"k":"v"},"text":"{\"k\":1}","both":[1,"x"]}`)
}

func TestStopAbortsAWaitingExecution(t *testing.T) {
	clock := NewManualClock(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	m, err := Load("w", []byte(`{"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":3600,"End":true}}}`), Config{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	e, _ := m.Start(context.Background(), "w", json.RawMessage(`{}`))
	waitPending(t, clock, 1) // the Wait state's hour
	e.Stop()
	select {
	case <-e.Done():
	case <-time.After(generous):
		t.Fatal("Stop did not end the execution")
	}
	if _, err := e.Wait(); e.Status() != "ABORTED" || err == nil {
		t.Errorf("status %s, %v; want ABORTED", e.Status(), err)
	}
}

func TestLoadRefusesWhatItCannotRun(t *testing.T) {
	res := map[string]TaskFunc{"r": fn(func(map[string]any) (any, error) { return nil, nil })}
	tests := map[string]struct{ def, says string }{
		"unknown type":        {`{"StartAt":"A","States":{"A":{"Type":"Loop","End":true}}}`, `state "A": unsupported Type "Loop"`},
		"missing Next target": {`{"StartAt":"A","States":{"A":{"Type":"Pass","Next":"B"}}}`, `state "A": Next "B" names no state`},
		"no Next nor End":     {`{"StartAt":"A","States":{"A":{"Type":"Pass"}}}`, `state "A": needs exactly one of Next and End`},
		"unknown field":       {`{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"r","HeartbeatSeconds":5,"End":true}}}`, `state "A": unsupported field "HeartbeatSeconds"`},
		"distributed map": {`{"StartAt":"M","States":{"M":{"Type":"Map","ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED"},"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}},"End":true}}}`,
			"DISTRIBUTED"},
		"item reader":       {`{"StartAt":"M","States":{"M":{"Type":"Map","ItemReader":{},"ItemProcessor":{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}},"End":true}}}`, `unsupported field "ItemReader"`},
		"JSONata":           {`{"QueryLanguage":"JSONata","StartAt":"A","States":{"A":{"Type":"Pass","End":true}}}`, "JSONata"},
		"unknown intrinsic": {`{"StartAt":"A","States":{"A":{"Type":"Pass","Parameters":{"x.$":"States.Nope($.a)"},"End":true}}}`, `unsupported intrinsic function "States.Nope"`},
		"bad path":          {`{"StartAt":"A","States":{"A":{"Type":"Pass","InputPath":"foo","End":true}}}`, `does not start with $`},
		"no function":       {`{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"missing","End":true}}}`, `no function for resource "missing"`},
		"no substitution":   {`{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"${Fn}","End":true}}}`, `placeholder ${Fn} has no substitution`},
		"unknown operator":  {`{"StartAt":"C","States":{"C":{"Type":"Choice","Choices":[{"Variable":"$.a","StringLike":"x","Next":"C"}]}}}`, `unsupported choice operator "StringLike"`},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Load("bad", []byte(tt.def), Config{Resources: res})
			if err == nil || !strings.Contains(err.Error(), tt.says) {
				t.Errorf("Load = %v, want an error saying %q", err, tt.says)
			}
		})
	}
}

func TestLambdaInvokeIntegrationWrapsThePayload(t *testing.T) {
	res := map[string]TaskFunc{"arn:aws:lambda:us-east-1:1:function:f": fn(func(in map[string]any) (any, error) { return in["x"], nil })}
	got, err := mustRun(t, `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke",
		"Parameters":{"FunctionName":"arn:aws:lambda:us-east-1:1:function:f","Payload":{"x.$":"$.v"}},"ResultSelector":{"got.$":"$.Payload"},"End":true}}}`, res, `{"v":7}`)
	if err != nil {
		t.Fatal(err)
	}
	jsonEq(t, got, `{"got":7}`)
}
