package stepfunctions

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Step Functions' hard quotas (Step Functions developer guide, "Service
// quotas"; API reference: every input and output field of the history
// events has "Maximum length of 262144", "bytes in UTF-8 encoding").
const (
	// MaxPayloadBytes bounds every state's input and output, each Map
	// iteration's, the execution's input and SendTaskSuccess's output.
	MaxPayloadBytes = 256 * 1024
	// MaxHistoryEvents bounds an execution's history ("Avoid reaching the
	// history quota": a hard quota of 25,000 entries).
	MaxHistoryEvents = 25000
)

// ErrDataLimitExceeded refuses a request whose payload is over
// MaxPayloadBytes, as StartExecution and SendTaskSuccess refuse it.
var ErrDataLimitExceeded = errors.New("payload over 262144 bytes (States.DataLimitExceeded)")

// errHistoryLimit is the cause given to an execution's context when its
// history is full, so that every branch still running stops.
var errHistoryLimit = errors.New("history limit")

// historyLimitCause is what AWS reports (error States.Runtime) when an
// execution runs out of history events.
const historyLimitCause = "The execution reached the maximum number of history events (25000)."

// payloadSize is the size of v as the service serialises it: JSON text
// without Go's HTML escaping, which would count "<" as six bytes.
func payloadSize(v any) (int, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return 0, err
	}
	return b.Len() - 1, nil // Encode ends the text with a newline
}

// checkPayload fails with States.DataLimitExceeded when v is over the quota;
// carried says v is a state's (or iteration's) input or output, which
// MaxPayloadBytes reports.
func (x *run) checkPayload(v any, what string, carried bool) error {
	n, err := payloadSize(v)
	if err != nil {
		return &stateError{name: "States.Runtime", cause: fmt.Sprintf("%s: %v", what, err)}
	}
	if carried {
		x.exec.notePayload(n)
	}
	if n > MaxPayloadBytes {
		return &stateError{name: "States.DataLimitExceeded",
			cause: fmt.Sprintf("%s is %d bytes, over the quota of %d", what, n, MaxPayloadBytes)}
	}
	return nil
}

func (e *Execution) notePayload(n int) {
	for {
		cur := e.maxPayload.Load()
		if int64(n) <= cur || e.maxPayload.CompareAndSwap(cur, int64(n)) {
			return
		}
	}
}

// History events, counted as GetExecutionHistory lists them (HistoryEvent
// types in the API reference; sequences checked against histories recorded
// from AWS):
//
//   - the execution: ExecutionStarted, then one of ExecutionSucceeded,
//     ExecutionFailed, ExecutionTimedOut, ExecutionAborted;
//   - every state: <Type>StateEntered; <Type>StateExited when it ends well
//     or its error is caught (none when the error fails the execution; a
//     Fail state has no Exited); <Type>StateAborted when a Task, Wait, Map
//     or Parallel is cut short (the execution stopped or timed out, or a
//     sibling branch or iteration failed);
//   - a Task on a Lambda function ARN, per attempt: LambdaFunctionScheduled,
//     LambdaFunctionStarted, LambdaFunctionSucceeded | LambdaFunctionFailed |
//     LambdaFunctionTimedOut;
//   - a Task on a service integration (lambda:invoke), per attempt:
//     TaskScheduled, TaskStarted, TaskSucceeded | TaskFailed | TaskTimedOut;
//     with .waitForTaskToken, TaskSubmitted once the invocation returned,
//     before the outcome sent for the token (a heartbeat adds no event);
//   - Parallel, per attempt: ParallelStateStarted, the branches' states,
//     ParallelStateSucceeded | ParallelStateFailed;
//   - inline Map, per attempt: MapStateStarted; per iteration started
//     MapIterationStarted, its states, MapIterationSucceeded |
//     MapIterationFailed | MapIterationAborted; MapStateSucceeded |
//     MapStateFailed;
//   - Pass, Wait, Choice, Succeed: Entered and Exited only; a Retry adds no
//     event of its own, only its attempt's.
//
// The quota ("Avoid reaching the history quota"): non-final events may
// take ids up to 24,999; event 25,000 may only be ExecutionSucceeded,
// otherwise ExecutionFailed is logged as event 25,000 and the execution
// fails. The error is States.Runtime with the cause historyLimitCause (the
// guide does not name it; that is what executions report), so no Retry or
// Catch sees it.
func (x *run) events(types ...string) error {
	e := x.exec
	e.histMu.Lock()
	defer e.histMu.Unlock()
	if e.historyFull {
		return historyLimitError()
	}
	if len(e.history)+len(types) > MaxHistoryEvents-1 {
		e.history = append(e.history, types[:MaxHistoryEvents-1-len(e.history)]...)
		e.historyFull = true
		e.cancel(errHistoryLimit)
		return historyLimitError()
	}
	e.history = append(e.history, types...)
	return nil
}

func historyLimitError() error {
	return &stateError{name: "States.Runtime", cause: historyLimitCause}
}

// endEvent logs the execution's last event, which the quota always admits.
func (e *Execution) endEvent(typ string) {
	e.histMu.Lock()
	defer e.histMu.Unlock()
	e.history = append(e.history, typ)
}

// HistoryEvents counts the events of the execution's history so far.
func (e *Execution) HistoryEvents() int {
	e.histMu.Lock()
	defer e.histMu.Unlock()
	return len(e.history)
}

// historyTypes copies the event types logged so far (tests compare them
// with histories AWS shows).
func (e *Execution) historyTypes() []string {
	e.histMu.Lock()
	defer e.histMu.Unlock()
	return append([]string(nil), e.history...)
}

// MaxPayloadBytes is the size of the largest input or output of a state,
// an iteration or the execution that the execution carried.
func (e *Execution) MaxPayloadBytes() int { return int(e.maxPayload.Load()) }
