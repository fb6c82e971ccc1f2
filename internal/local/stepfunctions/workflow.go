package stepfunctions

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/aws/aws-lambda-go/lambda"
)

// Handler adapts a Lambda handler function (any signature lambda.Start
// accepts) to a TaskFunc, through aws-lambda-go's own reflection, so a task
// runs exactly the code its function runs in AWS. Each call gets its own
// handler, as concurrent invocations get their own Lambda instances: the
// library's handler reuses its output buffer between calls.
func Handler(fn any) TaskFunc {
	return func(ctx context.Context, input json.RawMessage) (json.RawMessage, error) {
		out, err := lambda.NewHandler(fn).Invoke(ctx, input)
		return bytes.Clone(out), err
	}
}

// Workflow starts executions of one machine the way Step Functions does:
// starting the same name again does not start a second execution.
type Workflow struct {
	Machine *Machine

	mu         sync.Mutex
	executions map[string]*Execution
}

// Start starts an execution named name, once.
func (w *Workflow) Start(ctx context.Context, name string, input []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.executions == nil {
		w.executions = map[string]*Execution{}
	}
	if _, ok := w.executions[name]; ok {
		return nil
	}
	e, err := w.Machine.Start(ctx, name, input)
	if err != nil {
		return fmt.Errorf("start execution %s: %w", name, err)
	}
	w.executions[name] = e
	return nil
}

// Execution finds a started execution.
func (w *Workflow) Execution(name string) (*Execution, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	e, ok := w.executions[name]
	return e, ok
}

// StopAll aborts every running execution (at shutdown).
func (w *Workflow) StopAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range w.executions {
		e.Stop()
	}
}

// Close shuts the workflow down: it stops every execution, waits for each
// to end, then closes the machine, which ends the invocations still running
// and waits for them (Machine.Close), so that none outlives what its
// handler uses.
func (w *Workflow) Close() {
	w.StopAll()
	w.mu.Lock()
	executions := make([]*Execution, 0, len(w.executions))
	for _, e := range w.executions {
		executions = append(executions, e)
	}
	w.mu.Unlock()
	for _, e := range executions {
		<-e.Done()
	}
	w.Machine.Close()
}

// Stop aborts the named execution, as StopExecution does; an unknown or
// finished one is left alone.
func (w *Workflow) Stop(_ context.Context, name, _ string) error {
	if e, ok := w.Execution(name); ok {
		e.Stop()
	}
	return nil
}

// SendTaskSuccess answers a .waitForTaskToken task, as the service's
// SendTaskSuccess does; see Machine.SendTaskSuccess.
func (w *Workflow) SendTaskSuccess(ctx context.Context, token string, output json.RawMessage) error {
	return w.Machine.SendTaskSuccess(ctx, token, output)
}

// SendTaskFailure fails a .waitForTaskToken task; see Machine.SendTaskFailure.
func (w *Workflow) SendTaskFailure(ctx context.Context, token, errorName, cause string) error {
	return w.Machine.SendTaskFailure(ctx, token, errorName, cause)
}

// SendTaskHeartbeat restarts a task's heartbeat clock; see
// Machine.SendTaskHeartbeat.
func (w *Workflow) SendTaskHeartbeat(ctx context.Context, token string) error {
	return w.Machine.SendTaskHeartbeat(ctx, token)
}
