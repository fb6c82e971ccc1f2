// Package clock is time as a port: the code that waits (a delay, a
// backoff, a timeout) or stamps dates asks a Clock, so that a test moves
// time itself (clocktest.Fake) instead of sleeping on the wall clock and
// hoping a loaded machine kept up.
//
// Clock has the shape of the ASL runner's (internal/local/stepfunctions), so
// one fake serves both.
package clock

import (
	"context"
	"time"
)

// Clock tells the time and calls back once time has passed.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has passed; stop
	// cancels that call, and reports whether it did.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// Wall is the machine's clock.
type wall struct{}

// Now is time.Now.
func (wall) Now() time.Time { return time.Now() }

// AfterFunc is time.AfterFunc.
func (wall) AfterFunc(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }

// Or is c, or the wall clock when c is nil.
func Or(c Clock) Clock {
	if c == nil {
		return wall{}
	}
	return c
}

// Sleep waits d on c, or until ctx ends; false means ctx ended first.
func Sleep(ctx context.Context, c Clock, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	elapsed := make(chan struct{})
	stop := c.AfterFunc(d, func() { close(elapsed) })
	defer stop()
	select {
	case <-elapsed:
		return true
	case <-ctx.Done():
		return false
	}
}

// After is time.After on c: the channel receives the time once d has
// passed. Unlike Sleep it has no context; stop releases the timer.
func After(c Clock, d time.Duration) (ch <-chan time.Time, stop func() bool) {
	out := make(chan time.Time, 1)
	stop = c.AfterFunc(d, func() { out <- c.Now() })
	return out, stop
}
