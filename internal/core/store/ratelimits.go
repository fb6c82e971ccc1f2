package store

import (
	"context"
	"time"
)

// RateLimits counts requests per account and minute. Counters expire on
// their own shortly after their minute ends.
type RateLimits interface {
	// CountRequest adds one request to the account's counter for the minute
	// that contains at, and returns the count including it.
	CountRequest(ctx context.Context, userID string, at time.Time) (int, error)
}

// MinuteWindow is the start of the rate-limit window that contains t.
func MinuteWindow(t time.Time) time.Time { return t.UTC().Truncate(time.Minute) }
