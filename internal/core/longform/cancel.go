package longform

import (
	"context"
	"errors"
	"fmt"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// Canceler stops videos: the cancel route's use case.
type Canceler struct{ s *service }

// NewCanceler stops the execution and the scenes' jobs, frees their slots,
// ends the record, releases the hold and sends the webhook; slots and
// notifier may be nil.
func NewCanceler(store Store, workflow Workflow, upstream Providers, slots Slots, notifier Notifier, settings Settings) *Canceler {
	return &Canceler{s: &service{Store: store, Workflow: workflow, Upstream: upstream, Slots: slots, Notifier: notifier, Settings: settings}}
}

// Cancel stops a caller's video (see service.cancel).
func (c *Canceler) Cancel(ctx context.Context, userID, id string) (domain.LongVideo, error) {
	return c.s.cancel(ctx, userID, id)
}

// cancel stops a caller's video: the execution is stopped, the scenes'
// jobs upstream are canceled, the record ends canceled and the hold is
// released. A video already final is a conflict, and so is one whose
// final video is being stored (domain.ErrFinishing).
func (s *service) cancel(ctx context.Context, userID, id string) (domain.LongVideo, error) {
	v, err := NewReader(s.Store).find(ctx, userID, id)
	if err != nil {
		return domain.LongVideo{}, err
	}
	if v.Status == domain.StatusCompleted && v.Regenerating != nil {
		return s.cancelRegenerate(ctx, v)
	}
	if err := v.Work().Cancelable(); err != nil {
		return domain.LongVideo{}, err
	}
	log := s.log().With("user_id", userID, "video_id", v.ID)
	err = s.Store.FinishLongVideo(ctx, v.ID, domain.Outcome{Status: domain.StatusCanceled, Error: "canceled by the caller"}, s.now())
	if errors.Is(err, domain.ErrConflict) {
		if v, err = s.Store.GetLongVideo(ctx, v.ID); err == nil {
			// Final meanwhile, or storing its final video.
			if err = v.Work().Cancelable(); err == nil {
				err = v.Work().Finishing()
			}
		}
		return domain.LongVideo{}, err
	}
	if err != nil {
		return domain.LongVideo{}, fmt.Errorf("cancel %s: %w", v.ID, err)
	}
	// The record is final now: every step after this finds it so and stops.
	if err := s.Workflow.Stop(ctx, v.ID, "canceled by the caller"); err != nil {
		log.WarnContext(ctx, "could not stop the workflow; its next step stops on the canceled record", "error", err)
	}
	stopScenes(ctx, log, s.Upstream, s.Slots, v)
	s.release(ctx, log, userID, v.ID)
	if v, err = s.Store.GetLongVideo(ctx, v.ID); err != nil {
		return domain.LongVideo{}, fmt.Errorf("reread %s: %w", v.ID, err)
	}
	if err := notify(ctx, s.Notifier, v); err != nil {
		log.WarnContext(ctx, "could not enqueue the webhook", "error", err)
	}
	return v, nil
}

// cancelRegenerate stops the regenerate running on a completed video: it
// ends (the video stays completed at its revision, with its final video),
// its execution and its scene's job are stopped and only its own hold is
// released. A regenerate that ended meanwhile is a conflict; one whose new
// final video was being stored loses it (its Finalize finds the regenerate
// gone and deletes what it stored), so nothing is served uncharged.
func (s *service) cancelRegenerate(ctx context.Context, v domain.LongVideo) (domain.LongVideo, error) {
	r := *v.Regenerating
	log := s.log().With("user_id", v.UserID, "video_id", v.ID, "scene", r.SceneNumber, "revision", r.Revision)
	err := s.Store.EndRegenerate(ctx, v.ID, r.Revision, domain.Outcome{Status: domain.StatusCanceled, Error: "canceled by the caller"}, s.now())
	if errors.Is(err, domain.ErrConflict) {
		return domain.LongVideo{}, fmt.Errorf("%w: the regenerate of scene %d of video %s has already ended", domain.ErrConflict, r.SceneNumber, v.ID)
	}
	if err != nil {
		return domain.LongVideo{}, fmt.Errorf("cancel the regenerate of %s: %w", v.ID, err)
	}
	if err := s.Workflow.Stop(ctx, RegenerateExecution(v.ID, r.Revision), "canceled by the caller"); err != nil {
		log.WarnContext(ctx, "could not stop the regenerate's workflow; its next step stops on the ended regenerate", "error", err)
	}
	stopSceneJob(ctx, log, s.Upstream, s.Slots, v, r.SceneNumber, r.State)
	s.release(ctx, log, v.UserID, domain.RegenerateWorkID(v.ID, r.SceneNumber, r.Revision))
	log.InfoContext(ctx, "scene regenerate canceled")
	if v, err = s.Store.GetLongVideo(ctx, v.ID); err != nil {
		return domain.LongVideo{}, fmt.Errorf("reread %s: %w", v.ID, err)
	}
	return v, nil
}
