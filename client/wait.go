package client

import (
	"context"
	"fmt"
	"time"
)

// WaitOptions tune the polling of the Wait helpers; zero values take the
// defaults.
type WaitOptions struct {
	// Interval is the first wait between polls (default 1 s); it grows by
	// half each poll up to MaxInterval (default 10 s).
	Interval, MaxInterval time.Duration
}

func (o WaitOptions) first() time.Duration {
	if o.Interval > 0 {
		return o.Interval
	}
	return time.Second
}

func (o WaitOptions) max() time.Duration {
	if o.MaxInterval > 0 {
		return max(o.MaxInterval, o.first())
	}
	return max(10*time.Second, o.first())
}

// WaitGeneration polls a generation until its status is final and returns
// that view; a failed generation is a view with Status "failed", not an
// error. progress, when not nil, sees every view read, the last included.
// The wait ends early with ctx.
func (c *Client) WaitGeneration(ctx context.Context, id string, opts WaitOptions, progress func(GenerationStatus)) (GenerationStatus, error) {
	return poll(ctx, c, opts, func(ctx context.Context) (GenerationStatus, error) { return c.Generation(ctx, id) },
		func(s GenerationStatus) string { return s.Status }, progress)
}

// WaitLongVideo polls a long-form video until its status is final, like
// WaitGeneration.
func (c *Client) WaitLongVideo(ctx context.Context, id string, opts WaitOptions, progress func(LongVideoStatus)) (LongVideoStatus, error) {
	return poll(ctx, c, opts, func(ctx context.Context) (LongVideoStatus, error) { return c.LongVideo(ctx, id) },
		func(s LongVideoStatus) string { return s.Status }, progress)
}

// WaitRegenerate polls a long-form video until no regenerate of a scene
// runs on it, like WaitLongVideo: the view is then at its new revision,
// or still at the old one when the regenerate failed or was canceled.
func (c *Client) WaitRegenerate(ctx context.Context, id string, opts WaitOptions, progress func(LongVideoStatus)) (LongVideoStatus, error) {
	return poll(ctx, c, opts, func(ctx context.Context) (LongVideoStatus, error) { return c.LongVideo(ctx, id) },
		func(s LongVideoStatus) string {
			if s.Regenerating != nil {
				return StatusProcessing
			}
			return s.Status
		}, progress)
}

func poll[T any](ctx context.Context, c *Client, opts WaitOptions, get func(context.Context) (T, error), status func(T) string, progress func(T)) (T, error) {
	interval := opts.first()
	for {
		v, err := get(ctx)
		if err != nil {
			return v, fmt.Errorf("wait: %w", err)
		}
		if progress != nil {
			progress(v)
		}
		if Final(status(v)) {
			return v, nil
		}
		if err := c.wait(ctx, interval); err != nil {
			return v, fmt.Errorf("wait: %w", err)
		}
		interval = min(interval+interval/2, opts.max())
	}
}
