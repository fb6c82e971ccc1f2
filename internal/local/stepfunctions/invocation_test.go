package stepfunctions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/testkit/waitfor"
)

// generous bounds a wait for something the runner does at once, on a
// loaded machine: the runner's own time is the manual clock.
const generous = 10 * time.Second

// heldFunction is a Lambda function that runs until the test releases it,
// as a slow invocation on AWS runs on whatever the execution does. It
// reports each start, how many calls run at once, and whether a call's
// context had ended by the time it was released.
type heldFunction struct {
	started  chan int // the attempt (the payload's "attempt") of each call
	release  chan struct{}
	inFlight atomic.Int32
	peak     atomic.Int32

	releaseOnce sync.Once

	mu        sync.Mutex
	cancelled []error // context.Cause of each call whose context ended
	returned  int
}

func newHeldFunction() *heldFunction {
	return &heldFunction{started: make(chan int, 8), release: make(chan struct{})}
}

// run holds the call until release; until its context ends when
// untilDone is set (a handler that stops when Lambda stops it).
func (h *heldFunction) run(untilDone bool) TaskFunc {
	return func(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
		var in struct {
			Attempt int `json:"attempt"`
		}
		json.Unmarshal(raw, &in)
		n := h.inFlight.Add(1)
		defer h.inFlight.Add(-1)
		for p := h.peak.Load(); n > p && !h.peak.CompareAndSwap(p, n); p = h.peak.Load() {
		}
		h.started <- in.Attempt
		done := ctx.Done()
		if !untilDone {
			done = nil
		}
		select {
		case <-h.release:
		case <-done:
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		h.returned++
		if ctx.Err() != nil {
			h.cancelled = append(h.cancelled, context.Cause(ctx))
		}
		return json.Marshal(map[string]any{"late": true, "attempt": in.Attempt})
	}
}

// let releases every call, once.
func (h *heldFunction) let() { h.releaseOnce.Do(func() { close(h.release) }) }

func (h *heldFunction) waitStarted(t *testing.T) int {
	t.Helper()
	select {
	case n := <-h.started:
		return n
	case <-time.After(generous):
		t.Fatal("the function was not invoked")
		return 0
	}
}

// waitReturned waits for the one call to return.
func (h *heldFunction) waitReturned(t *testing.T) {
	t.Helper()
	if !waitfor.Condition(t, generous, "the invocation to return", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.returned > 0
	}) {
		t.FailNow()
	}
}

// waitPending waits for the runner to set n timers on the clock.
func waitPending(t *testing.T, c *ManualClock, n int) {
	t.Helper()
	if !waitfor.Condition(t, generous, fmt.Sprintf("%d timers set on the clock", n), func() bool { return c.Pending() >= n }) {
		t.FailNow()
	}
}

func waitEnded(t *testing.T, e *Execution) (json.RawMessage, error) {
	t.Helper()
	select {
	case <-e.Done():
	case <-time.After(generous):
		t.Fatal("the execution did not end while its invocation ran: the runner waited for it")
	}
	return e.Wait()
}

// AWS never cancels a running Lambda invocation: a state that times out, a
// Parallel whose other branch failed and a stopped execution all move on at
// once, the invocation runs to its end, and what it returns is discarded.
func TestRunningInvocationsAreNeverCancelled(t *testing.T) {
	tests := []struct {
		name, def        string
		timers           int // the clock's timers set before the trigger
		trigger          func(*ManualClock, *Execution)
		status, wantErr  string
		output, noOutput string // in and not in the output (on success)
	}{
		{name: "state timeout",
			def: `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"slow","TimeoutSeconds":10,
				"Catch":[{"ErrorEquals":["States.Timeout"],"ResultPath":"$.err","Next":"Caught"}],"ResultPath":"$.r","End":true},
				"Caught":{"Type":"Pass","End":true}}}`,
			timers: 1, trigger: func(c *ManualClock, _ *Execution) { c.Advance(10 * time.Second) },
			status: "SUCCEEDED", output: `"Error":"States.Timeout"`, noOutput: `late`},
		{name: "failed sibling branch",
			def: `{"StartAt":"P","States":{"P":{"Type":"Parallel","End":true,"Branches":[
				{"StartAt":"S","States":{"S":{"Type":"Task","Resource":"slow","End":true}}},
				{"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":5,"Next":"F"},"F":{"Type":"Fail","Error":"SceneFailed","Cause":"scene 2"}}}]}}}`,
			timers: 1, trigger: func(c *ManualClock, _ *Execution) { c.Advance(5 * time.Second) },
			status: "FAILED", wantErr: "SceneFailed"},
		{name: "StopExecution",
			def:     `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"slow","End":true}}}`,
			trigger: func(_ *ManualClock, e *Execution) { e.Stop() },
			status:  "ABORTED", wantErr: "States.Aborted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := NewManualClock(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
			h := newHeldFunction()
			m, err := Load("never-cancelled", []byte(tt.def), Config{Resources: map[string]TaskFunc{"slow": h.run(true)}, Clock: clock})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(m.Close)
			t.Cleanup(h.let) // before Close, should the test end early
			e, err := m.Start(context.Background(), "x", json.RawMessage(`{"in":1}`))
			if err != nil {
				t.Fatal(err)
			}
			h.waitStarted(t)
			waitPending(t, clock, tt.timers)
			tt.trigger(clock, e)
			out, err := waitEnded(t, e)
			h.let()
			h.waitReturned(t)
			if ee, _ := asExecutionError(err); e.Status() != tt.status || ee.Error != tt.wantErr {
				t.Errorf("execution %s, %v; want %s %s", e.Status(), err, tt.status, tt.wantErr)
			}
			if !strings.Contains(string(out), tt.output) || (tt.noOutput != "" && strings.Contains(string(out), tt.noOutput)) {
				t.Errorf("output %s, want %s in it and not the late result", out, tt.output)
			}
			h.mu.Lock()
			defer h.mu.Unlock()
			if h.returned != 1 || len(h.cancelled) != 0 {
				t.Errorf("the invocation returned %d times, its context ended %v; want it run to its end, never cancelled", h.returned, h.cancelled)
			}
		})
	}
}

// A retry of a timed-out task starts while the first attempt still runs;
// the result is the retry's.
func TestARetryOverlapsTheTimedOutAttempt(t *testing.T) {
	clock := NewManualClock(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	h := newHeldFunction()
	m, err := Load("overlap", []byte(`{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"slow","TimeoutSeconds":10,
		"Parameters":{"attempt.$":"$$.State.RetryCount"},
		"Retry":[{"ErrorEquals":["States.Timeout"],"IntervalSeconds":2,"MaxAttempts":1}],"ResultPath":"$.r","End":true}}}`),
		Config{Resources: map[string]TaskFunc{"slow": h.run(false)}, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	t.Cleanup(h.let) // before Close, should the test end early
	e, err := m.Start(context.Background(), "x", json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if n := h.waitStarted(t); n != 0 {
		t.Fatalf("first attempt %d", n)
	}
	waitPending(t, clock, 1) // TimeoutSeconds
	clock.Advance(10 * time.Second)
	waitPending(t, clock, 1) // the retry's interval
	clock.Advance(2 * time.Second)
	if n := h.waitStarted(t); n != 1 {
		t.Fatalf("second attempt %d", n)
	}
	if p := h.peak.Load(); p != 2 {
		t.Errorf("%d invocations ran at once, want 2: the retry overlaps the attempt that timed out", p)
	}
	h.let()
	out, err := waitEnded(t, e)
	if err != nil || !strings.Contains(string(out), `"r":{"attempt":1,"late":true}`) {
		t.Errorf("output %s, %v; want the retry's result", out, err)
	}
}

// A function that runs past its own timeout is stopped by Lambda, which
// reports Sandbox.Timedout; a state's TimeoutSeconds below it fails the
// state first, with States.Timeout.
func TestAFunctionPastItsTimeoutIsSandboxTimedout(t *testing.T) {
	tests := []struct {
		name, stateTimeout string
		advance            time.Duration
		wantErr, causeSays string
		killedByItsTimeout bool
	}{
		{"the function's timeout first", `"TimeoutSeconds":60,`, 30 * time.Second, "Sandbox.Timedout", "Task timed out after 30.00 seconds", true},
		{"no state timeout", ``, 30 * time.Second, "Sandbox.Timedout", "Task timed out after 30.00 seconds", true},
		{"the state's timeout first", `"TimeoutSeconds":25,`, 25 * time.Second, "States.Timeout", `"T" timed out`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := NewManualClock(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
			h := newHeldFunction()
			def := `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"slow",` + tt.stateTimeout + `
				"Catch":[{"ErrorEquals":["States.ALL"],"ResultPath":"$.err","Next":"Caught"}],"End":true},"Caught":{"Type":"Pass","End":true}}}`
			m, err := Load("fn-timeout", []byte(def), Config{Resources: map[string]TaskFunc{"slow": h.run(true)}, Clock: clock,
				FunctionTimeouts: map[string]time.Duration{"slow": 30 * time.Second}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(m.Close)
			t.Cleanup(h.let) // before Close, should the test end early
			e, err := m.Start(context.Background(), "x", json.RawMessage(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			h.waitStarted(t)
			waitPending(t, clock, strings.Count(tt.stateTimeout, "TimeoutSeconds")+1)
			clock.Advance(tt.advance)
			out, err := waitEnded(t, e)
			var got struct{ Err struct{ Error, Cause string } }
			json.Unmarshal(out, &got)
			if err != nil || got.Err.Error != tt.wantErr || !strings.Contains(got.Err.Cause, tt.causeSays) {
				t.Errorf("output %s, %v; want %s caught, its cause saying %q", out, err, tt.wantErr, tt.causeSays)
			}
			if !tt.killedByItsTimeout {
				clock.Advance(30 * time.Second) // on to the function's own timeout
			}
			h.waitReturned(t)
			h.mu.Lock()
			defer h.mu.Unlock()
			if len(h.cancelled) != 1 || !errors.Is(h.cancelled[0], context.DeadlineExceeded) {
				t.Errorf("the invocation's context ended with %v, want once, at the function's timeout", h.cancelled)
			}
		})
	}
}

// Close (the runtime's shutdown) ends what still runs, and returns once it
// has: nothing outlives the runner.
func TestCloseEndsTheInvocationsStillRunning(t *testing.T) {
	h := newHeldFunction()
	m, err := Load("close", []byte(`{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"slow","End":true}}}`),
		Config{Resources: map[string]TaskFunc{"slow": h.run(true)}, Clock: NewManualClock(time.Now())})
	if err != nil {
		t.Fatal(err)
	}
	w := &Workflow{Machine: m}
	if err := w.Start(context.Background(), "x", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	h.waitStarted(t)
	closed := make(chan struct{})
	go func() { w.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(generous):
		t.Fatal("Close did not return")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.returned != 1 || len(h.cancelled) != 1 || !errors.Is(h.cancelled[0], errClosed) {
		t.Errorf("returned %d, context ended with %v; want the invocation ended by Close", h.returned, h.cancelled)
	}
	if e, _ := w.Execution("x"); e.Status() != "ABORTED" {
		t.Errorf("status %s, want ABORTED", e.Status())
	}
}

// A Fail state's ErrorPath and CausePath must select a string; anything
// else fails the execution with States.Runtime, saying why.
func TestFailPathsThatSelectNoStringAreRuntimeErrors(t *testing.T) {
	tests := []struct {
		paths, input, wantErr, causeSays string
	}{
		{`"Error":"LongVideoFailed","CausePath":"$.why"`, `{"why":"scene 3 failed"}`, "LongVideoFailed", "scene 3 failed"},
		{`"ErrorPath":"$.name","CausePath":"$.why"`, `{"name":"Custom","why":"w"}`, "Custom", "w"},
		{`"Error":"LongVideoFailed","CausePath":"$.why"`, `{"video_id":"v"}`, "States.Runtime", `the CausePath $.why of Fail state "F" selects nothing`},
		{`"ErrorPath":"$.name","Cause":"c"`, `{}`, "States.Runtime", `the ErrorPath $.name of Fail state "F" selects nothing`},
		{`"ErrorPath":"$.name","Cause":"c"`, `{"name":7}`, "States.Runtime", "selects a number, not a string"},
		{`"Error":"E","CausePath":"$.why"`, `{"why":{"a":1}}`, "States.Runtime", "selects an object, not a string"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s on %s", tt.paths, tt.input), func(t *testing.T) {
			_, err := mustRun(t, `{"StartAt":"F","States":{"F":{"Type":"Fail",`+tt.paths+`}}}`, nil, tt.input)
			if ee, ok := asExecutionError(err); !ok || ee.Error != tt.wantErr || !strings.Contains(ee.Cause, tt.causeSays) {
				t.Errorf("%v, want %s with a cause saying %q", err, tt.wantErr, tt.causeSays)
			}
		})
	}
}

// On the wall clock a handler sees its function's deadline, as a Lambda
// handler does; one that returns its context's error at the deadline is
// still reported as Lambda reports it, Sandbox.Timedout.
func TestAHandlerSeesItsDeadlineAndStillTimesOut(t *testing.T) {
	var hadDeadline atomic.Bool
	res := map[string]TaskFunc{"slow": func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
		_, ok := ctx.Deadline()
		hadDeadline.Store(ok)
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	for range 5 {
		m, err := Load("deadline", []byte(`{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"slow","End":true}}}`),
			Config{Resources: res, WaitScale: 0.01, FunctionTimeouts: map[string]time.Duration{"slow": 3 * time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = m.Run(context.Background(), "x", json.RawMessage(`{}`))
		m.Close()
		if ee, _ := asExecutionError(err); ee.Error != "Sandbox.Timedout" || !hadDeadline.Load() {
			t.Fatalf("%v (the handler had a deadline: %v); want Sandbox.Timedout", err, hadDeadline.Load())
		}
	}
}
