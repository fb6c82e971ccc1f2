package asl

import (
	"errors"
	"fmt"
	"reflect"
)

// Error names of the States Language and of Step Functions.
const (
	ErrALL                    = "States.ALL"
	ErrTaskFailed             = "States.TaskFailed"
	ErrTimeout                = "States.Timeout"
	ErrRuntime                = "States.Runtime"
	ErrNoChoiceMatched        = "States.NoChoiceMatched"
	ErrResultPathMatchFailure = "States.ResultPathMatchFailure"
	ErrIntrinsicFailure       = "States.IntrinsicFailure"
	ErrDataLimitExceeded      = "States.DataLimitExceeded"
	ErrAborted                = "States.Aborted"
)

// TaskError fails a task with a named error, like a Lambda errorType.
type TaskError struct{ Name, Cause string }

func (e *TaskError) Error() string {
	if e.Cause == "" {
		return e.Name
	}
	return e.Name + ": " + e.Cause
}

// ExecutionError is how an execution ended when it did not succeed: the
// error and cause that Step Functions reports for the execution.
//
// Its fields are Name and Cause, not Error and Cause: a Go type cannot have
// both a field and a method named Error, and this type is the error that
// Execution.Wait returns, so errors.As finds it.
type ExecutionError struct{ Name, Cause string }

func (e *ExecutionError) Error() string {
	if e.Cause == "" {
		return e.Name
	}
	return e.Name + ": " + e.Cause
}

// failure is an error raised by a state while the execution runs.
type failure struct{ Name, Cause string }

func (f *failure) Error() string { return f.Name + ": " + f.Cause }

func runtimeError(format string, args ...any) *failure {
	return &failure{Name: ErrRuntime, Cause: fmt.Sprintf(format, args...)}
}

// taskFailure names a TaskFunc's error the way aws-lambda-go reports a
// handler's errorType: a *TaskError's Name, else the Go type name of the
// returned error with the pointer stripped ("errorString" for errors.New).
func taskFailure(err error) *failure {
	var te *TaskError
	if errors.As(err, &te) {
		return &failure{Name: te.Name, Cause: te.Cause}
	}
	t := reflect.TypeOf(err)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	name := t.Name()
	if name == "" {
		name = ErrTaskFailed
	}
	return &failure{Name: name, Cause: err.Error()}
}

// terminal errors end the execution: no Retry or Catch ever matches them.
func terminal(name string) bool {
	return name == ErrRuntime || name == ErrDataLimitExceeded || name == ErrAborted
}

// matchesError applies a retrier's or catcher's ErrorEquals: names match
// exactly; States.ALL matches any error but the terminal ones; and
// States.TaskFailed matches any of those except States.Timeout.
func matchesError(equals []string, name string) bool {
	if terminal(name) {
		return false
	}
	for _, e := range equals {
		switch {
		case e == name:
			return true
		case e == ErrALL:
			return true
		case e == ErrTaskFailed && name != ErrTimeout:
			return true
		}
	}
	return false
}
