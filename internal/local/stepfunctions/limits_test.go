package stepfunctions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// load loads a definition with fast waits, failing the test on error.
func load(t *testing.T, def string, res map[string]TaskFunc) *Machine {
	t.Helper()
	m, err := Load("test", []byte(def), Config{Resources: res, WaitScale: 0.001})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return m
}

// runExec starts and waits for an execution, returning it with its error.
func runExec(t *testing.T, m *Machine, input string) (*Execution, error) {
	t.Helper()
	e, err := m.Start(context.Background(), "x", json.RawMessage(input))
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	_, err = e.Wait()
	return e, err
}

// sized is a JSON object {"s":"xxx…"} of exactly n bytes.
func sized(n int) string {
	return `{"s":"` + strings.Repeat("x", n-len(`{"s":""}`)) + `"}`
}

func TestStartRefusesAnInputOverTheQuota(t *testing.T) {
	m := load(t, `{"StartAt":"P","States":{"P":{"Type":"Pass","Result":"small","End":true}}}`, nil)
	if _, err := m.Start(context.Background(), "big", json.RawMessage(sized(MaxPayloadBytes+1))); !errors.Is(err, ErrDataLimitExceeded) {
		t.Errorf("Start with %d bytes: %v, want ErrDataLimitExceeded", MaxPayloadBytes+1, err)
	}
	e, err := runExec(t, m, sized(MaxPayloadBytes))
	if err != nil || e.Status() != "SUCCEEDED" {
		t.Fatalf("an input of exactly %d bytes: %s, %v; want SUCCEEDED", MaxPayloadBytes, e.Status(), err)
	}
	if got := e.MaxPayloadBytes(); got != MaxPayloadBytes {
		t.Errorf("MaxPayloadBytes = %d, want the input's %d", got, MaxPayloadBytes)
	}
}

// Every state and iteration input and output is held to the quota; the
// error is terminal: a Retry or a Catch of States.ALL never sees it.
func TestDataLimitFailsTheExecution(t *testing.T) {
	var calls atomic.Int32
	huge := strings.Repeat("y", MaxPayloadBytes)
	res := map[string]TaskFunc{
		"huge": func(context.Context, json.RawMessage) (json.RawMessage, error) {
			calls.Add(1)
			return json.Marshal(huge)
		},
		"half": func(context.Context, json.RawMessage) (json.RawMessage, error) {
			calls.Add(1)
			return json.Marshal(strings.Repeat("h", MaxPayloadBytes/2))
		},
	}
	catchAll := `"Retry":[{"ErrorEquals":["States.ALL"],"MaxAttempts":3}],"Catch":[{"ErrorEquals":["States.ALL"],"Next":"Caught"}]`
	tests := []struct {
		name, def, input string
		wantCalls        int32
	}{
		{"task result over the quota",
			`{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"huge",` + catchAll + `,"End":true},"Caught":{"Type":"Succeed"}}}`,
			`{}`, 1},
		{"state output over the quota, result under it",
			`{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"half","ResultPath":"$.second",` + catchAll + `,"End":true},"Caught":{"Type":"Succeed"}}}`,
			`{"first":"` + strings.Repeat("f", MaxPayloadBytes/2) + `"}`, 1},
		{"input after Parameters over the quota",
			`{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"half","Parameters":{"a.$":"$.s","b.$":"$.s"},` + catchAll + `,"End":true},"Caught":{"Type":"Succeed"}}}`,
			sized(MaxPayloadBytes/2 + 100), 0},
		{"map iteration input over the quota",
			`{"StartAt":"M","States":{"M":{"Type":"Map","ItemsPath":"$.items","ItemSelector":{"a.$":"$.big","b.$":"$.big","item.$":"$$.Map.Item.Value"},
			"ItemProcessor":{"StartAt":"P","States":{"P":{"Type":"Pass","Result":1,"End":true}}},` + catchAll + `,"End":true},"Caught":{"Type":"Succeed"}}}`,
			`{"items":["` + strings.Repeat("i", MaxPayloadBytes/3) + `"],"big":"` + strings.Repeat("b", MaxPayloadBytes/3) + `"}`, 0},
		{"map output over the quota, each iteration under it",
			`{"StartAt":"M","States":{"M":{"Type":"Map","ItemsPath":"$.items","ItemProcessor":{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"half","End":true}}},` +
				catchAll + `,"End":true},"Caught":{"Type":"Succeed"}}}`,
			`{"items":[1,2]}`, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls.Store(0)
			e, err := runExec(t, load(t, tt.def, res), tt.input)
			ee, _ := asExecutionError(err)
			if e.Status() != "FAILED" || ee.Error != "States.DataLimitExceeded" {
				t.Errorf("status %s, error %v; want FAILED with States.DataLimitExceeded, not caught", e.Status(), err)
			}
			if calls.Load() != tt.wantCalls {
				t.Errorf("the task ran %d times, want %d (no retry)", calls.Load(), tt.wantCalls)
			}
		})
	}
}

// The history of small definitions, event by event as GetExecutionHistory
// lists it; only definitions whose order is fixed (no concurrency).
func TestHistoryEventsAsAWSListsThem(t *testing.T) {
	var flaky atomic.Int32
	res := map[string]TaskFunc{
		"fn": fn(func(map[string]any) (any, error) { return map[string]any{"ok": true}, nil }),
		"flaky": func(context.Context, json.RawMessage) (json.RawMessage, error) {
			if flaky.Add(1) == 1 {
				return nil, &TaskError{Name: "Transient", Cause: "once"}
			}
			return json.RawMessage(`{"ok":true}`), nil
		},
		"broken": func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return nil, &TaskError{Name: "Broken", Cause: "always"}
		},
	}
	tests := []struct {
		name, def  string
		wantStatus string
		want       []string
	}{
		{"pass, lambda task, choice, succeed",
			`{"StartAt":"P","States":{"P":{"Type":"Pass","Next":"T"},"T":{"Type":"Task","Resource":"fn","Next":"C"},
			"C":{"Type":"Choice","Choices":[{"Variable":"$.ok","BooleanEquals":true,"Next":"S"}]},"S":{"Type":"Succeed"}}}`,
			"SUCCEEDED", []string{"ExecutionStarted",
				"PassStateEntered", "PassStateExited",
				"TaskStateEntered", "LambdaFunctionScheduled", "LambdaFunctionStarted", "LambdaFunctionSucceeded", "TaskStateExited",
				"ChoiceStateEntered", "ChoiceStateExited",
				"SucceedStateEntered", "SucceedStateExited",
				"ExecutionSucceeded"}},
		{"a retry repeats the attempt's events, not the state's",
			`{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"flaky","Retry":[{"ErrorEquals":["Transient"],"IntervalSeconds":1}],"End":true}}}`,
			"SUCCEEDED", []string{"ExecutionStarted", "TaskStateEntered",
				"LambdaFunctionScheduled", "LambdaFunctionStarted", "LambdaFunctionFailed",
				"LambdaFunctionScheduled", "LambdaFunctionStarted", "LambdaFunctionSucceeded",
				"TaskStateExited", "ExecutionSucceeded"}},
		{"a caught error exits the state",
			`{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"broken","Catch":[{"ErrorEquals":["States.ALL"],"Next":"W"}],"End":true},
			"W":{"Type":"Wait","Seconds":1,"End":true}}}`,
			"SUCCEEDED", []string{"ExecutionStarted", "TaskStateEntered",
				"LambdaFunctionScheduled", "LambdaFunctionStarted", "LambdaFunctionFailed", "TaskStateExited",
				"WaitStateEntered", "WaitStateExited", "ExecutionSucceeded"}},
		{"an uncaught error does not",
			`{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"broken","End":true}}}`,
			"FAILED", []string{"ExecutionStarted", "TaskStateEntered",
				"LambdaFunctionScheduled", "LambdaFunctionStarted", "LambdaFunctionFailed", "ExecutionFailed"}},
		{"a Fail state is only entered",
			`{"StartAt":"F","States":{"F":{"Type":"Fail","Error":"E"}}}`,
			"FAILED", []string{"ExecutionStarted", "FailStateEntered", "ExecutionFailed"}},
		{"lambda:invoke logs Task events",
			`{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","Parameters":{"FunctionName":"fn","Payload":{}},"End":true}}}`,
			"SUCCEEDED", []string{"ExecutionStarted", "TaskStateEntered", "TaskScheduled", "TaskStarted", "TaskSucceeded", "TaskStateExited", "ExecutionSucceeded"}},
		{"parallel of one branch",
			`{"StartAt":"P","States":{"P":{"Type":"Parallel","Branches":[{"StartAt":"B","States":{"B":{"Type":"Pass","End":true}}}],"End":true}}}`,
			"SUCCEEDED", []string{"ExecutionStarted", "ParallelStateEntered", "ParallelStateStarted",
				"PassStateEntered", "PassStateExited",
				"ParallelStateSucceeded", "ParallelStateExited", "ExecutionSucceeded"}},
		{"map, one iteration at a time",
			`{"StartAt":"M","States":{"M":{"Type":"Map","ItemsPath":"$.items","MaxConcurrency":1,
			"ItemProcessor":{"StartAt":"B","States":{"B":{"Type":"Pass","End":true}}},"End":true}}}`,
			"SUCCEEDED", []string{"ExecutionStarted", "MapStateEntered", "MapStateStarted",
				"MapIterationStarted", "PassStateEntered", "PassStateExited", "MapIterationSucceeded",
				"MapIterationStarted", "PassStateEntered", "PassStateExited", "MapIterationSucceeded",
				"MapStateSucceeded", "MapStateExited", "ExecutionSucceeded"}},
		{"a failing map iteration",
			`{"StartAt":"M","States":{"M":{"Type":"Map","ItemsPath":"$.items","MaxConcurrency":1,
			"ItemProcessor":{"StartAt":"B","States":{"B":{"Type":"Fail","Error":"E"}}},"End":true}}}`,
			"FAILED", []string{"ExecutionStarted", "MapStateEntered", "MapStateStarted",
				"MapIterationStarted", "FailStateEntered", "MapIterationFailed",
				"MapStateFailed", "ExecutionFailed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			flaky.Store(0)
			e, _ := runExec(t, load(t, tt.def, res), `{"items":[1,2]}`)
			if e.Status() != tt.wantStatus {
				t.Errorf("status %s, want %s", e.Status(), tt.wantStatus)
			}
			if got := e.historyTypes(); !slices.Equal(got, tt.want) {
				t.Errorf("history\n got %v\nwant %v", got, tt.want)
			}
			if e.HistoryEvents() != len(tt.want) {
				t.Errorf("HistoryEvents() = %d, want %d", e.HistoryEvents(), len(tt.want))
			}
		})
	}
}

// A loop of K Pass+Choice rounds logs 4K+4 events: event 25,000 may be
// ExecutionSucceeded, but any other event there fails the execution.
func TestHistoryQuotaAtItsEdge(t *testing.T) {
	def := `{"StartAt":"Inc","States":{
		"Inc":{"Type":"Pass","Parameters":{"n.$":"States.MathAdd($.n, 1)","k.$":"$.k"},"Next":"Check"},
		"Check":{"Type":"Choice","Choices":[{"Variable":"$.n","NumericLessThanPath":"$.k","Next":"Inc"}],"Default":"Done"},
		"Done":{"Type":"Succeed"}}}`
	m := load(t, def, nil)
	tests := []struct {
		rounds     int
		wantStatus string
	}{
		{(MaxHistoryEvents - 4) / 4, "SUCCEEDED"}, // 25,000 events, the last ExecutionSucceeded
		{(MaxHistoryEvents-4)/4 + 1, "FAILED"},    // would be 25,004
		{(MaxHistoryEvents-4)/4 - 1, "SUCCEEDED"}, // 24,996
		{(MaxHistoryEvents-4)/4 + 100, "FAILED"},  // well past
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.rounds), func(t *testing.T) {
			e, err := runExec(t, m, fmt.Sprintf(`{"n":0,"k":%d}`, tt.rounds))
			if e.Status() != tt.wantStatus {
				t.Fatalf("%d rounds: %s, %v; want %s", tt.rounds, e.Status(), err, tt.wantStatus)
			}
			events := min(4*tt.rounds+4, MaxHistoryEvents)
			if e.HistoryEvents() != events {
				t.Errorf("HistoryEvents() = %d, want %d", e.HistoryEvents(), events)
			}
			if tt.wantStatus == "FAILED" {
				ee, _ := asExecutionError(err)
				if ee.Error != "States.Runtime" || !strings.Contains(ee.Cause, "maximum number of history events (25000)") {
					t.Errorf("error %v, want States.Runtime about the history", err)
				}
				if h := e.historyTypes(); h[len(h)-1] != "ExecutionFailed" {
					t.Errorf("last event %s, want ExecutionFailed", h[len(h)-1])
				}
			}
		})
	}
}

// Event 25,000 may only be ExecutionSucceeded: here it would be a Fail
// state's FailStateEntered (1 + 2 + 4K + 1 = 25,000 events before the end),
// so the execution fails on the history quota, not with the Fail's error.
func TestHistoryQuotaRefusesAnyOtherEvent25000(t *testing.T) {
	def := `{"StartAt":"First","States":{"First":{"Type":"Pass","Next":"Inc"},
		"Inc":{"Type":"Pass","Parameters":{"n.$":"States.MathAdd($.n, 1)","k.$":"$.k"},"Next":"Check"},
		"Check":{"Type":"Choice","Choices":[{"Variable":"$.n","NumericLessThanPath":"$.k","Next":"Inc"}],"Default":"Boom"},
		"Boom":{"Type":"Fail","Error":"Boom"}}}`
	e, err := runExec(t, load(t, def, nil), fmt.Sprintf(`{"n":0,"k":%d}`, (MaxHistoryEvents-4)/4))
	ee, _ := asExecutionError(err)
	if ee.Error != "States.Runtime" || e.HistoryEvents() != MaxHistoryEvents {
		t.Errorf("%v with %d events; want States.Runtime with %d", err, e.HistoryEvents(), MaxHistoryEvents)
	}
	e, err = runExec(t, load(t, def, nil), fmt.Sprintf(`{"n":0,"k":%d}`, (MaxHistoryEvents-4)/4-1))
	if ee, _ := asExecutionError(err); ee.Error != "Boom" || e.HistoryEvents() != MaxHistoryEvents-4+1 {
		t.Errorf("four events fewer: %v with %d events; want Boom", err, e.HistoryEvents())
	}
}

// Inline Map iterations log into the parent's history: 5,000 items of two
// Pass states (6 events each) pass 25,000, and a Catch of States.ALL on the
// Map does not save the execution.
func TestMapIterationsFillTheParentHistory(t *testing.T) {
	items := make([]int, 5000)
	input, _ := json.Marshal(map[string]any{"items": items})
	def := `{"StartAt":"M","States":{"M":{"Type":"Map","ItemsPath":"$.items","MaxConcurrency":40,
		"ItemProcessor":{"StartAt":"A","States":{"A":{"Type":"Pass","Next":"B"},"B":{"Type":"Pass","End":true}}},
		"Catch":[{"ErrorEquals":["States.ALL"],"Next":"Caught"}],"End":true},"Caught":{"Type":"Succeed"}}}`
	e, err := runExec(t, load(t, def, nil), string(input))
	ee, _ := asExecutionError(err)
	if e.Status() != "FAILED" || ee.Error != "States.Runtime" {
		t.Fatalf("status %s, %v; want FAILED with States.Runtime", e.Status(), err)
	}
	if e.HistoryEvents() != MaxHistoryEvents {
		t.Errorf("HistoryEvents() = %d, want %d", e.HistoryEvents(), MaxHistoryEvents)
	}
	h := e.historyTypes()
	if h[len(h)-1] != "ExecutionFailed" || slices.Contains(h, "MapStateExited") {
		t.Errorf("history ends %v, want ExecutionFailed and no caught Map", h[len(h)-3:])
	}
}
