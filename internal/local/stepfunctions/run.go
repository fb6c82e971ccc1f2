package stepfunctions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// TaskFunc runs a Task state's resource, like a Lambda function.
type TaskFunc func(ctx context.Context, input json.RawMessage) (json.RawMessage, error)

// TaskError fails a task with a named error, like a Lambda errorType.
type TaskError struct{ Name, Cause string }

func (e *TaskError) Error() string { return e.Name + ": " + e.Cause }

// ExecutionError is how an execution failed.
type ExecutionError struct{ Error, Cause string }

func (e *ExecutionError) String() string { return e.Error + ": " + e.Cause }

// executionError adapts ExecutionError to the error interface without
// renaming its fields, which mirror the service's JSON.
type executionError struct{ ExecutionError }

func (e *executionError) Error() string { return e.ExecutionError.String() }

// AsExecutionError extracts the execution's error name and cause.
func asExecutionError(err error) (ExecutionError, bool) {
	var e *executionError
	if errors.As(err, &e) {
		return e.ExecutionError, true
	}
	return ExecutionError{}, false
}

// stateError is an error inside the machine, with its States error name.
type stateError struct{ name, cause string }

func (e *stateError) Error() string { return e.name + ": " + e.cause }

// Config wires a definition to its tasks.
type Config struct {
	// Substitutions replace "${Name}" in the definition text before it is
	// parsed, as the template's DefinitionSubstitutions do.
	Substitutions map[string]string
	// Resources maps each Task's (substituted) Resource to its function; for
	// arn:aws:states:::lambda:invoke, its Parameters.FunctionName.
	Resources map[string]TaskFunc
	// WaitScale multiplies Wait durations, Retry intervals, TimeoutSeconds,
	// HeartbeatSeconds and FunctionTimeouts alike (tests: 0.01).
	WaitScale float64
	// Clock is the machine's time (default: the wall clock).
	Clock clock
	Log   *slog.Logger
	// OnTransition, when set, is called on each state entered (the cost
	// meter counts them across executions).
	OnTransition func()
	// OnExecutionEnd, when set, is called once as each execution ends,
	// before Wait returns (the local runtime raises the EventBridge event
	// from it).
	OnExecutionEnd func(ExecutionEnd)
	// FunctionTimeouts gives each Task resource (a key of Resources) its
	// function's own Timeout, as the template sets it. An invocation still
	// running when its function's timeout has passed (on the machine's
	// clock, scaled by WaitScale) fails its task with Sandbox.Timedout, as
	// Lambda reports a function it stopped at its timeout, and its context
	// ends. A resource without one runs until it returns.
	FunctionTimeouts map[string]time.Duration
	// ARN is the state machine's ARN, which its executions' ARNs
	// ($$.Execution.Id) derive from (default: one in a local account).
	ARN string
}

// Machine is a loaded definition.
type Machine struct {
	def  *machineDef
	cfg  Config
	name string

	tokMu  sync.Mutex
	tokens map[string]*pendingTask // task tokens of all executions

	// life ends at Close, the only thing that cuts a running invocation
	// short besides its function's timeout; inflight counts invocations.
	life      context.Context
	endLife   context.CancelFunc
	lifeMu    sync.Mutex
	closed    bool
	inflight  sync.WaitGroup
	closeOnce sync.Once
}

const (
	lambdaInvoke = "arn:aws:states:::lambda:invoke"
	// lambdaInvokeWait invokes the function, then waits for SendTaskSuccess
	// or SendTaskFailure on the token the Parameters handed it.
	lambdaInvokeWait = lambdaInvoke + ".waitForTaskToken"
)

var placeholder = regexp.MustCompile(`\$\{[A-Za-z0-9_]+\}`)

// Load substitutes, parses and checks a definition; every construct the
// runner does not implement is refused here, naming its state.
func Load(name string, definition []byte, cfg Config) (*Machine, error) {
	text := string(definition)
	for k, v := range cfg.Substitutions {
		text = strings.ReplaceAll(text, "${"+k+"}", v)
	}
	if left := placeholder.FindString(text); left != "" {
		return nil, fmt.Errorf("definition: placeholder %s has no substitution", left)
	}
	def, err := parse([]byte(text), "definition")
	if err != nil {
		return nil, err
	}
	if cfg.WaitScale <= 0 {
		cfg.WaitScale = 1
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = wallClock{}
	}
	m := &Machine{def: def, cfg: cfg, name: name}
	m.life, m.endLife = context.WithCancel(context.Background())
	return m, m.checkResources(def)
}

func (m *Machine) checkResources(def *machineDef) error {
	for _, st := range def.states {
		switch st.Type {
		case "Task":
			fn := st.Resource
			if fn == lambdaInvoke || fn == lambdaInvokeWait {
				params, _ := st.Parameters.(map[string]any)
				fn, _ = params["FunctionName"].(string)
			} else if strings.HasPrefix(fn, "arn:aws:states:::") {
				return fmt.Errorf("state %q: service integration %s is not supported", st.name, fn)
			}
			if _, ok := m.cfg.Resources[fn]; !ok {
				return fmt.Errorf("state %q: no function for resource %q", st.name, fn)
			}
		case "Parallel":
			for _, b := range st.Branches {
				if err := m.checkResources(b); err != nil {
					return err
				}
			}
		case "Map":
			proc := st.ItemProcessor
			if proc == nil {
				proc = st.Iterator
			}
			if err := m.checkResources(proc); err != nil {
				return err
			}
		}
	}
	return nil
}

// Execution is one run of a machine.
type Execution struct {
	ID   string
	Name string

	m           *Machine
	input       json.RawMessage
	done        chan struct{}
	output      json.RawMessage
	err         error
	status      atomic.Value
	cancel      context.CancelCauseFunc
	transitions atomic.Int64
	maxPayload  atomic.Int64

	histMu      sync.Mutex
	history     []string // event types, in the order they were logged
	historyFull bool
}

// errStopped is the cause of a stopped execution.
var errStopped = errors.New("stopped")

// Start runs the machine in the background. Like StartExecution, it
// refuses an input over MaxPayloadBytes.
func (m *Machine) Start(ctx context.Context, name string, input json.RawMessage) (*Execution, error) {
	if len(input) > MaxPayloadBytes {
		return nil, fmt.Errorf("execution input of %d bytes: %w", len(input), ErrDataLimitExceeded)
	}
	var in any
	if err := json.Unmarshal(input, &in); err != nil {
		return nil, fmt.Errorf("execution input: %w", err)
	}
	e := &Execution{ID: m.executionARN(name), Name: name,
		m: m, input: bytes.Clone(input), done: make(chan struct{}), history: []string{"ExecutionStarted"}}
	e.notePayload(len(input))
	e.status.Store("RUNNING")
	runCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	e.cancel = cancel
	if m.def.TimeoutSeconds > 0 {
		var stop context.CancelFunc
		runCtx, stop = m.withTimeout(runCtx, m.scaled(float64(m.def.TimeoutSeconds)))
		defer func() { go func() { <-e.done; stop() }() }()
	}
	start := m.cfg.Clock.Now().UTC()
	machineArn := m.arn()
	x := &run{m: m, exec: e, ctxObj: map[string]any{
		"Execution":    map[string]any{"Id": e.ID, "Name": name, "Input": in, "StartTime": start.Format(time.RFC3339Nano)},
		"StateMachine": map[string]any{"Id": machineArn, "Name": m.name},
	}}
	go func() {
		defer close(e.done)
		out, err := x.scope(runCtx, m.def, in)
		var status, last string
		switch {
		case err == nil:
			e.output, _ = json.Marshal(out)
			status, last = "SUCCEEDED", "ExecutionSucceeded"
		case errors.Is(context.Cause(runCtx), errHistoryLimit):
			e.err = &executionError{ExecutionError{Error: "States.Runtime", Cause: historyLimitCause}}
			status, last = "FAILED", "ExecutionFailed"
		case errors.Is(context.Cause(runCtx), errStopped):
			e.err = &executionError{ExecutionError{Error: "States.Aborted", Cause: "the execution was stopped"}}
			status, last = "ABORTED", "ExecutionAborted"
		case timedOut(runCtx):
			e.err = &executionError{ExecutionError{Error: "States.Timeout", Cause: "the execution timed out"}}
			status, last = "TIMED_OUT", "ExecutionTimedOut"
		default:
			se := asStateError(err)
			e.err = &executionError{ExecutionError{Error: se.name, Cause: se.cause}}
			status, last = "FAILED", "ExecutionFailed"
		}
		e.endEvent(last)
		m.closeTasksOf(e)
		e.status.Store(status)
		end := ExecutionEnd{ExecutionArn: e.ID, Name: name, StateMachineArn: machineArn, Status: status,
			Input: e.input, Output: e.output, StartDate: start, StopDate: m.cfg.Clock.Now().UTC(),
			HistoryEvents: e.HistoryEvents(), MaxPayloadBytes: e.MaxPayloadBytes()}
		if ee, ok := asExecutionError(e.err); ok {
			end.Error, end.Cause = ee.Error, ee.Cause
		}
		m.cfg.Log.Info("execution ended", "execution", e.ID, "status", status, "error", end.Error,
			"transitions", e.Transitions(), "history_events", end.HistoryEvents, "max_payload_bytes", end.MaxPayloadBytes)
		if m.cfg.OnExecutionEnd != nil {
			m.cfg.OnExecutionEnd(end)
		}
	}()
	return e, nil
}

// Run starts an execution and waits for it.
func (m *Machine) Run(ctx context.Context, name string, input json.RawMessage) (json.RawMessage, error) {
	e, err := m.Start(ctx, name, input)
	if err != nil {
		return nil, err
	}
	return e.Wait()
}

// Wait blocks until the execution ends.
func (e *Execution) Wait() (json.RawMessage, error) {
	<-e.done
	return e.output, e.err
}

// Done is closed when the execution ends.
func (e *Execution) Done() <-chan struct{} { return e.done }

// Stop aborts the execution, as StopExecution does: its task tokens close
// at once and its states end without waiting for the functions they
// invoked, which run on to their end (Step Functions never cancels a Lambda
// invocation); what they return is discarded.
func (e *Execution) Stop() {
	e.m.closeTasksOf(e)
	e.cancel(errStopped)
}

// Status is RUNNING, SUCCEEDED, FAILED, ABORTED or TIMED_OUT.
func (e *Execution) Status() string { return e.status.Load().(string) }

// Transitions counts the states entered, as Step Functions bills them.
func (e *Execution) Transitions() int { return int(e.transitions.Load()) }

func (m *Machine) scaled(seconds float64) time.Duration {
	return time.Duration(seconds * m.cfg.WaitScale * float64(time.Second))
}

// run evaluates states; each concurrent branch or iteration has its own,
// with its own context object.
type run struct {
	m      *Machine
	exec   *Execution
	ctxObj map[string]any
}

func (x *run) fork(extra map[string]any) *run {
	obj := make(map[string]any, len(x.ctxObj)+len(extra))
	for k, v := range x.ctxObj {
		obj[k] = v
	}
	for k, v := range extra {
		obj[k] = v
	}
	return &run{m: x.m, exec: x.exec, ctxObj: obj}
}

// abortable lists the state types whose history has a <Type>StateAborted
// event for when they are cut short.
var abortable = map[string]bool{"Task": true, "Wait": true, "Map": true, "Parallel": true}

// scope runs a States scope from StartAt to its end.
func (x *run) scope(ctx context.Context, def *machineDef, input any) (any, error) {
	name := def.StartAt
	for {
		if err := ctx.Err(); err != nil {
			return nil, &stateError{name: "States.Aborted", cause: err.Error()}
		}
		st := def.states[name]
		x.exec.transitions.Add(1)
		if x.m.cfg.OnTransition != nil {
			x.m.cfg.OnTransition()
		}
		if err := x.events(st.Type + "StateEntered"); err != nil {
			return nil, err
		}
		if err := x.checkPayload(input, fmt.Sprintf("the input of state %q", name), true); err != nil {
			return nil, err
		}
		x.ctxObj["State"] = map[string]any{"Name": name, "EnteredTime": x.m.cfg.Clock.Now().UTC().Format(time.RFC3339Nano), "RetryCount": 0.0}
		out, next, err := x.state(ctx, st, input)
		if err == nil {
			err = x.checkPayload(out, fmt.Sprintf("the output of state %q", name), true)
		}
		if err != nil {
			se := asStateError(err)
			if ctx.Err() != nil {
				if abortable[st.Type] {
					x.events(st.Type + "StateAborted") // a full history refuses it; the limit error is already out
				}
				return nil, se
			}
			c := catchFor(st.Catch, se.name)
			if c == nil {
				return nil, se
			}
			x.m.cfg.Log.Info("error caught", "state", name, "error", se.name, "next", c.Next)
			if input, err = applyResultPath(c.ResultPath, input, map[string]any{"Error": se.name, "Cause": se.cause}); err != nil {
				return nil, err
			}
			if err := x.events(st.Type + "StateExited"); err != nil {
				return nil, err
			}
			name = c.Next
			continue
		}
		if err := x.events(st.Type + "StateExited"); err != nil {
			return nil, err
		}
		if next == "" {
			return out, nil
		}
		input, name = out, next
	}
}

// state runs one state and names the next ("" at the end).
func (x *run) state(ctx context.Context, st *state, input any) (any, string, error) {
	switch st.Type {
	case "Fail":
		name, cause := st.Error, st.Cause
		var err error
		if st.ErrorPath != "" {
			if name, err = x.failField(st, "ErrorPath", st.ErrorPath, input); err != nil {
				return nil, "", err
			}
		}
		if st.CausePath != "" {
			if cause, err = x.failField(st, "CausePath", st.CausePath, input); err != nil {
				return nil, "", err
			}
		}
		return nil, "", &stateError{name: name, cause: cause}
	case "Succeed":
		eff, err := x.inputPath(st, input)
		if err != nil {
			return nil, "", err
		}
		out, err := x.outputPath(st, eff)
		return out, "", err
	case "Choice":
		eff, err := x.inputPath(st, input)
		if err != nil {
			return nil, "", err
		}
		next := st.Default
		for _, rule := range st.Choices {
			ok, err := x.matches(rule, eff)
			if err != nil {
				return nil, "", err
			}
			if ok {
				next = rule["Next"].(string)
				break
			}
		}
		if next == "" {
			return nil, "", &stateError{name: "States.NoChoiceMatched", cause: fmt.Sprintf("no choice of %q matched", st.name)}
		}
		out, err := x.outputPath(st, eff)
		return out, next, err
	case "Wait":
		eff, err := x.inputPath(st, input)
		if err != nil {
			return nil, "", err
		}
		if err := x.wait(ctx, st, eff); err != nil {
			return nil, "", err
		}
		out, err := x.outputPath(st, eff)
		return out, st.Next, err
	}
	// Task, Pass, Parallel and Map: the full input and output processing.
	eff, err := x.inputPath(st, input)
	if err != nil {
		return nil, "", err
	}
	var result any
	if st.Type == "Pass" {
		if eff, err = x.parameters(st, eff); err != nil {
			return nil, "", err
		}
		result = eff
		if st.Result != nil {
			result = st.Result
		}
	} else if result, err = x.withRetry(ctx, st, eff); err != nil {
		return nil, "", err
	}
	if st.ResultSelector != nil {
		if result, err = x.template(st.ResultSelector, result); err != nil {
			return nil, "", err
		}
	}
	merged, err := applyResultPath(st.ResultPath, input, result)
	if err != nil {
		return nil, "", err
	}
	out, err := x.outputPath(st, merged)
	if st.End {
		return out, "", err
	}
	return out, st.Next, err
}

// failField resolves a Fail state's ErrorPath or CausePath. The guide: "the
// reference path must select a field that contains a string value"; one
// that selects nothing, or something else, fails the execution with
// States.Runtime, as the service does.
func (x *run) failField(st *state, field, path string, input any) (string, error) {
	v, ok := x.lookup(path, input)
	if !ok {
		return "", &stateError{name: "States.Runtime",
			cause: fmt.Sprintf("the %s %s of Fail state %q selects nothing in the state's input", field, path, st.name)}
	}
	text, ok := v.(string)
	if !ok {
		return "", &stateError{name: "States.Runtime",
			cause: fmt.Sprintf("the %s %s of Fail state %q selects %s, not a string", field, path, st.name, jsonKind(v))}
	}
	return text, nil
}

// jsonKind names the JSON type of a decoded value.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	}
	return "an object"
}

// parameters applies a state's Parameters to its effective input; the
// service refuses the result when it is over the payload quota.
func (x *run) parameters(st *state, eff any) (any, error) {
	if st.Parameters == nil || st.Type == "Map" { // a Map's Parameters are its ItemSelector
		return eff, nil
	}
	in, err := x.template(st.Parameters, eff)
	if err != nil {
		return nil, err
	}
	if err := x.checkPayload(in, fmt.Sprintf("the input of state %q after Parameters", st.name), false); err != nil {
		return nil, err
	}
	return in, nil
}

// withRetry runs the work of a Task, Parallel or Map under its Retry rules.
// Each attempt evaluates the Parameters again: the context object (its
// RetryCount, a new task token) differs between attempts.
func (x *run) withRetry(ctx context.Context, st *state, eff any) (any, error) {
	attempts := make([]int, len(st.Retry))
	for total := 0; ; total++ {
		x.ctxObj["State"].(map[string]any)["RetryCount"] = float64(total)
		var res any
		var err error
		switch st.Type {
		case "Task":
			res, err = x.task(ctx, st, eff)
		case "Parallel":
			res, err = x.parallel(ctx, st, eff)
		case "Map":
			res, err = x.mapItems(ctx, st, eff)
		}
		if err == nil {
			return res, nil
		}
		se := asStateError(err)
		i := retrierFor(st.Retry, se.name)
		if i < 0 || ctx.Err() != nil {
			return nil, se
		}
		r := st.Retry[i]
		maxAttempts := 3
		if r.MaxAttempts != nil {
			maxAttempts = *r.MaxAttempts
		}
		if attempts[i] >= maxAttempts {
			return nil, se
		}
		interval, backoff := 1.0, 2.0
		if r.IntervalSeconds != nil {
			interval = *r.IntervalSeconds
		}
		if r.BackoffRate != nil {
			backoff = *r.BackoffRate
		}
		delay := interval * math.Pow(backoff, float64(attempts[i]))
		if r.MaxDelaySeconds > 0 && delay > r.MaxDelaySeconds {
			delay = r.MaxDelaySeconds
		}
		attempts[i]++
		x.m.cfg.Log.Info("retrying", "state", st.name, "error", se.name, "attempt", attempts[i])
		if err := x.m.sleep(ctx, x.m.scaled(delay)); err != nil {
			return nil, err
		}
	}
}

// task runs one attempt of a Task state: a Lambda function by its ARN, or
// the lambda:invoke integration, which with .waitForTaskToken then waits
// for the answer to the token it handed the function.
func (x *run) task(ctx context.Context, st *state, eff any) (any, error) {
	integration := strings.HasPrefix(st.Resource, "arn:aws:states:::")
	events := "LambdaFunction" // a function ARN; an integration logs Task* events
	if integration {
		events = "Task"
	}
	// ended logs the attempt's last event, unless the history is full.
	ended := func(outcome string, err error) error {
		if herr := x.events(events + outcome); herr != nil {
			return herr
		}
		return err
	}
	var pending *pendingTask
	if st.Resource == lambdaInvokeWait {
		var tok string
		tok, pending = x.m.openTask(x.exec)
		defer x.m.closeTask(tok)
		x.ctxObj["Task"] = map[string]any{"Token": tok}
		defer delete(x.ctxObj, "Task")
	}
	in, err := x.parameters(st, eff)
	if err != nil {
		return nil, err
	}
	fn, payload := st.Resource, in
	if integration {
		params, _ := in.(map[string]any)
		fn, _ = params["FunctionName"].(string)
		payload = params["Payload"]
	}
	raw, err := json.Marshal(payload)
	if err != nil {
		return nil, &stateError{name: "States.Runtime", cause: err.Error()}
	}
	callCtx := ctx
	if st.TimeoutSeconds > 0 {
		var cancel context.CancelFunc
		callCtx, cancel = x.m.withTimeout(ctx, x.m.scaled(float64(st.TimeoutSeconds)))
		defer cancel()
	}
	if err := x.events(events+"Scheduled", events+"Started"); err != nil {
		return nil, err
	}
	var beat *heartbeat // the HeartbeatSeconds clock starts with the attempt
	if pending != nil && st.HeartbeatSeconds > 0 {
		beat = x.m.startHeartbeat(x.m.scaled(float64(st.HeartbeatSeconds)))
		defer func() { beat.stop() }()
	}
	// stopped ends an attempt whose call or wait failed: aborted with the
	// execution, timed out by TimeoutSeconds, or else outcome with failure.
	stopped := func(outcome string, failure error) error {
		switch {
		case ctx.Err() != nil:
			return &stateError{name: "States.Aborted", cause: ctx.Err().Error()}
		case timedOut(callCtx):
			return ended("TimedOut", &stateError{name: "States.Timeout", cause: fmt.Sprintf("task %q timed out", st.name)})
		}
		return ended(outcome, failure)
	}
	// The invocation runs as Lambda runs it, never cancelled by the
	// execution: a state that times out, a failed sibling branch or a
	// stopped execution moves on without it, and what it returns late is
	// discarded. A retry may start while it still runs.
	var out json.RawMessage
	select {
	case r := <-x.m.invoke(ctx, fn, raw):
		out, err = r.out, r.err
	case <-callCtx.Done():
		err = callCtx.Err()
	}
	if err != nil {
		return nil, stopped("Failed", taskError(err))
	}
	if pending != nil {
		if err := x.events("TaskSubmitted"); err != nil {
			return nil, err
		}
		if out, err = x.awaitToken(callCtx, st, pending, beat); err != nil {
			if asStateError(err).name == "States.HeartbeatTimeout" {
				return nil, stopped("TimedOut", err)
			}
			return nil, stopped("Failed", err)
		}
	}
	if len(out) == 0 {
		out = []byte("null")
	}
	var result any
	if err := json.Unmarshal(out, &result); err != nil {
		return nil, ended("Failed", &stateError{name: "States.Runtime", cause: "the task's result is not JSON"})
	}
	if st.Resource == lambdaInvoke {
		result = map[string]any{"Payload": result, "StatusCode": 200.0, "ExecutedVersion": "$LATEST"}
	}
	if err := x.checkPayload(result, fmt.Sprintf("the result of task %q", st.name), false); err != nil {
		return nil, ended("Failed", err)
	}
	return result, ended("Succeeded", nil)
}

// invocation is how one call of a task's function ended.
type invocation struct {
	out json.RawMessage
	err error
}

// errClosed ends the invocations still running when the machine closes.
var errClosed = errors.New("the state machine runner closed")

// invoke starts a call of a task's function and answers how it ended, as
// Lambda runs an invocation: on a context of its own that nothing the
// execution does cancels (ctx lends it only its values). The call ends when
// the function returns, or at the function's timeout (FunctionTimeouts),
// which ends it as Sandbox.Timedout and cancels its context; only Close cuts
// it short otherwise.
func (m *Machine) invoke(ctx context.Context, fn string, input json.RawMessage) <-chan invocation {
	done := make(chan invocation, 1)
	var once sync.Once
	finish := func(r invocation) { once.Do(func() { done <- r }) }
	m.lifeMu.Lock()
	if m.closed {
		m.lifeMu.Unlock()
		finish(invocation{err: &TaskError{Name: "Lambda.ServiceException", Cause: errClosed.Error()}})
		return done
	}
	m.inflight.Add(1)
	m.lifeMu.Unlock()
	callCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stopLife := context.AfterFunc(m.life, func() { cancel(errClosed) })
	fnCtx, stopDeadline := callCtx, context.CancelFunc(func() {})
	stopTimer := func() bool { return false }
	pastTimeout := func() bool { return false }
	var timedOut invocation
	if limit := m.cfg.FunctionTimeouts[fn]; limit > 0 {
		d := m.scaled(limit.Seconds())
		deadline := m.cfg.Clock.Now().Add(d)
		pastTimeout = func() bool { return !m.cfg.Clock.Now().Before(deadline) }
		timedOut = invocation{err: &TaskError{Name: "Sandbox.Timedout",
			Cause: fmt.Sprintf("Task timed out after %.2f seconds", limit.Seconds())}}
		if _, wall := m.cfg.Clock.(wallClock); wall {
			// The handler sees its deadline, as a Lambda handler does.
			fnCtx, stopDeadline = context.WithTimeout(callCtx, d)
		}
		stopTimer = m.cfg.Clock.AfterFunc(d, func() {
			finish(timedOut) // Lambda reports the function it stops
			cancel(context.DeadlineExceeded)
		})
	}
	go func() {
		defer m.inflight.Done()
		defer cancel(context.Canceled)
		defer stopDeadline()
		defer stopLife()
		defer stopTimer()
		out, err := m.call(fnCtx, fn, input)
		if pastTimeout() { // whatever a handler answers at its deadline, Lambda has stopped it
			finish(timedOut)
		}
		finish(invocation{out: out, err: err})
	}()
	return done
}

// call runs a task's function; a panic fails the task as a crashed
// function does.
func (m *Machine) call(ctx context.Context, fn string, input json.RawMessage) (out json.RawMessage, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, &TaskError{Name: "States.TaskFailed", Cause: fmt.Sprintf("the task panicked: %v", r)}
		}
	}()
	return m.cfg.Resources[fn](ctx, input)
}

// Close ends the machine, as the local runtime does when it shuts down: the
// invocations still running see their context end (Step Functions would let
// them run, but the process is going away), and Close returns once every
// one has returned. A task started after Close fails at once. Stop the
// executions first: Close does not.
func (m *Machine) Close() {
	m.closeOnce.Do(func() {
		m.lifeMu.Lock()
		m.closed = true
		m.lifeMu.Unlock()
		m.endLife()
	})
	m.inflight.Wait()
}

// taskError names a task's error the way Lambda reports errorType: the
// TaskError's name, else the Go type name of the returned error.
func taskError(err error) *stateError {
	var te *TaskError
	if errors.As(err, &te) {
		return &stateError{name: te.Name, cause: te.Cause}
	}
	t := reflect.TypeOf(err)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return &stateError{name: t.Name(), cause: err.Error()}
}

// closeAttempt logs how a Parallel's or Map's attempt ended: nothing when
// it was cut short from outside (the state's Aborted event says it).
func (x *run) closeAttempt(ctx context.Context, typ string, err error) error {
	switch {
	case err == nil:
		if herr := x.events(typ + "StateSucceeded"); herr != nil {
			return herr
		}
	case ctx.Err() == nil:
		if herr := x.events(typ + "StateFailed"); herr != nil {
			return herr
		}
	}
	return err
}

func (x *run) parallel(ctx context.Context, st *state, eff any) (any, error) {
	in, err := x.parameters(st, eff)
	if err != nil {
		return nil, err
	}
	if err := x.events("ParallelStateStarted"); err != nil {
		return nil, err
	}
	results := make([]any, len(st.Branches))
	err = concurrently(ctx, len(st.Branches), 0, func(ctx context.Context, i int) error {
		out, err := x.fork(nil).scope(ctx, st.Branches[i], deepCopy(in))
		results[i] = out
		return err
	})
	return results, x.closeAttempt(ctx, "Parallel", err)
}

func (x *run) mapItems(ctx context.Context, st *state, eff any) (any, error) {
	var items any = eff
	if st.Items != nil {
		var err error
		if items, err = x.template(map[string]any{"v": st.Items}, eff); err != nil {
			return nil, err
		}
		items = items.(map[string]any)["v"]
	} else if st.ItemsPath != "" {
		v, ok := x.lookup(st.ItemsPath, eff)
		if !ok {
			return nil, &stateError{name: "States.Runtime", cause: fmt.Sprintf("ItemsPath %s matched nothing", st.ItemsPath)}
		}
		items = v
	}
	list, ok := items.([]any)
	if !ok {
		return nil, &stateError{name: "States.Runtime", cause: fmt.Sprintf("the items of %q are not an array", st.name)}
	}
	proc := st.ItemProcessor
	if proc == nil {
		proc = st.Iterator
	}
	selector := st.ItemSelector
	if selector == nil {
		selector = st.Parameters
	}
	if err := x.events("MapStateStarted"); err != nil {
		return nil, err
	}
	results := make([]any, len(list))
	err := concurrently(ctx, len(list), st.MaxConcurrency, func(ctx context.Context, i int) error {
		if err := x.events("MapIterationStarted"); err != nil {
			return err
		}
		out, err := x.iteration(ctx, st, proc, selector, eff, list, i)
		outcome := "MapIterationSucceeded"
		if err != nil {
			outcome = "MapIterationFailed"
			if ctx.Err() != nil { // another iteration failed, or the execution ended
				outcome = "MapIterationAborted"
			}
		}
		if herr := x.events(outcome); herr != nil {
			return herr
		}
		results[i] = out
		return err
	})
	return results, x.closeAttempt(ctx, "Map", err)
}

// iteration runs item i of a Map through its processor; its input and
// output are held to the payload quota like a state's.
func (x *run) iteration(ctx context.Context, st *state, proc *machineDef, selector, eff any, list []any, i int) (any, error) {
	xi := x.fork(map[string]any{"Map": map[string]any{"Item": map[string]any{"Index": float64(i), "Value": list[i]}}})
	in := deepCopy(list[i])
	if selector != nil {
		var err error
		if in, err = xi.template(selector, eff); err != nil {
			return nil, err
		}
	}
	if err := x.checkPayload(in, fmt.Sprintf("the input of iteration %d of %q", i, st.name), true); err != nil {
		return nil, err
	}
	out, err := xi.scope(ctx, proc, in)
	if err != nil {
		return nil, err
	}
	if err := x.checkPayload(out, fmt.Sprintf("the output of iteration %d of %q", i, st.name), true); err != nil {
		return nil, err
	}
	return out, nil
}

// concurrently runs n jobs, at most limit at once (0: no limit); the first
// error cancels the others and is returned. The others' states end at once;
// the functions they invoked run on (invoke).
func concurrently(ctx context.Context, n, limit int, job func(context.Context, int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if limit <= 0 || limit > n {
		limit = n
	}
	slots := make(chan struct{}, max(limit, 1))
	var (
		wg       sync.WaitGroup
		once     sync.Once
		firstErr error
	)
	for i := 0; i < n; i++ {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			if err := job(ctx, i); err != nil {
				once.Do(func() { firstErr = err; cancel() })
			}
		}()
	}
	wg.Wait()
	if firstErr == nil && ctx.Err() != nil {
		return &stateError{name: "States.Aborted", cause: ctx.Err().Error()}
	}
	return firstErr
}

func (x *run) wait(ctx context.Context, st *state, eff any) error {
	var d time.Duration
	switch {
	case st.Seconds != nil:
		d = x.m.scaled(*st.Seconds)
	case st.SecondsPath != "":
		v, ok := x.lookup(st.SecondsPath, eff)
		secs, isNum := v.(float64)
		if !ok || !isNum || secs < 0 {
			return &stateError{name: "States.Runtime", cause: fmt.Sprintf("SecondsPath %s is not a non-negative number", st.SecondsPath)}
		}
		d = x.m.scaled(secs)
	default:
		ts := st.Timestamp
		if st.TimestampPath != "" {
			v, _ := x.lookup(st.TimestampPath, eff)
			ts, _ = v.(string)
		}
		t, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil {
			return &stateError{name: "States.Runtime", cause: fmt.Sprintf("timestamp %q: %v", ts, err)}
		}
		d = time.Duration(float64(t.Sub(x.m.cfg.Clock.Now())) * x.m.cfg.WaitScale)
	}
	return x.m.sleep(ctx, d)
}

func asStateError(err error) *stateError {
	var se *stateError
	if errors.As(err, &se) {
		return se
	}
	return &stateError{name: "States.Runtime", cause: err.Error()}
}

// errorMatches applies the ErrorEquals rules: names match exactly;
// States.ALL matches every error and States.TaskFailed every task failure
// but a timeout; States.Timeout also matches a heartbeat timeout (the
// guide: a task "failed to send a heartbeat for a time longer than the
// HeartbeatSeconds value"). States.Runtime and States.DataLimitExceeded are
// terminal: never retried or caught, not even by States.ALL.
func errorMatches(equals []string, name string) bool {
	if name == "States.Runtime" || name == "States.DataLimitExceeded" {
		return false
	}
	for _, e := range equals {
		switch {
		case e == name, e == "States.ALL":
			return true
		case e == "States.Timeout" && name == "States.HeartbeatTimeout":
			return true
		case e == "States.TaskFailed" && (name == "States.TaskFailed" || !strings.HasPrefix(name, "States.")):
			return true
		}
	}
	return false
}

func retrierFor(rs []retrier, name string) int {
	for i, r := range rs {
		if errorMatches(r.ErrorEquals, name) {
			return i
		}
	}
	return -1
}

func catchFor(cs []catcher, name string) *catcher {
	for i := range cs {
		if errorMatches(cs[i].ErrorEquals, name) {
			return &cs[i]
		}
	}
	return nil
}
