package longform

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/media"
)

// MarkFailedStep fails the video, deletes its final video if one was
// stored (deleter), releases its hold and stops its scenes' jobs: the
// workflow's Catch and the safety net's target.
func MarkFailedStep(store Store, notifier Notifier, ups Upstreams, slots Slots, deleter Deleter, settings StepSettings) func(context.Context, FailTask) (Ended, error) {
	s := settings.steps()
	s.Store, s.Notifier, s.Upstream, s.Slots, s.Deleter = store, notifier, ups, slots, deleter
	return s.MarkFailed
}

// FailTask carries the error the workflow caught. The same function takes
// EventBridge's event of an execution that failed, timed out or was aborted
// outside the workflow's own Catch (the safety-net rule): then DetailType
// and Detail are set instead.
type FailTask struct {
	VideoID string  `json:"video_id"`
	Failure Failure `json:"failure"`
	// Revision, when set, fails the regenerate of that revision only:
	// the video stays completed at its revision.
	Revision int `json:"revision,omitempty"`

	DetailType string                 `json:"detail-type,omitempty"`
	Detail     *ExecutionStatusChange `json:"detail,omitempty"`
}

// ExecutionStatusChange is the detail of Step Functions' "Step Functions
// Execution Status Change" event; the execution is named after the video,
// a regenerate's after the video and its revision (RegenerateExecution).
type ExecutionStatusChange struct {
	ExecutionArn string `json:"executionArn"`
	Name         string `json:"name"`
	Status       string `json:"status"`
	Error        string `json:"error"`
	Cause        string `json:"cause"`
}

// Failure is a caught error as Step Functions passes it.
type Failure struct {
	Error string `json:"Error"`
	Cause string `json:"Cause"`
}

// MarkFailed marks the video failed with a readable error, releases its
// hold in full and stops every scene job that may still run, freeing its
// slot. A repeat, or an event for a video already final, changes nothing.
// Its output always has an error: the workflow's Fail state reads its
// cause from it (CausePath $.error), and one that selects nothing would
// fail the execution with States.Runtime instead — as it would when the
// video had already completed or been canceled.
func (s *Steps) MarkFailed(ctx context.Context, in FailTask) (Ended, error) {
	if in.Detail != nil {
		in = failTaskOf(*in.Detail)
		if _, err := s.Store.GetLongVideo(ctx, in.VideoID); errors.Is(err, domain.ErrNotFound) {
			s.log().WarnContext(ctx, "execution event for no video of ours", "execution", in.VideoID)
			return Ended{VideoID: in.VideoID, Error: "no such video: " + readable(in.Failure)}, nil
		}
	}
	failure := readable(in.Failure)
	if in.Revision > 0 {
		return s.failRegenerate(ctx, in.VideoID, in.Revision, failure)
	}
	view, err := s.finish(ctx, in.VideoID, domain.Outcome{Status: domain.StatusFailed, Error: failure})
	if err != nil {
		return view, err
	}
	if view.Error == "" {
		view.Error = fmt.Sprintf("%s (the video had already ended %s)", failure, view.Status)
	}
	v, err := s.Store.GetLongVideo(ctx, in.VideoID)
	if err != nil {
		return view, &TransientError{Msg: fmt.Sprintf("read %s: %v", in.VideoID, err)}
	}
	stopScenes(ctx, s.log().With("video_id", v.ID), s.Upstream, s.Slots, v)
	return view, nil
}

// failTaskOf reads an execution's end as the failure MarkFailed records.
func failTaskOf(d ExecutionStatusChange) FailTask {
	f := Failure{Error: d.Error, Cause: d.Cause}
	switch d.Status {
	case "TIMED_OUT":
		f = Failure{Error: "States.Timeout"}
	case "ABORTED":
		f = Failure{Error: "States.Aborted"}
	}
	if f.Error == "" {
		f.Error = "States.Runtime"
	}
	id, revision := d.Name, 0
	if base, rev, ok := strings.Cut(d.Name, "-r"); ok && len(base) == 36 {
		if n, err := strconv.Atoi(rev); err == nil && RegenerateExecution(base, n) == d.Name {
			id, revision = base, n
		}
	}
	return FailTask{VideoID: id, Failure: f, Revision: revision}
}

// failRegenerate ends the regenerate of revision failed, if it still
// runs: the video stays completed at its revision with its final video,
// the scene's job is stopped, what the regenerate stored is deleted and
// only its hold is released. Its output has the error, as MarkFailed's.
func (s *Steps) failRegenerate(ctx context.Context, videoID string, revision int, failure string) (Ended, error) {
	v, err := s.Store.GetLongVideo(ctx, videoID)
	if errors.Is(err, domain.ErrNotFound) {
		return Ended{VideoID: videoID, Error: "no such video: " + failure}, nil
	}
	if err != nil {
		return Ended{}, &TransientError{Msg: fmt.Sprintf("read %s: %v", videoID, err)}
	}
	e := endedOf(v)
	e.Error = fmt.Sprintf("the regenerate (revision %d) failed: %s; the video stays at revision %d", revision, failure, v.Revision)
	r := v.Regenerating
	if r == nil || r.Revision != revision {
		// Ended already: by Finalize, a cancel or the sweeper, each of
		// which settled its hold.
		return e, nil
	}
	log := s.log().With("video_id", v.ID, "user_id", v.UserID, "scene", r.SceneNumber, "revision", revision)
	err = s.Store.EndRegenerate(ctx, v.ID, revision, domain.Outcome{Status: domain.StatusFailed, Error: failure}, s.now())
	if err != nil && !errors.Is(err, domain.ErrConflict) {
		return Ended{}, &TransientError{Msg: fmt.Sprintf("end the regenerate of %s: %v", v.ID, err)}
	}
	if errors.Is(err, domain.ErrConflict) {
		return e, nil // ended meanwhile, by its own settler
	}
	stopSceneJob(ctx, log, s.Upstream, s.Slots, v, r.SceneNumber, r.State)
	if s.Deleter != nil {
		mine := []string{media.FinalVideoKeyAt(v.ID, revision), media.CaptionsKeyAt(v.ID, revision), sceneClipBase(v.ID, r.SceneNumber, revision) + ".mp4"}
		if err := s.Deleter.Delete(ctx, mine); err != nil {
			log.WarnContext(ctx, "could not delete the failed regenerate's files; the bucket's expiry will", "error", err)
		}
	}
	if _, err := s.Store.Release(ctx, v.UserID, domain.RegenerateWorkID(v.ID, r.SceneNumber, revision)); err != nil {
		return Ended{}, &TransientError{Msg: fmt.Sprintf("release the regenerate's hold of %s: %v", v.ID, err)}
	}
	log.WarnContext(ctx, "scene regenerate failed; its hold released", "reason", failure)
	return e, nil
}

// readable turns a caught error into the text users see. A Lambda
// function's error reaches the workflow with a JSON Cause
// ({"errorMessage": ...}); SendTaskFailure's with the text itself.
func readable(f Failure) string {
	var lambdaCause struct {
		ErrorMessage string `json:"errorMessage"`
	}
	if json.Unmarshal([]byte(f.Cause), &lambdaCause) == nil && lambdaCause.ErrorMessage != "" {
		f.Cause = lambdaCause.ErrorMessage
	}
	switch f.Error {
	case "SceneFailedError":
		return f.Cause
	case "States.Timeout", "States.HeartbeatTimeout":
		return "a step of the video took too long"
	case "States.Aborted":
		return "the video's workflow was stopped"
	case "TransientError":
		return "a step kept failing: " + f.Cause
	}
	return "the video could not be made (" + f.Error + ")"
}
