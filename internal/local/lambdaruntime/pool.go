package lambdaruntime

import (
	"context"
	"errors"
	"sync"
)

// ErrThrottled is Lambda's answer to an invoke of a function whose
// reserved concurrency is all in use.
var ErrThrottled = errors.New("TooManyRequestsException: Rate Exceeded. (the function's reserved concurrency is in use)")

// DefaultMaxEnvironments bounds the environments of a function without a
// reservation on this machine: Lambda would start up to the account's
// concurrency, one machine cannot.
const defaultMaxEnvironments = 4

// Pool is one function as the Lambda service runs it: an execution
// environment is started when an invoke finds none idle (a cold start),
// kept for the next invoke when it answered, and dropped when it timed out
// or its process exited.
type Pool struct {
	Fn Function
	// Reserved is the function's reserved concurrency (0: none). With one,
	// an invoke while that many run is throttled (ErrThrottled), as Lambda
	// throttles it.
	Reserved int
	// MaxEnvironments bounds the concurrent environments of a function
	// without a reservation (default DefaultMaxEnvironments); an invoke
	// past it waits for one to be free.
	MaxEnvironments int
	// OnStart, when set, is told of each new environment (its process id).
	OnStart func(*Environment)

	once        sync.Once
	slots       chan struct{}
	mu          sync.Mutex
	idle        []*Environment
	all         map[*Environment]bool
	invocations int
	closed      bool
}

func (p *Pool) init() {
	p.once.Do(func() {
		n := p.Reserved
		if n <= 0 {
			n = p.MaxEnvironments
		}
		if n <= 0 {
			n = defaultMaxEnvironments
		}
		p.slots = make(chan struct{}, n)
		p.all = map[*Environment]bool{}
	})
}

// Invoke runs one invocation in an idle environment or a new one. The
// error is not nil when the function was not invoked or did not start: a
// payload over 6 MB (ErrRequestTooLarge), a throttle (ErrThrottled), ctx
// ending while waiting for a free environment, or a failed init (wrapping
// the *FunctionError Lambda reports for it). A function's own error, a
// timeout and a crash are in the invocation's Err.
func (p *Pool) Invoke(ctx context.Context, payload []byte) (*Invocation, error) {
	return p.InvokeTraced(ctx, payload, "")
}

// InvokeTraced is Invoke with the event's X-Ray trace header (see
// Server.EnqueueTraced).
func (p *Pool) InvokeTraced(ctx context.Context, payload []byte, traceID string) (*Invocation, error) {
	p.init()
	if len(payload) > maxRequestBytes {
		return nil, ErrRequestTooLarge
	}
	if p.Reserved > 0 {
		select {
		case p.slots <- struct{}{}:
		default:
			return nil, ErrThrottled
		}
	} else {
		select {
		case p.slots <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	defer func() { <-p.slots }()

	env, err := p.take()
	if err != nil {
		return nil, err
	}
	inv, err := env.InvokeTraced(payload, traceID)
	p.put(env)
	return inv, err
}

// take pops an idle environment or starts one.
func (p *Pool) take() (*Environment, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errors.New(p.Fn.Name + ": the function is stopped")
	}
	p.invocations++
	for len(p.idle) > 0 {
		env := p.idle[len(p.idle)-1]
		p.idle = p.idle[:len(p.idle)-1]
		if !env.Dead() {
			p.mu.Unlock()
			return env, nil
		}
		delete(p.all, env)
	}
	p.mu.Unlock()
	env, err := startEnvironment(p.Fn)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		env.Close()
		return nil, errors.New(p.Fn.Name + ": the function is stopped")
	}
	p.all[env] = true
	p.mu.Unlock()
	if p.OnStart != nil {
		p.OnStart(env)
	}
	return env, nil
}

// put keeps a live environment for the next invoke.
func (p *Pool) put(env *Environment) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if env.Dead() || p.closed {
		delete(p.all, env)
		if !env.Dead() {
			env.Close()
		}
		return
	}
	p.idle = append(p.idle, env)
}

// Invocations is how many invokes reached the function (started or not).
func (p *Pool) Invocations() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.invocations
}

// Environments are the live environments, idle or busy.
func (p *Pool) Environments() []*Environment {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*Environment
	for env := range p.all {
		if !env.Dead() {
			out = append(out, env)
		}
	}
	return out
}

// Close stops every environment; invokes after it fail.
func (p *Pool) Close() {
	p.init()
	p.mu.Lock()
	p.closed = true
	envs := make([]*Environment, 0, len(p.all))
	for env := range p.all {
		envs = append(envs, env)
	}
	p.all = map[*Environment]bool{}
	p.idle = nil
	p.mu.Unlock()
	for _, env := range envs {
		env.Close()
	}
}
