package store

import (
	"context"
	"time"
)

// PollChains keeps each generation's chain of poll messages single: a poll
// message delivered twice (SQS delivers at least once; a poller that crashes
// after enqueueing the next poll is redelivered) never enqueues two next
// polls, and a poller that crashed is taken over once its lease ends.
type PollChains interface {
	// ClaimPoll lets poll attempt n of a generation run. It succeeds when no
	// attempt at or above n was claimed, or when attempt n was claimed and
	// its lease ended at or before now (its claimer died); attempt n then
	// holds the chain until `until`. Otherwise claimed is false and holder
	// is the attempt that holds the chain. ErrNotFound if no such generation.
	ClaimPoll(ctx context.Context, uuid string, attempt int, now, until time.Time) (claimed bool, holder int, err error)
}
