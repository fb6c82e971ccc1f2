package lambdastack

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/local/stepfunctions"
)

// Close ends the state machines' runners after the functions: it returns
// only once no task's invocation still runs, and an execution asked for
// while the stack closes is refused, not started.
func TestCloseEndsTheRunnersAndRefusesNewExecutions(t *testing.T) {
	const fn = "arn:aws:lambda:" + region + ":" + accountID + ":function:held"
	running := make(chan struct{})
	var returned atomic.Bool
	held := func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
		close(running)
		<-ctx.Done() // as an invocation that outlives its execution
		returned.Store(true)
		return nil, ctx.Err()
	}
	definition := `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"` + fn + `","End":true}}}`
	s := &Stack{cfg: Config{Log: slog.New(slog.DiscardHandler)}}
	m, err := stepfunctions.Load("held", []byte(definition), stepfunctions.Config{
		Resources: map[string]stepfunctions.TaskFunc{fn: held}, Log: s.cfg.Log})
	if err != nil {
		t.Fatal(err)
	}
	sm := &StateMachine{Logical: "Held", ARN: "arn:aws:states:" + region + ":" + accountID + ":stateMachine:held",
		stack: s, machine: m, executions: map[string]*execution{}}
	s.machines = map[string]*StateMachine{sm.Logical: sm}
	if _, err := sm.start(context.Background(), "first", nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-running:
	case <-time.After(time.Minute):
		t.Fatal("the task never ran")
	}
	s.Close()
	if !returned.Load() {
		t.Error("Close returned while a task's invocation still ran")
	}
	_, err = sm.start(context.Background(), "after-close", nil)
	var se *sfnError
	if !errors.As(err, &se) || se.code != "ServiceUnavailable" {
		t.Errorf("StartExecution on a closed stack answered %v, want ServiceUnavailable", err)
	}
	if _, _, ok := sm.Execution("after-close"); ok {
		t.Error("a closed stack started an execution")
	}
}
