package longform

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
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

	DetailType string                 `json:"detail-type,omitempty"`
	Detail     *ExecutionStatusChange `json:"detail,omitempty"`
}

// ExecutionStatusChange is the detail of Step Functions' "Step Functions
// Execution Status Change" event; the execution is named after the video.
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
	return FailTask{VideoID: d.Name, Failure: f}
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
