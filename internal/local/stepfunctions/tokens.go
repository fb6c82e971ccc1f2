package stepfunctions

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
)

// The errors of SendTaskSuccess, SendTaskFailure and SendTaskHeartbeat, as
// the API reference names them.
var (
	// ErrTaskDoesNotExist: no task was ever given this token.
	ErrTaskDoesNotExist = errors.New("TaskDoesNotExist: no task has this token")
	// ErrTaskTimedOut: "The task token has either expired or the task
	// associated with the token has already been closed" — it timed out,
	// ended, was answered already or its execution was stopped.
	ErrTaskTimedOut = errors.New("TaskTimedOut: the task of this token is closed")
	// ErrInvalidOutput: the output sent is not JSON.
	ErrInvalidOutput = errors.New("InvalidOutput: the output is not valid JSON")
	// ErrInvalidToken: the token is empty or longer than the API allows.
	ErrInvalidToken = errors.New("InvalidToken: the token is not valid")
)

// maxTokenLength is the API's length constraint on taskToken.
const maxTokenLength = 2048

// pendingTask is one attempt of a .waitForTaskToken task, reachable by its
// token until the attempt ends; closed tokens stay as tombstones so that a
// late answer is told TaskTimedOut, not TaskDoesNotExist.
type pendingTask struct {
	exec      *Execution
	result    chan tokenResult // holds the one answer a token gets
	heartbeat chan struct{}
	closed    bool
}

type tokenResult struct {
	output       json.RawMessage
	failed       bool
	errName, why string
}

// newToken is random and unguessable, like the service's opaque tokens.
func newToken() string {
	b := make([]byte, 48)
	rand.Read(b) // never fails (crypto/rand since Go 1.24)
	return base64.RawURLEncoding.EncodeToString(b)
}

// openTask issues a token for an attempt of a task of e; it is valid at
// once, before the Lambda that carries it is even invoked.
func (m *Machine) openTask(e *Execution) (string, *pendingTask) {
	p := &pendingTask{exec: e, result: make(chan tokenResult, 1), heartbeat: make(chan struct{}, 1)}
	tok := newToken()
	m.tokMu.Lock()
	defer m.tokMu.Unlock()
	if m.tokens == nil {
		m.tokens = map[string]*pendingTask{}
	}
	m.tokens[tok] = p
	return tok, p
}

func (m *Machine) closeTask(tok string) {
	m.tokMu.Lock()
	defer m.tokMu.Unlock()
	if p := m.tokens[tok]; p != nil {
		p.closed = true
	}
}

// closeTasksOf closes every token of e (StopExecution).
func (m *Machine) closeTasksOf(e *Execution) {
	m.tokMu.Lock()
	defer m.tokMu.Unlock()
	for _, p := range m.tokens {
		if p.exec == e {
			p.closed = true
		}
	}
}

// HasTask reports whether the machine ever issued token (open or closed):
// the Step Functions API authorizes a Send* call against the state machine
// that issued its token, before it applies it.
func (m *Machine) HasTask(token string) bool {
	m.tokMu.Lock()
	defer m.tokMu.Unlock()
	_, ok := m.tokens[token]
	return ok
}

// answer applies f to the open task of tok under the lock.
func (m *Machine) answer(tok string, f func(*pendingTask)) error {
	if tok == "" || len(tok) > maxTokenLength {
		return ErrInvalidToken
	}
	m.tokMu.Lock()
	defer m.tokMu.Unlock()
	p := m.tokens[tok]
	switch {
	case p == nil:
		return ErrTaskDoesNotExist
	case p.closed:
		return ErrTaskTimedOut
	}
	f(p)
	return nil
}

// SendTaskSuccess completes the task waiting on token: its result is
// output itself. The call is refused, and the task keeps waiting, when
// output is over MaxPayloadBytes or not JSON.
func (m *Machine) SendTaskSuccess(_ context.Context, token string, output json.RawMessage) error {
	if len(output) > MaxPayloadBytes {
		return fmt.Errorf("send task success: output of %d bytes: %w", len(output), ErrDataLimitExceeded)
	}
	if !json.Valid(output) {
		return fmt.Errorf("send task success: %w", ErrInvalidOutput)
	}
	out := append(json.RawMessage(nil), output...)
	err := m.answer(token, func(p *pendingTask) {
		p.closed = true // a token takes one answer
		p.result <- tokenResult{output: out}
	})
	if err != nil {
		return fmt.Errorf("send task success: %w", err)
	}
	return nil
}

// SendTaskFailure fails the task waiting on token with errorName, which
// its Retry and Catch match by name.
func (m *Machine) SendTaskFailure(_ context.Context, token, errorName, cause string) error {
	err := m.answer(token, func(p *pendingTask) {
		p.closed = true
		p.result <- tokenResult{failed: true, errName: errorName, why: cause}
	})
	if err != nil {
		return fmt.Errorf("send task failure: %w", err)
	}
	return nil
}

// SendTaskHeartbeat restarts the HeartbeatSeconds clock of the task
// waiting on token.
func (m *Machine) SendTaskHeartbeat(_ context.Context, token string) error {
	err := m.answer(token, func(p *pendingTask) {
		select {
		case p.heartbeat <- struct{}{}:
		default: // one pending beat resets the clock as well as several
		}
	})
	if err != nil {
		return fmt.Errorf("send task heartbeat: %w", err)
	}
	return nil
}

// awaitToken waits for the answer to p. ctx carries the task's
// TimeoutSeconds; heartbeat (0: none) is the HeartbeatSeconds clock, which
// started with the attempt.
func (x *run) awaitToken(ctx context.Context, st *state, p *pendingTask, beat *heartbeat) (json.RawMessage, error) {
	for {
		select {
		case r := <-p.result:
			if r.failed {
				return nil, &stateError{name: r.errName, cause: r.why}
			}
			return r.output, nil
		case <-p.heartbeat:
			if beat != nil {
				beat.reset()
			}
		case <-beat.expiredChan():
			return nil, &stateError{name: "States.HeartbeatTimeout",
				cause: fmt.Sprintf("task %q sent no heartbeat for %d seconds", st.name, st.HeartbeatSeconds)}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
