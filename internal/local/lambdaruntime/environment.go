package lambdaruntime

import (
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// The error types Lambda reports for an invocation that its function did
// not answer itself, and for a payload it refuses.
const (
	// ErrorTypeTimedOut: the function ran past its timeout and its
	// environment was stopped (Step Functions sees Sandbox.Timedout; older
	// runtimes reported Lambda.Unknown).
	ErrorTypeTimedOut = "Sandbox.Timedout"
	// ErrorTypeExit: the process exited (a crash, os.Exit, a kill) before
	// it answered.
	ErrorTypeExit = "Runtime.ExitError"
	// ErrorTypeRequestTooLarge: the invoke's payload is over 6 MB; the
	// function is not invoked (the Invoke API's 413).
	errorTypeRequestTooLarge = "RequestEntityTooLargeException"
)

// MaxRequestBytes is Lambda's limit on a synchronous invocation's request
// payload (the response's is MaxResponseBytes).
const maxRequestBytes = 6 << 20

// ErrRequestTooLarge is returned by Invoke for a payload Lambda refuses.
var ErrRequestTooLarge = errors.New(errorTypeRequestTooLarge + ": the request payload is over 6 MB")

// Environment is one execution environment of a function: its process,
// started once, and its Runtime API, which hands it one event at a time,
// as Lambda keeps an environment warm between invocations. Lambda's rules
// that the process cannot apply itself are applied here: past the
// function's timeout the process is killed and the invocation answered
// Sandbox.Timedout; a process that exits before answering answers
// Runtime.ExitError; after either the environment is dead and a new one
// must be started. Memory is passed on (AWS_LAMBDA_FUNCTION_MEMORY_SIZE)
// but not enforced.
type Environment struct {
	fn  Function
	srv *server
	cmd *exec.Cmd
	log io.Writer

	exited  chan struct{} // closed when the process ended
	exitErr error

	mu   sync.Mutex
	dead bool
}

// StartEnvironment starts fn's process behind a Runtime API of its own and
// waits for its init (at most InitTimeout): the cold start. An init that
// fails, exits or takes too long is an error whose *FunctionError, when
// errors.As finds one, is what Lambda reports to the invoker.
func startEnvironment(fn Function) (*Environment, error) {
	timeout := fn.Timeout
	if timeout <= 0 {
		timeout = 3 * time.Second
	}
	srv, err := start(options{FunctionName: fn.Name, Region: fn.Region, AccountID: fn.AccountID, Timeout: timeout})
	if err != nil {
		return nil, err
	}
	e := &Environment{fn: fn, srv: srv, exited: make(chan struct{}), log: fn.Logs}
	if e.log == nil {
		e.log = io.Discard
	}
	cmd := exec.Command(fn.Bootstrap)
	cmd.Dir = fn.taskRoot()
	cmd.Env = fn.Environment(srv.Addr())
	cmd.Stdout, cmd.Stderr = e.log, e.log
	// Its own process group, so that a kill ends the function and nothing
	// else.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		srv.Close()
		return nil, fmt.Errorf("start %s: %w", fn.Bootstrap, err)
	}
	e.cmd = cmd
	go func() {
		e.exitErr = cmd.Wait()
		close(e.exited)
	}()
	limit := time.NewTimer(initTimeout)
	defer limit.Stop()
	select {
	case <-srv.InitDone():
		if fe := srv.InitError(); fe != nil {
			e.Close()
			return nil, fmt.Errorf("%s: init failed: %w", fn.Name, fe)
		}
		return e, nil
	case <-e.exited:
		srv.Close()
		return nil, fmt.Errorf("%s: %w", fn.Name, &FunctionError{Type: ErrorTypeExit,
			Message: fmt.Sprintf("Runtime exited with error: %v (during init)", e.exitErr)})
	case <-limit.C:
		e.Close()
		return nil, fmt.Errorf("%s: %w", fn.Name, &FunctionError{Type: ErrorTypeTimedOut,
			Message: fmt.Sprintf("init did not finish in %s", initTimeout)})
	}
}

// Invoke hands the environment one event and waits for its answer, the
// function's timeout or the process's exit, whichever comes first; a
// caller that stops waiting does not stop the invocation, as on Lambda.
// The result's Err is the function's error, or the one Lambda reports in
// its name (ErrorTypeTimedOut, ErrorTypeExit). The returned error is
// ErrRequestTooLarge for a payload over 6 MB, or says the environment is
// dead; either way the function was not invoked.
func (e *Environment) Invoke(payload []byte) (*Invocation, error) {
	return e.InvokeTraced(payload, "")
}

// InvokeTraced is Invoke with the event's X-Ray trace header (see
// Server.EnqueueTraced).
func (e *Environment) InvokeTraced(payload []byte, traceID string) (*Invocation, error) {
	if len(payload) > maxRequestBytes {
		return nil, ErrRequestTooLarge
	}
	e.mu.Lock()
	if e.dead {
		e.mu.Unlock()
		return nil, errors.New(e.fn.Name + ": the execution environment is stopped")
	}
	e.mu.Unlock()
	timeout := e.fn.Timeout
	if timeout <= 0 {
		timeout = 3 * time.Second
	}
	inv := e.srv.EnqueueTraced(payload, traceID)
	start := time.Now()
	fmt.Fprintf(e.log, "START RequestId: %s Version: $LATEST\n", inv.RequestID)
	limit := time.NewTimer(timeout)
	defer limit.Stop()
	select {
	case <-inv.Done():
	case <-limit.C:
		e.kill()
		e.srv.finish(inv, nil, "", &FunctionError{Type: ErrorTypeTimedOut,
			Message: fmt.Sprintf("RequestId: %s Error: Task timed out after %.2f seconds", inv.RequestID, timeout.Seconds())})
	case <-e.exited:
		e.markDead()
		e.srv.finish(inv, nil, "", &FunctionError{Type: ErrorTypeExit,
			Message: fmt.Sprintf("RequestId: %s Error: Runtime exited with error: %v", inv.RequestID, e.exitErr)})
	}
	status := "ok"
	if inv.Err != nil {
		status = inv.Err.Type
		if status == "" {
			status = inv.Err.HeaderType
		}
	}
	fmt.Fprintf(e.log, "END RequestId: %s\nREPORT RequestId: %s Duration: %.2f ms Memory Size: %d MB Status: %s\n",
		inv.RequestID, inv.RequestID, float64(time.Since(start).Microseconds())/1000, e.fn.memoryMB(), status)
	return inv, nil
}

// Dead reports whether the environment was stopped (a timeout, an exit,
// Close): it takes no more events.
func (e *Environment) Dead() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.dead
}

// PID is the process's id.
func (e *Environment) PID() int { return e.cmd.Process.Pid }

// Exited is closed when the process has ended.
func (e *Environment) Exited() <-chan struct{} { return e.exited }

// Close stops the process and the Runtime API.
func (e *Environment) Close() {
	e.kill()
	e.srv.Close()
}

func (e *Environment) markDead() {
	e.mu.Lock()
	e.dead = true
	e.mu.Unlock()
}

// kill ends the process group and waits for the process's end.
func (e *Environment) kill() {
	e.markDead()
	if e.cmd == nil || e.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-e.cmd.Process.Pid, syscall.SIGKILL)
	<-e.exited
}
