// Package defaults supplies the clock and logger a use case falls back to
// when its Now or Log field is left empty.
package defaults

import (
	"log/slog"
	"time"
)

// Now is now() in UTC, or the given clock's time in UTC.
func Now(clock func() time.Time) time.Time {
	if clock != nil {
		return clock().UTC()
	}
	return time.Now().UTC()
}

// Log is the given logger, or slog's default.
func Log(l *slog.Logger) *slog.Logger {
	if l != nil {
		return l
	}
	return slog.Default()
}
