package generation

import (
	"context"
	"fmt"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/clock"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// The synchronous answer (Prefer: wait).
const (
	// MaxWait is the longest wait a client may ask for, as Replicate's
	// Prefer: wait=N (1 to 60 s).
	MaxWait = 60 * time.Second
	// WaitCap bounds the whole request when it waits: API Gateway's HTTP
	// API answers 503 itself after its 30 s integration timeout, and the
	// generate function's Timeout is 29 s, so the answer leaves at most
	// 25 s after the request arrived, with room for the last read and the
	// answer's own way back.
	WaitCap = 25 * time.Second
	// waitMargin is kept before the function's deadline (ctx.Deadline in
	// Lambda) when that comes first.
	waitMargin = 2 * time.Second
	// The record is read again every firstWaitRead for the first
	// fastWaitReads reads (a quick image ends within a second or two, and
	// the answer should see it as soon as a client polling every 500 ms
	// would), then each delay grows by half up to maxWaitRead: a 25 s
	// wait reads it about 37 times; maxWaitReads bounds it regardless.
	firstWaitRead = 100 * time.Millisecond
	fastWaitReads = 10
	maxWaitRead   = time.Second
	maxWaitReads  = 50
)

// CreateAndWait starts a generation as Create does, then, when wait is
// above zero, re-reads its record until it is final or the wait is over:
// the answer is the completed (or failed) record with its outputs when the
// job ended in time, else the processing record as Create answers it. The
// wait counts from the request's start and is capped by WaitCap and by
// ctx's deadline; a failed re-read ends the wait with the last record
// seen, as the generation itself is made.
func (c *Creator) CreateAndWait(ctx context.Context, userID string, body []byte, wait time.Duration) (domain.Generation, error) {
	clk := clock.Or(c.s.Timers)
	until := clk.Now().Add(min(wait, MaxWait, WaitCap))
	g, err := c.s.create(ctx, userID, body)
	if err != nil || wait <= 0 {
		return g, err
	}
	if d, ok := ctx.Deadline(); ok {
		// The function's own deadline is on the wall clock.
		if left := time.Until(d) - waitMargin; clk.Now().Add(left).Before(until) {
			until = clk.Now().Add(left)
		}
	}
	return c.s.await(ctx, clk, g, until), nil
}

// await re-reads g's record on clk until it is final, until passes, ctx
// ends or maxWaitReads reads were made; it answers the last record seen.
func (s *Service) await(ctx context.Context, clk clock.Clock, g domain.Generation, until time.Time) domain.Generation {
	delay := firstWaitRead
	for reads := 0; reads < maxWaitReads && !g.Status.Terminal(); reads++ {
		left := until.Sub(clk.Now())
		if left <= 0 {
			break
		}
		if !clock.Sleep(ctx, clk, min(delay, left)) {
			break
		}
		if reads >= fastWaitReads-1 {
			delay = min(delay+delay/2, maxWaitRead)
		}
		latest, err := s.Store.GetGeneration(ctx, g.UUID)
		if err != nil {
			s.log().WarnContext(ctx, "the wait for a generation ends early: its record could not be read",
				"generation_id", g.UUID, "error", fmt.Errorf("read generation %s: %w", g.UUID, err))
			break
		}
		// The record keeps an input too large for it elided (InputObject):
		// the answer keeps the whole one it was created with.
		latest.Input = g.Input
		g = latest
	}
	return g
}
