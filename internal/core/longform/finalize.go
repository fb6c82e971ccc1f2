package longform

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/media"
)

// FinalizeStep completes the video, gives its files their retention
// (retainer tags them when it is not the default) and captures its hold.
// deleter removes what a regenerate replaced (the previous revision's
// final video, captions and scene clip) or, when the regenerate ended
// otherwise first, what it stored; and the final video of a video that
// failed while finishing.
func FinalizeStep(files Files, retainer media.Retainer, store Store, notifier Notifier, deleter Deleter, settings StepSettings) func(context.Context, FinalizeTask) (Ended, error) {
	s := settings.steps()
	s.Files, s.Retainer, s.Store, s.Notifier, s.Deleter = files, retainer, store, notifier, deleter
	return s.Finalize
}

// notify enqueues the webhook event of a final video, if asked for.
func notify(ctx context.Context, n Notifier, v domain.LongVideo) error {
	event := domain.FinalEvent(domain.WorkLongVideo, v.Status)
	if n == nil || !v.Webhook.Wants(event) {
		return nil
	}
	if err := n.Notify(ctx, domain.WorkLongVideo, v.ID, event); err != nil {
		return fmt.Errorf("webhook of %s: %w", v.ID, err)
	}
	return nil
}

// notifyRevision enqueues long_video.completed for the revision a scene
// regenerate made, if asked for: a receiver that keeps final_video_url
// gets the new one.
func notifyRevision(ctx context.Context, n Notifier, v domain.LongVideo, revision int) error {
	event := domain.FinalEvent(domain.WorkLongVideo, domain.StatusCompleted)
	if n == nil || !v.Webhook.Wants(event) {
		return nil
	}
	if err := n.NotifyRevision(ctx, v.ID, revision, event); err != nil {
		return fmt.Errorf("webhook of %s revision %d: %w", v.ID, revision, err)
	}
	return nil
}

// FinalizeTask names the assembled video.
type FinalizeTask struct {
	VideoID  string  `json:"video_id"`
	Key      string  `json:"key"`
	Duration float64 `json:"duration"`
	// Revision and SceneNumber, when set, name the regenerate whose
	// final video Key is (media.FinalVideoKeyAt).
	Revision    int `json:"revision,omitempty"`
	SceneNumber int `json:"scene_number,omitempty"`
}

// Ended is the output of the workflow's last task, and so of the
// execution: which video ended, how, and where its video is. It stays small:
// it passes between states under Step Functions' payload limit.
type Ended struct {
	VideoID       string `json:"video_id"`
	Status        string `json:"status"`
	FinalVideoURL string `json:"final_video_url,omitempty"`
	Error         string `json:"error,omitempty"`
}

func endedOf(v domain.LongVideo) Ended {
	e := Ended{VideoID: v.ID, Status: string(v.Status), FinalVideoURL: v.FinalVideoURL}
	if v.Status != domain.StatusCompleted {
		e.Error = v.Error
	}
	return e
}

// Finalize marks the video completed with its URL and measured length,
// enqueues its webhook event and captures its hold. A repeat changes
// nothing but may enqueue the event again, under the same webhook-id.
func (s *Steps) Finalize(ctx context.Context, in FinalizeTask) (Ended, error) {
	if in.Revision > 0 {
		return s.finalizeRegenerate(ctx, in)
	}
	o := domain.Outcome{Status: domain.StatusCompleted, OutputURLs: []string{s.Files.URL(in.Key)}, TotalDuration: in.Duration}
	v, err := s.Store.GetLongVideo(ctx, in.VideoID)
	if err != nil {
		return Ended{}, &TransientError{Msg: fmt.Sprintf("read %s: %v", in.VideoID, err)}
	}
	if v.Status == domain.StatusProcessing {
		if o.OutputExpiresAt, err = s.keepFiles(ctx, v); err != nil {
			return Ended{}, &TransientError{Msg: fmt.Sprintf("keep the files of %s: %v", v.ID, err)}
		}
	}
	return s.finish(ctx, in.VideoID, o)
}

// keepFiles gives every file of the video (the final video, the scenes'
// clips, the narration) its account's retention and says when it ends.
func (s *Steps) keepFiles(ctx context.Context, v domain.LongVideo) (time.Time, error) {
	a, err := s.Store.GetAccount(ctx, v.UserID)
	if err != nil {
		return time.Time{}, fmt.Errorf("read the retention: %w", err)
	}
	days := a.RetentionDays()
	if err := media.KeepFor(ctx, s.Retainer, media.LongVideoPrefix(v.ID), days); err != nil {
		return time.Time{}, err
	}
	return domain.RetentionEnd(s.now(), days), nil
}

func (s *Steps) finish(ctx context.Context, videoID string, o domain.Outcome) (Ended, error) {
	err := s.Store.FinishLongVideo(ctx, videoID, o, s.now())
	if err != nil && !errors.Is(err, domain.ErrConflict) {
		return Ended{}, &TransientError{Msg: fmt.Sprintf("finish %s: %v", videoID, err)}
	}
	v, err := s.Store.GetLongVideo(ctx, videoID)
	if err != nil {
		return Ended{}, &TransientError{Msg: fmt.Sprintf("read %s: %v", videoID, err)}
	}
	if v.Status == domain.StatusProcessing {
		// A cancel refused while finishing never comes here; nothing else
		// leaves the video processing.
		return Ended{}, &TransientError{Msg: fmt.Sprintf("finish %s: still processing", videoID)}
	}
	// Final: its event is enqueued before the hold is settled, since
	// nothing enqueues it once the hold is (a retry, MarkFailed and the
	// sweeper find it settled). A repeat enqueues it again unless the
	// video lists an attempt at it already (the deliverer has it);
	// receivers drop repeats by webhook-id.
	if !domain.Attempted(v.WebhookAttempts, domain.FinalEvent(domain.WorkLongVideo, v.Status)) {
		if err := notify(ctx, s.Notifier, v); err != nil {
			s.log().WarnContext(ctx, "could not enqueue the webhook", "video_id", v.ID, "error", err)
		}
	}
	if v.Status != domain.StatusCompleted && v.Files.Finishing {
		// Its final video may be stored: deleted before the credits go
		// back, so no output outlives them. A step without the bucket
		// leaves that to MarkFailed.
		if s.Deleter == nil {
			return endedOf(v), nil
		}
		if err := s.Deleter.Delete(ctx, []string{media.FinalVideoKey(v.ID), media.CaptionsKey(v.ID)}); err != nil {
			return Ended{}, &TransientError{Msg: fmt.Sprintf("delete the final video of %s: %v", videoID, err)}
		}
	}
	how, settled, err := domain.Settle(ctx, s.Store, v.UserID, v.ID, v.Status)
	if err != nil {
		return Ended{}, &TransientError{Msg: fmt.Sprintf("settle %s: %v", videoID, err)}
	}
	if settled {
		s.log().InfoContext(ctx, "long video finished; hold settled", "settlement", how, "video_id", v.ID, "user_id", v.UserID,
			"status", v.Status, "credits", domain.FormatCredits(v.CreditsHeld))
	}
	return endedOf(v), nil
}

// finalizeRegenerate points the video at its regenerate's final video and
// revision (EndRegenerate) and captures only the regenerate's hold; the
// files the video was served from before (its final video, captions and
// the scene's old clip) are deleted after, when the step has the bucket
// (else the bucket's expiry takes them). A regenerate that ended otherwise
// meanwhile (canceled, or past its deadline) keeps nothing: its files are
// deleted and its hold released, the video left as it was, and no webhook
// is sent. A repeat changes nothing but may enqueue the revision's event
// again, under the same webhook-id.
func (s *Steps) finalizeRegenerate(ctx context.Context, in FinalizeTask) (Ended, error) {
	v, err := s.Store.GetLongVideo(ctx, in.VideoID)
	if err != nil {
		return Ended{}, &TransientError{Msg: fmt.Sprintf("read %s: %v", in.VideoID, err)}
	}
	n := in.SceneNumber
	workID := domain.RegenerateWorkID(v.ID, n, in.Revision)
	log := s.log().With("video_id", v.ID, "user_id", v.UserID, "scene", n, "revision", in.Revision)
	if r := v.Regenerating; r != nil && r.Revision == in.Revision {
		old := []string{media.FinalVideoKeyAt(v.ID, v.Revision), media.CaptionsKeyAt(v.ID, v.Revision),
			sceneClipBase(v.ID, n, v.SceneStatus[n].Revision) + ".mp4"}
		expires, err := s.keepFiles(ctx, v)
		if err != nil {
			return Ended{}, &TransientError{Msg: fmt.Sprintf("keep the files of %s: %v", v.ID, err)}
		}
		o := domain.Outcome{Status: domain.StatusCompleted, OutputURLs: []string{s.Files.URL(in.Key)}, TotalDuration: in.Duration, OutputExpiresAt: expires}
		err = s.Store.EndRegenerate(ctx, v.ID, in.Revision, o, s.now())
		if err != nil && !errors.Is(err, domain.ErrConflict) {
			return Ended{}, &TransientError{Msg: fmt.Sprintf("finish the regenerate of %s: %v", v.ID, err)}
		}
		if err == nil && s.Deleter != nil {
			// The record points at the new files: the old ones serve nothing.
			del := s.Deleter.Delete
			if d, ok := s.Deleter.(servedDeleter); ok {
				del = d.DeleteServed
			}
			if err := del(ctx, old); err != nil {
				log.WarnContext(ctx, "could not delete the files of the previous revision; the bucket's expiry will", "error", err)
			}
		}
		if v, err = s.Store.GetLongVideo(ctx, in.VideoID); err != nil {
			return Ended{}, &TransientError{Msg: fmt.Sprintf("read %s: %v", in.VideoID, err)}
		}
	}
	if v.Revision >= in.Revision {
		// The video is at the new revision: its event (the video's
		// final_video_url changed and the one sent before is deleted) is
		// enqueued before the capture, since nothing enqueues it once the
		// hold is captured. A repeat enqueues it again, under the same
		// webhook-id: the deliverer and receivers drop repeats.
		if err := notifyRevision(ctx, s.Notifier, v, in.Revision); err != nil {
			log.WarnContext(ctx, "could not enqueue the webhook", "error", err)
		}
		captured, err := s.Store.Capture(ctx, v.UserID, workID)
		if err != nil {
			return Ended{}, &TransientError{Msg: fmt.Sprintf("capture %s: %v", workID, err)}
		}
		if captured {
			log.InfoContext(ctx, "scene regenerate completed; its hold captured")
		}
		return endedOf(v), nil
	}
	// Ended otherwise first: what it stored serves nothing.
	if s.Deleter != nil {
		mine := []string{in.Key, media.CaptionsKeyAt(v.ID, in.Revision), sceneClipBase(v.ID, n, in.Revision) + ".mp4"}
		if err := s.Deleter.Delete(ctx, mine); err != nil {
			return Ended{}, &TransientError{Msg: fmt.Sprintf("delete the files of the ended regenerate of %s: %v", v.ID, err)}
		}
	}
	if _, err := s.Store.Release(ctx, v.UserID, workID); err != nil {
		return Ended{}, &TransientError{Msg: fmt.Sprintf("release %s: %v", workID, err)}
	}
	e := endedOf(v)
	e.Error = fmt.Sprintf("the regenerate of scene %d ended before its video was kept; the video stays at revision %d", n, v.Revision)
	return e, nil
}
