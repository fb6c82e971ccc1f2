package waitfor

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// recorder is a testing.TB that keeps what the helper reported.
type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func TestConditionReturnsOnceTheConditionHolds(t *testing.T) {
	r := &recorder{TB: t}
	asked := 0
	if !Condition(r, time.Minute, "the third look", func() bool { asked++; return asked == 3 }) {
		t.Fatalf("gave up: %v", r.errors)
	}
	if asked != 3 || len(r.errors) != 0 {
		t.Errorf("asked %d times, reported %v; want 3 looks and no failure", asked, r.errors)
	}
}

func TestConditionThatNeverHoldsFailsNamingWhatItWaitedFor(t *testing.T) {
	r := &recorder{TB: t}
	if Condition(r, 20*time.Millisecond, "the moon", func() bool { return false }) {
		t.Fatal("a condition that never holds was reported as held")
	}
	if len(r.errors) != 1 || !strings.Contains(r.errors[0], "the moon") {
		t.Errorf("reported %q, want one failure naming the moon", r.errors)
	}
}

func TestValueReturnsTheValueThatMetTheCondition(t *testing.T) {
	r := &recorder{TB: t}
	n := 0
	got, ok := Value(r, time.Minute, "n to reach 5", func() (int, bool) { n++; return n, n >= 5 })
	if !ok || got != 5 {
		t.Errorf("got %d, %v; want 5, true", got, ok)
	}
}

func TestDrainedWaitsForWorkThatGoesOnAndReportsWorkThatStopped(t *testing.T) {
	for _, tt := range []struct {
		name      string
		remaining func(look int) int
		done      func(look int) int
		drained   bool
	}{
		// One done a look: each step slower than the stall allows between
		// two looks, which is progress all the same.
		{"slow but going on", func(look int) int { return max(0, 12-look) }, func(look int) int { return look }, true},
		// Work done while what is left stays level (each handled message
		// sends the next of its chain), then drops: waited for.
		{"level while chains run", func(look int) int { return []int{7, 7, 7, 7, 7, 7, 0}[min(look, 6)] }, func(look int) int { return look }, true},
		// Left goes down, up (a redelivery) and down, work done throughout.
		{"not monotonic", func(look int) int { return []int{5, 6, 4, 5, 3, 2, 0}[min(look, 6)] }, func(look int) int { return look }, true},
		{"stopped", func(int) int { return 7 }, func(int) int { return 3 }, false},
		// What is left moves (redeliveries) but nothing is done.
		{"churning", func(look int) int { return 7 + look%2 }, func(int) int { return 3 }, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{TB: t}
			look := 0
			ok := Drained(r, 20*time.Millisecond, "the queue",
				func() int { n := tt.remaining(look); look++; return n },
				func() int { return tt.done(look) })
			if ok != tt.drained {
				t.Fatalf("Drained = %v, want %v (reported %v)", ok, tt.drained, r.errors)
			}
			if !ok && (len(r.errors) != 1 || !strings.Contains(r.errors[0], "the queue") || !strings.Contains(r.errors[0], " left")) {
				t.Errorf("reported %q, want one failure naming the queue and what was left", r.errors)
			}
		})
	}
}
