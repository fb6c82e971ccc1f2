package clocktest

import (
	"context"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/clock"
)

var start = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestASleepEndsWhenTheClockIsMovedPastItNotBefore(t *testing.T) {
	c := New(start)
	done := make(chan bool, 1)
	go func() { done <- clock.Sleep(context.Background(), c, time.Minute) }()
	if !c.WaitForTimers(1, time.Minute) {
		t.Fatal("the sleep set no timer")
	}
	c.Advance(time.Minute - time.Nanosecond)
	if c.Timers() != 1 {
		t.Fatalf("a minute's sleep ended %v too early", time.Nanosecond)
	}
	c.Advance(time.Nanosecond)
	select {
	case ok := <-done:
		if !ok {
			t.Error("the sleep reported its context ended")
		}
	case <-time.After(time.Minute):
		t.Fatal("the sleep did not end once the minute had passed")
	}
	if got := c.Now(); !got.Equal(start.Add(time.Minute)) {
		t.Errorf("Now = %v, want %v", got, start.Add(time.Minute))
	}
}

func TestAStoppedTimerNeverFires(t *testing.T) {
	c := New(start)
	fired := make(chan struct{}, 1)
	stop := c.AfterFunc(time.Second, func() { fired <- struct{}{} })
	if !stop() {
		t.Error("stopping a pending timer reported it had fired")
	}
	if stop() {
		t.Error("stopping twice reported a second stop")
	}
	c.Advance(time.Hour)
	if c.Timers() != 0 {
		t.Errorf("%d timers left", c.Timers())
	}
	select {
	case <-fired:
		t.Error("a stopped timer fired")
	default:
	}
}

func TestASleepEndsWithItsContext(t *testing.T) {
	c := New(start)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if clock.Sleep(ctx, c, time.Hour) {
		t.Error("a sleep whose context had ended reported the time passed")
	}
	if c.Timers() != 0 {
		t.Errorf("the ended sleep left %d timers", c.Timers())
	}
}
