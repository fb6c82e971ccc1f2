package stepfunctions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/testkit/waitfor"
)

// tokenDef is a .waitForTaskToken task on function "worker" with extra
// fields, whose result lands in $.r; errors named Rejected are caught.
func tokenDef(extra string) string {
	return `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke.waitForTaskToken",
		"Parameters":{"FunctionName":"worker","Payload":{"job.$":"$.job","task_token.$":"$$.Task.Token"}},` + extra + `
		"ResultPath":"$.r","End":true},"Caught":{"Type":"Pass","End":true}}}`
}

// worker hands each token it is invoked with to tokens, then returns.
func worker(tokens chan<- string) TaskFunc {
	return func(_ context.Context, in json.RawMessage) (json.RawMessage, error) {
		var p struct {
			Token string `json:"task_token"`
		}
		json.Unmarshal(in, &p)
		tokens <- p.Token
		return json.RawMessage(`{"accepted":true}`), nil
	}
}

func startToken(t *testing.T, def string, res map[string]TaskFunc, scale float64) (*Workflow, *Execution) {
	t.Helper()
	m, err := Load("tokens", []byte(def), Config{Resources: res, WaitScale: scale})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	w := &Workflow{Machine: m}
	if err := w.Start(context.Background(), "x", []byte(`{"job":7}`)); err != nil {
		t.Fatal(err)
	}
	e, _ := w.Execution("x")
	return w, e
}

func TestTaskTokenSuccessIsTheResult(t *testing.T) {
	tokens := make(chan string, 1)
	w, e := startToken(t, tokenDef(""), map[string]TaskFunc{"worker": worker(tokens)}, 0.01)
	tok := <-tokens
	if len(tok) < 32 {
		t.Fatalf("token %q looks guessable", tok)
	}
	if err := w.SendTaskSuccess(context.Background(), tok, json.RawMessage(`{"video":"done"}`)); err != nil {
		t.Fatal(err)
	}
	out, err := e.Wait()
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	json.Unmarshal(out, &got)
	jsonEq(t, got, `{"job":7,"r":{"video":"done"}}`)
	want := []string{"ExecutionStarted", "TaskStateEntered", "TaskScheduled", "TaskStarted", "TaskSubmitted",
		"TaskSucceeded", "TaskStateExited", "ExecutionSucceeded"}
	if h := e.historyTypes(); strings.Join(h, ",") != strings.Join(want, ",") {
		t.Errorf("history %v, want %v", h, want)
	}
	if err := w.SendTaskSuccess(context.Background(), tok, json.RawMessage(`{}`)); !errors.Is(err, ErrTaskTimedOut) {
		t.Errorf("a token answered twice: %v, want ErrTaskTimedOut (the task is closed)", err)
	}
}

// The function may hand the token to a process that answers before the
// invocation has even returned.
func TestTaskTokenAnsweredBeforeTheInvocationReturns(t *testing.T) {
	var m *Machine
	res := map[string]TaskFunc{"worker": func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
		var p struct {
			Token string `json:"task_token"`
		}
		json.Unmarshal(in, &p)
		if err := m.SendTaskSuccess(ctx, p.Token, json.RawMessage(`"fast"`)); err != nil {
			return nil, err
		}
		return json.RawMessage(`{}`), nil
	}}
	m, err := Load("fast", []byte(tokenDef("")), Config{Resources: res})
	if err != nil {
		t.Fatal(err)
	}
	out, err := m.Run(context.Background(), "x", json.RawMessage(`{"job":1}`))
	if err != nil || !strings.Contains(string(out), `"r":"fast"`) {
		t.Errorf("output %s, %v; want the early answer as the result", out, err)
	}
}

func TestTaskTokenFailureIsRetriedWithANewToken(t *testing.T) {
	tokens := make(chan string, 2)
	def := tokenDef(`"Retry":[{"ErrorEquals":["Rejected"],"MaxAttempts":1,"IntervalSeconds":1}],
		"Catch":[{"ErrorEquals":["Rejected"],"ResultPath":"$.err","Next":"Caught"}],`)
	w, e := startToken(t, def, map[string]TaskFunc{"worker": worker(tokens)}, 0.001)
	first := <-tokens
	if err := w.SendTaskFailure(context.Background(), first, "Rejected", "bad input"); err != nil {
		t.Fatal(err)
	}
	second := <-tokens
	if second == first {
		t.Fatal("the retry reused the token")
	}
	if err := w.SendTaskHeartbeat(context.Background(), first); !errors.Is(err, ErrTaskTimedOut) {
		t.Errorf("heartbeat on the failed attempt's token: %v, want ErrTaskTimedOut", err)
	}
	if err := w.SendTaskFailure(context.Background(), second, "Rejected", "still bad"); err != nil {
		t.Fatal(err)
	}
	out, err := e.Wait()
	if err != nil || !strings.Contains(string(out), `"err":{"Cause":"still bad","Error":"Rejected"}`) {
		t.Errorf("output %s, %v; want Rejected caught into $.err", out, err)
	}
}

func TestTaskTokenTimeouts(t *testing.T) {
	tests := []struct {
		name, extra, wantErr string
		beat                 bool // send heartbeats all along
	}{
		{"no heartbeat", `"HeartbeatSeconds":5,`, "States.HeartbeatTimeout", false},
		{"TimeoutSeconds, heartbeats or not", `"TimeoutSeconds":5,"HeartbeatSeconds":4,`, "States.Timeout", true},
		{"TimeoutSeconds alone", `"TimeoutSeconds":5,`, "States.Timeout", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tokens := make(chan string, 1)
			w, e := startToken(t, tokenDef(tt.extra), map[string]TaskFunc{"worker": worker(tokens)}, 0.05)
			tok := <-tokens
			if tt.beat {
				stop := make(chan struct{})
				var wg sync.WaitGroup
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						select {
						case <-stop:
							return
						case <-time.After(2 * time.Millisecond):
							w.SendTaskHeartbeat(context.Background(), tok)
						}
					}
				}()
				defer func() { close(stop); wg.Wait() }()
			}
			_, err := e.Wait()
			if ee, _ := asExecutionError(err); ee.Error != tt.wantErr {
				t.Errorf("error %v, want %s", err, tt.wantErr)
			}
			if h := e.historyTypes(); h[len(h)-2] != "TaskTimedOut" {
				t.Errorf("history ends %v, want TaskTimedOut", h[len(h)-2:])
			}
			if err := w.SendTaskSuccess(context.Background(), tok, json.RawMessage(`{}`)); !errors.Is(err, ErrTaskTimedOut) {
				t.Errorf("answer after the timeout: %v, want ErrTaskTimedOut", err)
			}
		})
	}
}

// A heartbeat timeout is caught by its own name, and matched by a Retry of
// States.Timeout, which the guide says covers heartbeats too.
func TestHeartbeatTimeoutIsCatchable(t *testing.T) {
	for _, equals := range []string{"States.HeartbeatTimeout", "States.Timeout", "States.ALL"} {
		tokens := make(chan string, 2)
		def := tokenDef(`"HeartbeatSeconds":2,"Catch":[{"ErrorEquals":["` + equals + `"],"ResultPath":"$.err","Next":"Caught"}],`)
		_, e := startToken(t, def, map[string]TaskFunc{"worker": worker(tokens)}, 0.01)
		out, err := e.Wait()
		if err != nil || !strings.Contains(string(out), `"Error":"States.HeartbeatTimeout"`) {
			t.Errorf("Catch %s: output %s, %v; want the heartbeat timeout caught", equals, out, err)
		}
	}
}

// Heartbeats keep a task alive past HeartbeatSeconds: on the machine's
// clock, a heartbeat every 2 s restarts the 3 s clock, so that the task
// still waits for its token twice HeartbeatSeconds after it started.
func TestHeartbeatsKeepTheTaskAlive(t *testing.T) {
	tokens := make(chan string, 1)
	clock := NewManualClock(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	m, err := Load("tokens", []byte(tokenDef(`"HeartbeatSeconds":3,`)), Config{Resources: map[string]TaskFunc{"worker": worker(tokens)}, Clock: clock})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	w := &Workflow{Machine: m}
	if err := w.Start(context.Background(), "x", []byte(`{"job":7}`)); err != nil {
		t.Fatal(err)
	}
	e, _ := w.Execution("x")
	tok := <-tokens
	waitDue(t, clock, clock.Now().Add(3*time.Second))
	for range 3 {
		clock.Advance(2 * time.Second)
		if err := w.SendTaskHeartbeat(context.Background(), tok); err != nil {
			t.Fatalf("heartbeat: %v", err)
		}
		waitDue(t, clock, clock.Now().Add(3*time.Second))
	}
	if err := w.SendTaskSuccess(context.Background(), tok, json.RawMessage(`1`)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Wait(); err != nil {
		t.Errorf("%v, want success after twice HeartbeatSeconds of heartbeats", err)
	}
}

// waitDue waits for the runner to set a timer due at at on the clock.
func waitDue(t *testing.T, c *ManualClock, at time.Time) {
	t.Helper()
	if !waitfor.Condition(t, generous, "a timer due at "+at.Format(time.RFC3339), func() bool { return c.Due(at) }) {
		t.FailNow()
	}
}

func TestSendTaskErrors(t *testing.T) {
	tokens := make(chan string, 1)
	w, e := startToken(t, tokenDef(""), map[string]TaskFunc{"worker": worker(tokens)}, 0.01)
	tok := <-tokens
	ctx := context.Background()
	tests := []struct {
		name string
		send func() error
		want error
	}{
		{"unknown token", func() error { return w.SendTaskSuccess(ctx, "no-such-token", json.RawMessage(`{}`)) }, ErrTaskDoesNotExist},
		{"unknown token, failure", func() error { return w.SendTaskFailure(ctx, "no-such-token", "E", "") }, ErrTaskDoesNotExist},
		{"unknown token, heartbeat", func() error { return w.SendTaskHeartbeat(ctx, "no-such-token") }, ErrTaskDoesNotExist},
		{"empty token", func() error { return w.SendTaskHeartbeat(ctx, "") }, ErrInvalidToken},
		{"output not JSON", func() error { return w.SendTaskSuccess(ctx, tok, json.RawMessage(`{"a":`)) }, ErrInvalidOutput},
		{"output over the quota", func() error {
			return w.SendTaskSuccess(ctx, tok, json.RawMessage(`"`+strings.Repeat("z", MaxPayloadBytes)+`"`))
		}, ErrDataLimitExceeded},
	}
	for _, tt := range tests {
		if err := tt.send(); !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
	}
	// Refused answers leave the task waiting; Stop closes its token at once.
	if err := w.SendTaskHeartbeat(ctx, tok); err != nil {
		t.Fatalf("heartbeat after refused answers: %v", err)
	}
	if err := w.Stop(ctx, "x", ""); err != nil {
		t.Fatal(err)
	}
	if err := w.SendTaskSuccess(ctx, tok, json.RawMessage(`{}`)); !errors.Is(err, ErrTaskTimedOut) {
		t.Errorf("answer after Stop: %v, want ErrTaskTimedOut", err)
	}
	if e.Wait(); e.Status() != "ABORTED" {
		t.Errorf("status %s, want ABORTED", e.Status())
	}
}

func TestLoadChecksTokenTasks(t *testing.T) {
	res := map[string]TaskFunc{"worker": worker(nil)}
	if _, err := Load("ok", []byte(tokenDef(`"TimeoutSeconds":60,"HeartbeatSeconds":10,`)), Config{Resources: res}); err != nil {
		t.Errorf("a waitForTaskToken task: %v", err)
	}
	for extra, says := range map[string]string{
		`"TimeoutSeconds":10,"HeartbeatSeconds":10,`: "must be smaller than TimeoutSeconds",
		`"HeartbeatSeconds":-1,`:                     "must be positive",
	} {
		if _, err := Load("bad", []byte(tokenDef(extra)), Config{Resources: res}); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("%s: %v, want an error saying %q", extra, err, says)
		}
	}
	if _, err := Load("bad", []byte(tokenDef("")), Config{Resources: map[string]TaskFunc{}}); err == nil || !strings.Contains(err.Error(), `"worker"`) {
		t.Errorf("no function for FunctionName: %v", err)
	}
}

// The ended hook fires once per execution with how it ended; the log line
// and the EventBridge event carry the same.
func TestExecutionEndHook(t *testing.T) {
	tests := []struct {
		name, def, status, errName string
		stop                       bool
	}{
		{"succeeded", `{"StartAt":"P","States":{"P":{"Type":"Pass","Result":{"done":true},"End":true}}}`, "SUCCEEDED", "", false},
		{"failed", `{"StartAt":"F","States":{"F":{"Type":"Fail","Error":"LongVideoFailed","Cause":"scene 3"}}}`, "FAILED", "LongVideoFailed", false},
		{"timed out", `{"TimeoutSeconds":1,"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":3600,"End":true}}}`, "TIMED_OUT", "States.Timeout", false},
		{"stopped", `{"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":3600,"End":true}}}`, "ABORTED", "States.Aborted", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var (
				mu   sync.Mutex
				ends []ExecutionEnd
				logs bytes.Buffer
			)
			m, err := Load("sm", []byte(tt.def), Config{WaitScale: 0.01, Log: slog.New(slog.NewJSONHandler(&logs, nil)),
				OnExecutionEnd: func(e ExecutionEnd) { mu.Lock(); ends = append(ends, e); mu.Unlock() }})
			if err != nil {
				t.Fatal(err)
			}
			e, err := m.Start(context.Background(), "run-1", json.RawMessage(`{"video_id":"v1"}`))
			if err != nil {
				t.Fatal(err)
			}
			if tt.stop {
				e.Stop()
			}
			e.Wait()
			mu.Lock()
			defer mu.Unlock()
			if len(ends) != 1 {
				t.Fatalf("the hook fired %d times, want once", len(ends))
			}
			end := ends[0]
			if end.Status != tt.status || end.Error != tt.errName || end.Name != "run-1" || end.ExecutionArn != e.ID ||
				string(end.Input) != `{"video_id":"v1"}` || end.HistoryEvents != e.HistoryEvents() || end.MaxPayloadBytes != len(`{"video_id":"v1"}`) {
				t.Errorf("hook got %+v, want status %s, error %q", end, tt.status, tt.errName)
			}
			var line map[string]any
			json.Unmarshal(lastLine(logs.String()), &line)
			if line["msg"] != "execution ended" || line["status"] != tt.status ||
				line["history_events"] != float64(end.HistoryEvents) || line["max_payload_bytes"] != float64(end.MaxPayloadBytes) {
				t.Errorf("log line %v", line)
			}
			raw, err := end.EventBridgeEvent()
			if err != nil {
				t.Fatal(err)
			}
			var ev struct {
				DetailType string   `json:"detail-type"`
				Source     string   `json:"source"`
				Account    string   `json:"account"`
				Region     string   `json:"region"`
				Resources  []string `json:"resources"`
				Detail     struct {
					ExecutionArn, StateMachineArn, Name, Status string
					StartDate, StopDate                         int64
					Input, Output, Error                        *string
				} `json:"detail"`
			}
			if err := json.Unmarshal(raw, &ev); err != nil {
				t.Fatal(err)
			}
			d := ev.Detail
			if ev.DetailType != "Step Functions Execution Status Change" || ev.Source != "aws.states" || ev.Account != "000000000000" ||
				ev.Region != "local" || len(ev.Resources) != 1 || ev.Resources[0] != e.ID || d.ExecutionArn != e.ID ||
				d.StateMachineArn != end.StateMachineArn || d.Name != "run-1" || d.Status != tt.status ||
				d.Input == nil || *d.Input != `{"video_id":"v1"}` || d.StopDate < d.StartDate {
				t.Errorf("event %s", raw)
			}
			if (d.Output != nil) != (tt.status == "SUCCEEDED") || (d.Error != nil) != (tt.errName != "") {
				t.Errorf("event output/error %s, want output only on success and the error otherwise", raw)
			}
		})
	}
}

func lastLine(s string) []byte {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return []byte(lines[len(lines)-1])
}

// Past 248KB of escaped output, the event leaves the output (and then the
// input) out and says so.
func TestEventBridgeEventLeavesOutLargePayloads(t *testing.T) {
	end := ExecutionEnd{ExecutionArn: "arn:aws:states:us-east-1:123456789012:execution:sm:x", Status: "SUCCEEDED",
		Input: json.RawMessage(`{}`), Output: json.RawMessage(`"` + strings.Repeat(`\"`, 130*1024) + `"`)}
	raw, err := end.EventBridgeEvent()
	if err != nil {
		t.Fatal(err)
	}
	var ev struct {
		Detail map[string]any `json:"detail"`
	}
	json.Unmarshal(raw, &ev)
	if ev.Detail["output"] != nil || ev.Detail["input"] != nil ||
		ev.Detail["outputDetails"].(map[string]any)["included"] != false || ev.Detail["inputDetails"].(map[string]any)["included"] != false {
		t.Errorf("detail %v, want input and output left out", ev.Detail)
	}
}
