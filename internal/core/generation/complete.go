package generation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// abandon fails a generation that never got going, frees its slot at the
// named upstream and releases its hold.
func (s *Service) abandon(ctx context.Context, log *slog.Logger, g domain.Generation, upstreamName, reason string) {
	err := s.Store.FinishGeneration(ctx, g.UUID, domain.Outcome{Status: domain.StatusFailed, Error: reason}, s.now())
	if err != nil && !errors.Is(err, domain.ErrConflict) && !errors.Is(err, domain.ErrNotFound) {
		// The hold stays open, so the sweeper finds it, fails the record at
		// its deadline and releases the hold then.
		log.WarnContext(ctx, "could not fail abandoned generation; the sweeper will", "error", err)
		return
	}
	s.engine().Release(ctx, log, upstreamName, g.UUID)
	s.release(ctx, log, g.UserID, g.UUID)
}

func (s *Service) release(ctx context.Context, log *slog.Logger, userID, workID string) {
	if _, err := s.Store.Release(ctx, userID, workID); err != nil {
		// The sweeper releases it after its grace period.
		log.WarnContext(ctx, "could not release hold", "work_id", workID, "error", err)
	}
}

// finish writes the outcome once and settles the hold. If another delivery
// finished the record first, its outcome is the one settled.
func (s *Service) finish(ctx context.Context, log *slog.Logger, g domain.Generation, o domain.Outcome) error {
	_, err := s.finishOnce(ctx, log, g, o)
	return err
}

// finishOnce is finish that also says whether this call's write made the
// generation final (false: it already was, and o was not written).
func (s *Service) finishOnce(ctx context.Context, log *slog.Logger, g domain.Generation, o domain.Outcome) (wrote bool, err error) {
	err = s.Store.FinishGeneration(ctx, g.UUID, o, s.now())
	if err == nil || errors.Is(err, domain.ErrConflict) {
		s.releaseSlots(ctx, log, g)
	}
	switch {
	case err == nil:
		wrote = true
		g.Status, g.OutputURLs, g.Error = o.Status, o.OutputURLs, o.Error
		log.InfoContext(ctx, "generation finished", "status", o.Status, "error", o.Error)
		if err := s.notify(ctx, g); err != nil {
			// Delivered again, the message finds the generation final and
			// enqueues the event then (settleAndNotify).
			return wrote, err
		}
	case errors.Is(err, domain.ErrConflict):
		uuid := g.UUID
		if g, err = s.Store.GetGeneration(ctx, uuid); err != nil {
			return false, fmt.Errorf("reread %s: %w", uuid, err)
		}
		if !g.Status.Terminal() {
			// A cancel refused while the outputs are stored: nothing to
			// settle, the poller completes (or fails) the record.
			return false, g.Work().Finishing()
		}
	default:
		return false, fmt.Errorf("finish %s: %w", g.UUID, err)
	}
	return wrote, s.settle(ctx, log, g)
}

// settleAndNotify is a poll of a generation already final: it settles the
// hold if that was left undone, and enqueues the webhook event if no
// attempt was made yet (a repeat is harmless: the deliverer skips an event
// already delivered, and receivers see the same webhook-id).
func (s *Service) settleAndNotify(ctx context.Context, log *slog.Logger, g domain.Generation) error {
	s.releaseSlots(ctx, log, g)
	if len(g.WebhookAttempts) == 0 {
		if err := s.notify(ctx, g); err != nil {
			return err
		}
	}
	return s.settle(ctx, log, g)
}

// notify enqueues the webhook event of a final generation, if asked for.
func (s *Service) notify(ctx context.Context, g domain.Generation) error {
	event := domain.FinalEvent(domain.WorkGeneration, g.Status)
	if s.Notifier == nil || !g.Webhook.Wants(event) {
		return nil
	}
	if err := s.Notifier.Notify(ctx, domain.WorkGeneration, g.UUID, event); err != nil {
		return fmt.Errorf("webhook of %s: %w", g.UUID, err)
	}
	return nil
}

// releaseSlots frees a generation's slot at its upstream, or its place in
// line at its routes' upstreams while it waited.
func (s *Service) releaseSlots(ctx context.Context, log *slog.Logger, g domain.Generation) {
	if s.Upstreams == nil {
		return
	}
	if g.Upstream != "" {
		s.engine().Release(ctx, log, g.Upstream, g.UUID)
		return
	}
	for _, name := range routeUpstreams(s.Upstreams, g) {
		s.engine().Release(ctx, log, name, g.UUID)
	}
}

// settle captures the hold of a completed generation and releases that of a
// failed one; a hold already settled is left alone. A generation that
// failed while finishing may have outputs in the bucket: they are deleted
// first, so no output outlives the credits' return (a failure to delete
// leaves the hold open, and the poll is delivered again).
func (s *Service) settle(ctx context.Context, log *slog.Logger, g domain.Generation) error {
	if g.Status != domain.StatusCompleted && g.Files.Finishing {
		if s.Outputs == nil {
			return nil // the cancel route: the poller, which has the bucket, settles it
		}
		if err := s.deleteOutputs(ctx, g.UUID); err != nil {
			return err
		}
	}
	settlement := g.Status
	if g.Status == domain.StatusCanceled && g.Error == domain.DeadlineError && g.UpstreamID == "" {
		// Canceled at its deadline before any provider had it: nothing
		// ran, so the hold is released, as for work that never started.
		settlement = domain.StatusFailed
	}
	how, settled, err := domain.Settle(ctx, s.Store, g.UserID, g.UUID, settlement)
	if err != nil {
		return fmt.Errorf("settle hold of %s: %w", g.UUID, err)
	}
	if settled {
		log.InfoContext(ctx, "hold settled", "settlement", how, "credits", domain.FormatCredits(g.CreditsUsed))
	}
	return nil
}
