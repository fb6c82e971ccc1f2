package domain

import (
	"log/slog"
	"time"
)

// Now is the clock's time in UTC, or the wall clock's when clock is nil: the
// use cases' Now fields are optional so tests set only the ones they fake.
func Now(clock func() time.Time) time.Time {
	if clock != nil {
		return clock().UTC()
	}
	return time.Now().UTC()
}

// Logger is l, or slog's default when l is nil.
func Logger(l *slog.Logger) *slog.Logger {
	if l != nil {
		return l
	}
	return slog.Default()
}

// TimedOutError is the error text of work failed by its deadline.
const TimedOutError = "timed out"

// DeadlineError is the reason of a generation canceled at the caller's
// deadline (deadline_seconds).
const DeadlineError = "deadline"
