package longform

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/mediagen-dev/mediagen/internal/adapters/upstream"
	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/media"
	"github.com/mediagen-dev/mediagen/internal/core/routing"
)

// SubmitSceneStep is the Scene task: it takes an upstream slot, creates the
// scene's job and queues its first poll.
func SubmitSceneStep(store Store, ups Upstreams, slots Slots, queue Queue, settings StepSettings) func(context.Context, SceneTask) (SceneTask, error) {
	s := settings.steps()
	s.Store, s.Upstream, s.Slots, s.Queue = store, ups, slots, queue
	return s.SubmitScene
}

// ScenePoller takes the poll queue's scene messages (HandleMessage) for the
// poller: it watches each scene's job, keeps its clip and resumes the
// waiting task; deleter deletes a clip kept after its video ended.
func ScenePoller(store Store, ups Upstreams, slots Slots, queue Queue, tokens TaskTokens, copier Copier, deleter Deleter, settings StepSettings) *Steps {
	s := settings.steps()
	s.Store, s.Upstream, s.Slots, s.Queue, s.Tokens, s.Copier, s.Deleter = store, ups, slots, queue, tokens, copier, deleter
	return s
}

// A scene runs as one workflow task that waits on a task token: the task
// submits the scene's job (SubmitScene) and the poller resumes the workflow
// when the job ends (PollScene). So the workflow carries only ids, and a
// scene adds the same few history events however long its provider takes.

// SceneTask is the payload of the workflow's Scene task.
type SceneTask struct {
	VideoID     string `json:"video_id"`
	SceneNumber int    `json:"scene_number"`
	TaskToken   string `json:"task_token"`
}

// SceneClip is a finished scene, as its task hands it to the workflow.
type SceneClip struct {
	SceneNumber int    `json:"scene_number"`
	Key         string `json:"key"`
}

// ScenePoll asks the poller to look at one scene's job once. It carries the
// task token of the attempt that submitted it: once that token is gone (the
// task was retried, or the workflow moved on), the chain of polls stops.
type ScenePoll struct {
	VideoID     string `json:"video_id"`
	SceneNumber int    `json:"scene_number"`
	TaskToken   string `json:"task_token"`
	Attempt     int    `json:"attempt,omitempty"`
	// Errors counts the polls in a row that could not read the job.
	Errors int `json:"errors,omitempty"`
}

// ParseScenePoll decodes a queue message body; ok is false for a message
// that is not a scene's (a generation's poll).
func ParseScenePoll(body string) (m ScenePoll, ok bool, err error) {
	var probe struct {
		VideoID *string `json:"video_id"`
	}
	if json.Unmarshal([]byte(body), &probe) != nil || probe.VideoID == nil {
		return ScenePoll{}, false, nil
	}
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		return ScenePoll{}, true, fmt.Errorf("scene poll: %w", err)
	}
	if m.VideoID == "" || m.SceneNumber < 1 || m.TaskToken == "" {
		return ScenePoll{}, true, errors.New("scene poll: video_id, scene_number and task_token are required")
	}
	return m, true, nil
}

// SlotsFullError is a scene whose upstreams are all at their caps: the
// workflow's Retry asks again later, and the scene keeps its place in line.
type SlotsFullError struct{ Msg string }

func (e *SlotsFullError) Error() string { return e.Msg }

// MaxSceneReadErrors bounds the polls in a row that may fail to read a
// scene's job before the scene fails.
const MaxSceneReadErrors = 5

// sceneHolder names a scene in its upstream's slot line.
func sceneHolder(videoID string, n int) string { return domain.SceneSlotHolder(videoID, n) }

// sceneKeyBase is where a scene's clip is kept (the extension is added).
func sceneKeyBase(videoID string, n int) string {
	return fmt.Sprintf("long-videos/%s/scenes/%03d", videoID, n)
}

// SubmitScene starts one scene's job on the first of its model's routes
// that has room and takes it, then leaves the job to the poller; the
// workflow waits on in.TaskToken meanwhile. A retried task never creates a
// job twice: it watches the job recorded, and a create whose answer was
// lost fails the scene.
func (s *Steps) SubmitScene(ctx context.Context, in SceneTask) (SceneTask, error) {
	n := in.SceneNumber
	v, err := s.Store.GetLongVideo(ctx, in.VideoID)
	if err != nil {
		return in, &TransientError{Msg: fmt.Sprintf("scene %d: read video: %v", n, err)}
	}
	if v.Status != domain.StatusProcessing {
		return in, &SceneFailedError{Msg: fmt.Sprintf("scene %d stopped: the video is %s", n, v.Status)}
	}
	log := s.log().With("video_id", v.ID, "scene", n)
	state := v.SceneStatus[n]
	switch {
	case state.UpstreamID != "":
		log.InfoContext(ctx, "scene already submitted; watching its job again", "upstream_id", state.UpstreamID)
		return in, s.watch(ctx, ScenePoll{VideoID: v.ID, SceneNumber: n, TaskToken: in.TaskToken}, 0)
	case state.Submitting:
		s.releaseSceneSlot(ctx, log, state.Upstream, v.ID, n)
		log.ErrorContext(ctx, "upstream create outcome unknown", "alert", "operator", "upstream", state.Upstream,
			"action", "check the upstream's dashboard for a job of this scene that is still running or was billed")
		return in, &SceneFailedError{Msg: fmt.Sprintf("scene %d failed: the upstream's answer to the job was lost", n)}
	}
	i := slices.IndexFunc(v.Scenes, func(sc domain.Scene) bool { return sc.SceneNumber == n })
	if i < 0 {
		return in, &SceneFailedError{Msg: fmt.Sprintf("scene %d: the video has no such scene", n)}
	}
	variant, err := videoVariant(v.Model)
	if err != nil {
		return in, &SceneFailedError{Msg: fmt.Sprintf("scene %d: model %s: %v", n, v.Model, err)}
	}
	input, err := sceneInput(variant, ScenePrompt(v.VideoStyle, v.Prompt, v.Scenes[i]), v.Studio.AspectRatio)
	if err != nil {
		return in, &SceneFailedError{Msg: fmt.Sprintf("scene %d: %v", n, err)}
	}
	plans, err := s.Upstream.Plans(ctx, variant, input, 1)
	if err != nil {
		return in, upstreamError(ctx, log, n, "", err)
	}
	job, name, err := s.startScene(ctx, log, v.ID, n, plans)
	if err != nil {
		return in, err
	}
	log.InfoContext(ctx, "scene submitted", "upstream", name, "upstream_id", job.ID)
	return in, s.watch(ctx, ScenePoll{VideoID: v.ID, SceneNumber: n, TaskToken: in.TaskToken}, s.sceneDelay(0))
}

// startScene takes a slot and creates the job, route by route, as a single
// generation does: a route at its cap or one that certainly started nothing
// passes to the next; the scene waits in the first full route's line when
// none has room.
func (s *Steps) startScene(ctx context.Context, log *slog.Logger, videoID string, n int, plans []routing.Plan) (domain.UpstreamJob, string, error) {
	holder := sceneHolder(videoID, n)
	capped := ""
	var lastErr error
	lastName := ""
	for _, plan := range plans {
		name := plan.Route.Upstream
		got, err := s.acquireSceneSlot(ctx, name, holder)
		if err != nil {
			return domain.UpstreamJob{}, "", &TransientError{Msg: fmt.Sprintf("scene %d: upstream slot: %v", n, err)}
		}
		if !got {
			if capped == "" {
				capped = name
			} else {
				s.releaseSceneSlot(ctx, log, name, videoID, n) // wait only in the first line
			}
			continue
		}
		if capped != "" {
			s.releaseSceneSlot(ctx, log, capped, videoID, n)
			capped = ""
		}
		job, err := s.createScene(ctx, log, videoID, n, plan)
		if err == nil {
			return job, name, nil
		}
		s.releaseSceneSlot(ctx, log, name, videoID, n)
		if !errors.Is(err, upstream.ErrNotStarted) {
			return domain.UpstreamJob{}, "", err
		}
		log.WarnContext(ctx, "upstream started nothing; trying the next route", "upstream", name, "error", err)
		lastErr, lastName = err, name
	}
	if capped != "" {
		return domain.UpstreamJob{}, "", &SlotsFullError{Msg: fmt.Sprintf("scene %d waits for a slot at %s", n, capped)}
	}
	return domain.UpstreamJob{}, "", upstreamError(ctx, log, n, lastName, lastErr)
}

// createScene sends the create of one route, recording first that it is
// being sent: a retry after a crash then knows a job may exist.
func (s *Steps) createScene(ctx context.Context, log *slog.Logger, videoID string, n int, plan routing.Plan) (domain.UpstreamJob, error) {
	name := plan.Route.Upstream
	p, err := s.Upstream.Provider(name)
	if err != nil {
		return domain.UpstreamJob{}, &SceneFailedError{Msg: fmt.Sprintf("scene %d: %v", n, err)}
	}
	if err := s.setScene(ctx, videoID, n, domain.SceneState{Status: domain.StatusProcessing, Upstream: name, Submitting: true}); err != nil {
		return domain.UpstreamJob{}, err
	}
	job, err := p.Submit(ctx, plan.Route.Model, plan.Input, "")
	var unknown *upstream.UnknownOutcomeError
	switch {
	case errors.As(err, &unknown):
		log.ErrorContext(ctx, "upstream create outcome unknown", "alert", "operator", "upstream", name,
			"cause", err.Error(), "action", "check the upstream's dashboard for a job of this scene that is still running or was billed")
		return domain.UpstreamJob{}, &SceneFailedError{Msg: fmt.Sprintf("scene %d failed: the upstream's answer to the job was lost", n)}
	case err != nil:
		// Nothing started (or it was refused): the scene is back where it
		// was, even if the task is being stopped meanwhile.
		if rerr := s.setScene(context.WithoutCancel(ctx), videoID, n, domain.SceneState{Status: domain.StatusProcessing}); rerr != nil {
			log.WarnContext(ctx, "could not clear the scene's create mark", "error", rerr)
		}
		if errors.Is(err, upstream.ErrNotStarted) {
			return domain.UpstreamJob{}, err
		}
		return domain.UpstreamJob{}, upstreamError(ctx, log, n, name, err)
	}
	state := domain.SceneState{Status: domain.StatusProcessing, UpstreamID: job.ID, Upstream: name, CancelURL: job.CancelURL,
		StatusURL: job.StatusURL, ResponseURL: job.ResponseURL}
	// Recorded even if the task is being stopped: the job exists.
	if err := s.setScene(context.WithoutCancel(ctx), videoID, n, state); err != nil {
		// The job runs but is not recorded: stop it rather than pay for a
		// clip nobody will fetch; the retry finds the create mark and fails.
		if cerr := p.Cancel(ctx, job); cerr != nil {
			log.WarnContext(ctx, "could not cancel the unrecorded scene job", "upstream_id", job.ID, "error", cerr)
		}
		return domain.UpstreamJob{}, err
	}
	return job, nil
}

// setScene records a scene's state. A video no longer processing stops the
// scene (SceneFailedError); another failure is retried by the workflow.
func (s *Steps) setScene(ctx context.Context, videoID string, n int, state domain.SceneState) error {
	err := s.Store.SetSceneStatus(ctx, videoID, n, state, s.now())
	switch {
	case errors.Is(err, domain.ErrConflict):
		return &SceneFailedError{Msg: fmt.Sprintf("scene %d stopped: the video is no longer processing", n)}
	case err != nil:
		return &TransientError{Msg: fmt.Sprintf("scene %d: record state: %v", n, err)}
	}
	return nil
}

func (s *Steps) acquireSceneSlot(ctx context.Context, name, holder string) (bool, error) {
	limit := s.Upstream.Limit(name)
	if s.Slots == nil || limit <= 0 {
		return true, nil
	}
	return s.Slots.AcquireSlot(ctx, name, holder, limit, s.now())
}

// releaseSceneSlot frees the scene's slot or its place in line, if caps
// apply; a failure leaves the slot to its owner's next release.
func (s *Steps) releaseSceneSlot(ctx context.Context, log *slog.Logger, name, videoID string, n int) {
	if name == "" || s.Slots == nil || s.Upstream.Limit(name) <= 0 {
		return
	}
	if err := s.Slots.ReleaseSlot(ctx, name, sceneHolder(videoID, n)); err != nil {
		log.WarnContext(ctx, "could not release the scene's upstream slot", "upstream", name, "error", err)
	}
}

// sceneDelay is the wait before poll attempt n of a scene's job.
func (s *Steps) sceneDelay(attempt int) time.Duration {
	first := s.PollInterval
	if first <= 0 {
		first = time.Second
	}
	return min(first*time.Duration(attempt+1), 15*first)
}

// watch enqueues a poll of the scene's job.
func (s *Steps) watch(ctx context.Context, m ScenePoll, delay time.Duration) error {
	body, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode scene poll: %w", err)
	}
	if err := s.Queue.Send(ctx, body, delay); err != nil {
		return &TransientError{Msg: fmt.Sprintf("scene %d: enqueue its poll: %v", m.SceneNumber, err)}
	}
	return nil
}

// PollScene looks at a scene's job once. When the job succeeded it keeps
// the clip in the bucket and resumes the workflow with it; when it failed
// it fails the workflow's task; otherwise it polls again later. It returns
// an error only when the message should be delivered again.
func (s *Steps) PollScene(ctx context.Context, m ScenePoll) error {
	v, err := s.Store.GetLongVideo(ctx, m.VideoID)
	if errors.Is(err, domain.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("poll scene %d of %s: %w", m.SceneNumber, m.VideoID, err)
	}
	n := m.SceneNumber
	log := s.log().With("video_id", v.ID, "scene", n)
	state := v.SceneStatus[n]
	if v.Status != domain.StatusProcessing {
		// Canceled or failed meanwhile: MarkFailed or Cancel stops the jobs
		// too; doing it here as well costs one more idempotent cancel.
		stopSceneJob(ctx, log, s.Upstream, s.Slots, v, n, state)
		return s.resume(ctx, log, m.TaskToken, nil, &SceneFailedError{Msg: fmt.Sprintf("scene %d stopped: the video is %s", n, v.Status)})
	}
	if state.UpstreamID == "" {
		log.WarnContext(ctx, "poll of a scene with no job recorded; dropped")
		return nil
	}
	// The heartbeat tells whether a task still waits on this chain's token.
	if err := s.Tokens.SendTaskHeartbeat(ctx, m.TaskToken); errors.Is(err, domain.ErrTaskGone) {
		log.InfoContext(ctx, "the scene's task no longer waits on this poll chain; it stops")
		return nil
	} else if err != nil {
		return fmt.Errorf("poll scene %d of %s: heartbeat: %w", n, v.ID, err)
	}
	p, err := s.Upstream.Provider(state.Upstream)
	if err != nil {
		return s.failScene(ctx, log, v, m, state, fmt.Sprintf("scene %d: %v", n, err))
	}
	r, err := p.Get(ctx, state.Job())
	if err != nil {
		var ue *upstream.Error
		if (errors.As(err, &ue) && !ue.Temporary()) || errors.Is(err, upstream.ErrMalformed) || m.Errors+1 >= MaxSceneReadErrors {
			log.WarnContext(ctx, "giving up on the scene's job", "error", err)
			return s.failScene(ctx, log, v, m, state, fmt.Sprintf("scene %d failed: %s", n, upstream.Public(state.Upstream, err)))
		}
		log.WarnContext(ctx, "could not read the scene's job; polling again", "error", err)
		m.Attempt, m.Errors = m.Attempt+1, m.Errors+1
		return s.watch(ctx, m, s.sceneDelay(m.Attempt))
	}
	switch r.Status {
	case upstream.StatusSucceeded:
		return s.keepScene(ctx, log, v, m, state, r)
	case upstream.StatusFailed, upstream.StatusCanceled, upstream.StatusAborted:
		reason := r.Error
		if reason == "" {
			reason = "the job was " + r.Status
		}
		return s.failScene(ctx, log, v, m, state, fmt.Sprintf("scene %d failed: upstream: %s", n, reason))
	}
	if p := min(r.Progress, 100); p > state.Progress {
		// The provider's own progress, kept with the scene's state for the
		// video's view; shown, not needed, so a failed write only logs.
		state.Progress = p
		if err := s.Store.SetSceneStatus(ctx, v.ID, n, state, s.now()); err != nil && !errors.Is(err, domain.ErrConflict) {
			log.WarnContext(ctx, "could not store the scene's progress", "progress", p, "error", err)
		}
	}
	m.Attempt, m.Errors = m.Attempt+1, 0
	return s.watch(ctx, m, s.sceneDelay(m.Attempt))
}

// keepScene copies a finished clip into the bucket (a key that depends only
// on the video and scene, so a repeat overwrites), frees the slot and
// resumes the workflow with the clip.
func (s *Steps) keepScene(ctx context.Context, log *slog.Logger, v domain.LongVideo, m ScenePoll, state domain.SceneState, r upstream.Result) error {
	n := m.SceneNumber
	if len(r.Outputs) == 0 || r.Outputs[0] == "" {
		return s.failScene(ctx, log, v, m, state, fmt.Sprintf("scene %d failed: the provider returned no video", n))
	}
	if _, err := s.Copier.Copy(ctx, r.Outputs[0], sceneKeyBase(v.ID, n), domain.MediaVideo); err != nil {
		if errors.Is(err, media.ErrRejected) {
			return s.failScene(ctx, log, v, m, state, fmt.Sprintf("scene %d failed: %v", n, err))
		}
		// Cut off or unreachable: the next poll copies again.
		log.WarnContext(ctx, "could not keep the scene's clip yet", "error", err)
		m.Attempt++
		return s.watch(ctx, m, s.sceneDelay(m.Attempt))
	}
	state.Status = domain.StatusCompleted
	err := s.Store.SetSceneStatus(ctx, v.ID, n, state, s.now())
	if errors.Is(err, domain.ErrConflict) && s.Deleter != nil {
		// The video ended (canceled, failed, its files perhaps deleted)
		// while the clip was copied: this write comes after the copy, so a
		// delete of the video's files that listed before the copy landed
		// is followed by this cleanup. The clip serves nothing now.
		if derr := s.Deleter.Delete(ctx, []string{sceneKeyBase(v.ID, n) + ".mp4"}); derr != nil {
			return fmt.Errorf("scene %d of %s: delete the clip kept after the video ended: %w", n, v.ID, derr)
		}
	}
	if err != nil && !errors.Is(err, domain.ErrConflict) {
		return fmt.Errorf("scene %d of %s: record completed: %w", n, v.ID, err)
	}
	s.releaseSceneSlot(ctx, log, state.Upstream, v.ID, n)
	out, err := json.Marshal(SceneClip{SceneNumber: n, Key: sceneKeyBase(v.ID, n) + ".mp4"})
	if err != nil {
		return fmt.Errorf("encode scene clip: %w", err)
	}
	log.InfoContext(ctx, "scene kept", "upstream", state.Upstream, "upstream_id", state.UpstreamID)
	return s.resume(ctx, log, m.TaskToken, out, nil)
}

// failScene records a scene's failure, frees its slot and fails the
// workflow's task, which fails the video (MarkFailed releases its hold).
func (s *Steps) failScene(ctx context.Context, log *slog.Logger, v domain.LongVideo, m ScenePoll, state domain.SceneState, reason string) error {
	state.Status = domain.StatusFailed
	if err := s.Store.SetSceneStatus(ctx, v.ID, m.SceneNumber, state, s.now()); err != nil && !errors.Is(err, domain.ErrConflict) {
		log.WarnContext(ctx, "could not record the scene's failure", "error", err)
	}
	s.releaseSceneSlot(ctx, log, state.Upstream, v.ID, m.SceneNumber)
	log.WarnContext(ctx, "scene failed", "reason", reason)
	return s.resume(ctx, log, m.TaskToken, nil, &SceneFailedError{Msg: reason})
}

// resume ends the waiting task: with output, or with failure's type name
// as the error (the workflow matches it like a Lambda's errorType). A token
// already gone means the task ended otherwise; nothing is left to do.
func (s *Steps) resume(ctx context.Context, log *slog.Logger, token string, output []byte, failure error) error {
	var err error
	if failure != nil {
		err = s.Tokens.SendTaskFailure(ctx, token, "SceneFailedError", failure.Error())
	} else {
		err = s.Tokens.SendTaskSuccess(ctx, token, output)
	}
	if errors.Is(err, domain.ErrTaskGone) {
		log.InfoContext(ctx, "the scene's task had already ended")
		return nil
	}
	if err != nil {
		return fmt.Errorf("resume the workflow: %w", err)
	}
	return nil
}

// stopSceneJob cancels a scene's job if it may still run and frees its
// slot, or its place in every line it may wait in.
func stopSceneJob(ctx context.Context, log *slog.Logger, ups Providers, slots Slots, v domain.LongVideo, n int, state domain.SceneState) {
	if ups == nil {
		return
	}
	if state.UpstreamID != "" && state.Status == domain.StatusProcessing {
		if err := cancelScene(ctx, ups, v.Model, state); err != nil {
			log.WarnContext(ctx, "could not cancel a scene upstream", "scene", n, "upstream", state.Upstream,
				"upstream_id", state.UpstreamID, "error", err)
		} else {
			log.InfoContext(ctx, "scene job canceled upstream", "scene", n, "upstream", state.Upstream, "upstream_id", state.UpstreamID)
		}
	}
	if slots == nil || state.Status == domain.StatusCompleted || state.Status == domain.StatusFailed {
		return // a finished scene already freed its slot
	}
	names := []string{state.Upstream}
	if variant, err := catalog.LookupVersion(v.Model); err == nil {
		for _, r := range ups.Routes(variant.Model, variant.Version) {
			if !slices.Contains(names, r.Upstream) {
				names = append(names, r.Upstream)
			}
		}
	}
	for _, name := range names {
		if name == "" || ups.Limit(name) <= 0 {
			continue
		}
		if err := slots.ReleaseSlot(ctx, name, sceneHolder(v.ID, n)); err != nil {
			log.WarnContext(ctx, "could not release a scene's upstream slot", "scene", n, "upstream", name, "error", err)
		}
	}
}

// stopScenes stops every scene of a video that may still run or wait.
func stopScenes(ctx context.Context, log *slog.Logger, ups Providers, slots Slots, v domain.LongVideo) {
	for _, sc := range v.Scenes {
		stopSceneJob(ctx, log, ups, slots, v, sc.SceneNumber, v.SceneStatus[sc.SceneNumber])
	}
}

// HandleMessage polls a scene for a message of the poller's queue that is
// a scene's; handled is false for any other message (a generation's).
func (s *Steps) HandleMessage(ctx context.Context, body string) (handled bool, err error) {
	m, ok, err := ParseScenePoll(body)
	if !ok {
		return false, nil
	}
	if err != nil {
		// Never valid: delivering it again would not help.
		s.log().WarnContext(ctx, "scene poll dropped", "error", err)
		return true, nil
	}
	return true, s.PollScene(ctx, m)
}
