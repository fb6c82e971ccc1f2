// Package clocktest has the clock tests move: time passes when the test
// says so, never because the machine was slow.
package clocktest

import (
	"sort"
	"sync"
	"time"
)

// Fake is a clock.Clock that stands still until Advance moves it. It is
// safe for use by many goroutines.
type Fake struct {
	mu     sync.Mutex
	now    time.Time
	timers []*timer
	// armed is closed (and replaced) whenever a timer is set, so that a
	// test waiting for the code to arm one wakes without polling.
	armed chan struct{}
}

type timer struct {
	at      time.Time
	f       func()
	stopped bool
}

// New is a fake clock at now.
func New(now time.Time) *Fake { return &Fake{now: now, armed: make(chan struct{})} }

// Now is the fake time.
func (c *Fake) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc calls f in its own goroutine once the clock has been moved d
// past now; a d of zero or less calls it at once.
func (c *Fake) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &timer{at: c.now.Add(d), f: f}
	if d <= 0 {
		t.stopped = true
		go f()
	} else {
		c.timers = append(c.timers, t)
		close(c.armed)
		c.armed = make(chan struct{})
	}
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if t.stopped {
			return false
		}
		t.stopped = true
		c.drop(t)
		return true
	}
}

// drop removes a timer that is no longer pending; the caller holds c.mu.
func (c *Fake) drop(t *timer) {
	for i, p := range c.timers {
		if p == t {
			c.timers = append(c.timers[:i], c.timers[i+1:]...)
			return
		}
	}
}

// Advance moves the clock d forward and fires, in the order they are due,
// the timers due by then.
func (c *Fake) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*timer
	kept := c.timers[:0]
	for _, t := range c.timers {
		if !t.at.After(c.now) {
			t.stopped = true
			due = append(due, t)
		} else {
			kept = append(kept, t)
		}
	}
	c.timers = kept
	c.mu.Unlock()
	sort.SliceStable(due, func(i, j int) bool { return due[i].at.Before(due[j].at) })
	for _, t := range due {
		go t.f()
	}
}

// Timers is how many timers wait for the clock to move.
func (c *Fake) Timers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// WaitForTimers blocks until at least n timers wait for the clock to move
// (the code under test has reached its wait), or within has passed on the
// wall clock (a limit for a broken test only: keep it generous); it
// reports whether they did.
func (c *Fake) WaitForTimers(n int, within time.Duration) bool {
	limit := time.NewTimer(within)
	defer limit.Stop()
	for {
		c.mu.Lock()
		pending, armed := len(c.timers), c.armed
		c.mu.Unlock()
		if pending >= n {
			return true
		}
		select {
		case <-armed:
		case <-limit.C:
			return c.Timers() >= n
		}
	}
}
