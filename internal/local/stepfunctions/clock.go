package stepfunctions

import (
	"context"
	"sync"
	"time"
)

// Clock is the runner's time: Wait states, retry intervals, TimeoutSeconds,
// HeartbeatSeconds and the dates it records. The default is the wall
// clock; a test passes a clock it moves, so that a step times out when the
// test says that much time has passed, never because a loaded machine ran
// its work slowly.
type clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has passed; stop
	// cancels that call, and reports whether it did.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

func (wallClock) AfterFunc(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }

// withTimeout is context.WithTimeout on the machine's clock. The context's
// cause is context.DeadlineExceeded once d has passed.
func (m *Machine) withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	stop := m.cfg.Clock.AfterFunc(d, func() { cancel(context.DeadlineExceeded) })
	return ctx, func() { stop(); cancel(context.Canceled) }
}

// timedOut reports whether ctx ended by its own timeout (withTimeout).
func timedOut(ctx context.Context) bool {
	return ctx.Err() != nil && context.Cause(ctx) == context.DeadlineExceeded
}

// sleep waits d on the machine's clock, or until ctx ends.
func (m *Machine) sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	elapsed := make(chan struct{})
	stop := m.cfg.Clock.AfterFunc(d, func() { close(elapsed) })
	defer stop()
	select {
	case <-elapsed:
		return nil
	case <-ctx.Done():
		return &stateError{name: "States.Aborted", cause: ctx.Err().Error()}
	}
}

// heartbeat is a task's HeartbeatSeconds clock: expired is closed when d
// passes without a reset.
type heartbeat struct {
	m       *Machine
	d       time.Duration
	expired chan struct{}
	stop    func() bool
}

func (m *Machine) startHeartbeat(d time.Duration) *heartbeat {
	h := &heartbeat{m: m, d: d}
	h.reset()
	return h
}

// reset starts the clock again (a heartbeat arrived). An expiry that has
// already fired stays fired.
func (h *heartbeat) reset() {
	if h.stop != nil && !h.stop() {
		return
	}
	expired := make(chan struct{})
	h.expired = expired
	h.stop = h.m.cfg.Clock.AfterFunc(h.d, func() { close(expired) })
}

// expiredChan is nil (never ready) for a task without a heartbeat clock.
func (h *heartbeat) expiredChan() <-chan struct{} {
	if h == nil {
		return nil
	}
	return h.expired
}

// ManualClock is a Clock that moves only when told to (tests): a workflow
// on it times out when the test says that much time has passed.
type ManualClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*manualTimer
}

type manualTimer struct {
	at    time.Time
	f     func()
	ended bool // fired or stopped
}

// NewManualClock is a clock standing at now.
func NewManualClock(now time.Time) *ManualClock { return &ManualClock{now: now} }

func (c *ManualClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

// AfterFunc calls f in its own goroutine once the clock has been moved d
// past now (at once when d <= 0).
func (c *ManualClock) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &manualTimer{at: c.now.Add(d), f: f}
	if d <= 0 {
		t.ended = true
		go f()
	} else {
		c.timers = append(c.timers, t)
	}
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		stopped := !t.ended
		t.ended = true
		return stopped
	}
}

// AdvanceTo moves the clock to t (never back) and runs the timers due by
// then.
func (c *ManualClock) AdvanceTo(t time.Time) {
	c.mu.Lock()
	if t.After(c.now) {
		c.now = t
	}
	var due []func()
	pending := c.timers[:0]
	for _, tm := range c.timers {
		switch {
		case tm.ended:
		case !tm.at.After(c.now):
			tm.ended = true
			due = append(due, tm.f)
		default:
			pending = append(pending, tm)
		}
	}
	c.timers = pending
	c.mu.Unlock()
	for _, f := range due {
		go f()
	}
}

// Advance moves the clock d forward.
func (c *ManualClock) Advance(d time.Duration) { c.AdvanceTo(c.Now().Add(d)) }

// Pending counts the timers set and neither fired nor stopped: a test
// waits for the workflow to set the timer it means to move past.
func (c *ManualClock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.timers {
		if !t.ended {
			n++
		}
	}
	return n
}

// Due reports whether a timer set and neither fired nor stopped is due at
// t: a test waits for the workflow to set (or reset, as a heartbeat does)
// the timer it means to move past.
func (c *ManualClock) Due(t time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, tm := range c.timers {
		if !tm.ended && tm.at.Equal(t) {
			return true
		}
	}
	return false
}
