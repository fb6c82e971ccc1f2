// Package waitfor is the tests' one way to wait for a condition that work
// running elsewhere (a server, a queue, a process) makes true: ask the
// condition itself until it holds, within a generous limit, rather than
// sleeping a fixed time and hoping the work was done by then.
//
// Close is the one way a test stops a server it started: with a deadline.
//
// Waiting for time to pass is not this package's job: move the clock the
// code under test reads (see internal/core/clock) instead.
package waitfor

import (
	"context"
	"errors"
	"testing"
	"time"
)

// The pause between two looks grows from firstPause to lastPause: a
// condition that holds soon is seen soon, and one that takes seconds is not
// asked hundreds of times a second on a busy machine (nor, through the API,
// more than 5 times a second: a Pro account's 100 requests a minute last
// a status poll 20 s).
const (
	firstPause = 2 * time.Millisecond
	lastPause  = 200 * time.Millisecond
)

// Condition asks cond until it reports true, and reports whether it did
// within the limit (real time: limits are generous, so that a loaded
// machine is slow, not failing). When it gives up it fails the test with
// t.Errorf, naming what it waited for, and returns false; it may therefore
// run on any goroutine, and a caller that cannot go on without the
// condition stops with t.FailNow (or returns, off the test's goroutine).
func Condition(t testing.TB, within time.Duration, what string, cond func() bool) bool {
	t.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	pause := firstPause
	for {
		if cond() {
			return true
		}
		look := time.NewTimer(pause)
		select {
		case <-deadline.C:
			look.Stop()
			if cond() {
				return true
			}
			t.Errorf("still waiting for %s after %v", what, within)
			return false
		case <-look.C:
		}
		pause = min(2*pause, lastPause)
	}
}

// Value is Condition for a condition that computes a value: it asks get
// until it reports true and returns the last value it got, and whether it
// held in time.
func Value[T any](t testing.TB, within time.Duration, what string, get func() (T, bool)) (T, bool) {
	t.Helper()
	var last T
	ok := Condition(t, within, what, func() bool {
		var done bool
		last, done = get()
		return done
	})
	return last, ok
}

// Drained asks remaining until it reports 0 (the work left: messages in a
// queue, records not final), and reports whether it did. It gives up, as
// Condition does, only when done (a count of the work finished, such as
// the messages a queue deleted) has not grown for stall: work that goes on,
// however slowly a loaded machine makes it, is waited for (the test
// binary's -timeout bounds the whole), and work that stopped is reported.
// (What is left is no measure of progress: a handler that sends the next
// message of a chain keeps it level, and redeliveries raise it.)
func Drained(t testing.TB, stall time.Duration, what string, remaining, done func() int) bool {
	t.Helper()
	most, progressed := done(), time.Now()
	pause := firstPause
	for {
		n := remaining()
		if n == 0 {
			return true
		}
		if d := done(); d > most {
			most, progressed = d, time.Now()
		}
		if time.Since(progressed) >= stall {
			t.Errorf("still waiting for %s: %d left, none done in %v", what, n, stall)
			return false
		}
		look := time.NewTimer(pause)
		<-look.C
		pause = min(2*pause, lastPause)
	}
}

// CloseWithin is how long Close lets a server finish what it serves.
const closeWithin = 2 * time.Second

// Close stops a server through its close function (such as
// objectstore.Store.Close or runtime.Runtime.Close) with a deadline of
// CloseWithin, so that a test's cleanup never waits on a connection that
// holds no request (net/http's Shutdown gives a new one 5 s). A close
// that had to cut connections at the deadline is not a failure; any other
// error is.
func Close(t testing.TB, close func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), closeWithin)
	defer cancel()
	if err := close(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("close: %v", err)
	}
}
