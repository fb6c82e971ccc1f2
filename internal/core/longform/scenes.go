package longform

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/job"
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
	// Revision, when set, makes the scene again for the regenerate of that
	// revision of a completed video (RegenerateInput).
	Revision int `json:"revision,omitempty"`
}

// SceneClip is a finished scene, as its task hands it to the workflow.
type SceneClip struct {
	SceneNumber int    `json:"scene_number"`
	Key         string `json:"key"`
}

// ScenePoll asks the poller to look at one scene's job once: a poll
// message of kind job.KindScene. It carries the task token of the attempt
// that submitted it: once that token is gone (the task was retried, or the
// workflow moved on), the chain of polls stops.
type ScenePoll struct {
	// Kind is job.KindScene (messages enqueued before kinds have none,
	// and are known by their video_id: job.KindOf).
	Kind        string `json:"kind,omitempty"`
	VideoID     string `json:"video_id"`
	SceneNumber int    `json:"scene_number"`
	TaskToken   string `json:"task_token"`
	// Revision is the regenerate's, for a scene made again (SceneTask).
	Revision int `json:"revision,omitempty"`
	Attempt  int `json:"attempt,omitempty"`
	// Errors counts the polls in a row that could not read the job.
	Errors int `json:"errors,omitempty"`
}

// parseScenePoll decodes the body of a scene's poll message.
func parseScenePoll(body []byte) (ScenePoll, error) {
	var m ScenePoll
	if err := json.Unmarshal(body, &m); err != nil {
		return ScenePoll{}, fmt.Errorf("scene poll: %w", err)
	}
	if m.VideoID == "" || m.SceneNumber < 1 || m.TaskToken == "" {
		return ScenePoll{}, errors.New("scene poll: video_id, scene_number and task_token are required")
	}
	return m, nil
}

// SlotsFullError is a scene whose upstreams are all at their caps: the
// workflow's Retry asks again later, and the scene keeps its place in line.
type SlotsFullError struct{ Msg string }

func (e *SlotsFullError) Error() string { return e.Msg }

// sceneHolder names a scene in its upstream's slot line.
func sceneHolder(videoID string, n int) string { return domain.SceneSlotHolder(videoID, n) }

// sceneClipBase is where the clip of scene n made at revision is kept: a
// regenerate's clip has a key of its own, so the clip the final video was
// made of stays until the new final video is recorded.
func sceneClipBase(videoID string, n, revision int) string {
	if revision > 0 {
		return fmt.Sprintf("long-videos/%s/scenes/%03d-r%d", videoID, n, revision)
	}
	return fmt.Sprintf("long-videos/%s/scenes/%03d", videoID, n)
}

// regeneratedScene is the scene a regenerate of revision makes, with its
// state: ok is false when that regenerate no longer runs on v.
func regeneratedScene(v domain.LongVideo, n, revision int) (domain.Scene, domain.SceneState, bool) {
	r := v.Regenerating
	if v.Status != domain.StatusCompleted || r == nil || r.Revision != revision || r.SceneNumber != n {
		return domain.Scene{}, domain.SceneState{}, false
	}
	return domain.Scene{SceneNumber: n, Prompt: r.Prompt, Narration: r.Narration, Model: r.Model}, r.State, true
}

// SubmitScene starts one scene's job through the job engine (the one that
// runs a generation's: a slot at the first of its model's routes with
// room, failing over across routes), then leaves the job to the poller;
// the workflow waits on in.TaskToken meanwhile. A retried task never
// creates a job twice: it watches the job recorded, and a create whose
// answer was lost fails the scene.
func (s *Steps) SubmitScene(ctx context.Context, in SceneTask) (SceneTask, error) {
	n := in.SceneNumber
	v, err := s.Store.GetLongVideo(ctx, in.VideoID)
	if err != nil {
		return in, &TransientError{Msg: fmt.Sprintf("scene %d: read video: %v", n, err)}
	}
	state := v.SceneStatus[n]
	i := slices.IndexFunc(v.Scenes, func(sc domain.Scene) bool { return sc.SceneNumber == n })
	var again domain.Scene
	if in.Revision > 0 {
		var running bool
		if again, state, running = regeneratedScene(v, n, in.Revision); !running {
			return in, &SceneFailedError{Msg: fmt.Sprintf("scene %d stopped: its regenerate (revision %d) no longer runs", n, in.Revision)}
		}
	} else if v.Status != domain.StatusProcessing {
		return in, &SceneFailedError{Msg: fmt.Sprintf("scene %d stopped: the video is %s", n, v.Status)}
	}
	log := s.log().With("video_id", v.ID, "scene", n)
	if in.Revision > 0 {
		log = log.With("revision", in.Revision)
	}
	e := s.engine()
	first := ScenePoll{VideoID: v.ID, SceneNumber: n, TaskToken: in.TaskToken, Revision: in.Revision}
	switch {
	case state.ID != "":
		log.InfoContext(ctx, "scene already submitted; watching its job again", "upstream_id", state.ID)
		return in, s.watch(ctx, first, 0)
	case state.Submitting:
		e.Release(ctx, log, state.Upstream, sceneHolder(v.ID, n))
		log.ErrorContext(ctx, "upstream create outcome unknown", "alert", "operator", "upstream", state.Upstream,
			"action", "check the upstream's dashboard for a job of this scene that is still running or was billed")
		return in, &SceneFailedError{Msg: fmt.Sprintf("scene %d failed: the upstream's answer to the job was lost", n)}
	}
	if i < 0 {
		return in, &SceneFailedError{Msg: fmt.Sprintf("scene %d: the video has no such scene", n)}
	}
	scene := v.Scenes[i]
	if in.Revision > 0 {
		scene = again
	}
	model := v.SceneModel(scene)
	variant, err := videoVariant(model)
	if err != nil {
		return in, &SceneFailedError{Msg: fmt.Sprintf("scene %d: model %s: %v", n, model, err)}
	}
	input, err := sceneInput(variant, ScenePrompt(v.VideoStyle, v.Prompt, scene), v.Studio.AspectRatio)
	if err != nil {
		return in, &SceneFailedError{Msg: fmt.Sprintf("scene %d: %v", n, err)}
	}
	plans, err := s.Upstream.Plans(ctx, variant, input, 1)
	if err != nil {
		return in, upstreamError(ctx, log, n, "", err)
	}
	started, err := e.Start(ctx, log, &sceneOwner{store: s.Store, now: s.Now, log: log, videoID: v.ID, n: n, revision: in.Revision}, plans)
	if err != nil {
		return in, s.notStarted(ctx, log, v.ID, n, err)
	}
	if started.WaitingAt != "" {
		return in, &SlotsFullError{Msg: fmt.Sprintf("scene %d waits for a slot at %s", n, started.WaitingAt)}
	}
	log.InfoContext(ctx, "scene submitted", "upstream", started.Run.Upstream, "upstream_id", started.Run.Jobs[0].ID)
	return in, s.watch(ctx, first, e.Delay(0))
}

// notStarted frees the slot of a scene whose job did not start and says
// why as the workflow matches it.
func (s *Steps) notStarted(ctx context.Context, log *slog.Logger, videoID string, n int, err error) error {
	var f *job.Failure
	if !errors.As(err, &f) {
		return &TransientError{Msg: fmt.Sprintf("scene %d: %v", n, err)}
	}
	s.engine().Release(ctx, log, f.Slot(), sceneHolder(videoID, n))
	var failed *SceneFailedError
	var transient *TransientError
	switch {
	case f.Recording && errors.As(f.Cause, &failed):
		return failed
	case f.Recording && errors.As(f.Cause, &transient):
		return transient
	case f.Unknown:
		return &SceneFailedError{Msg: fmt.Sprintf("scene %d failed: the upstream's answer to the job was lost", n)}
	case f.Cause == nil:
		return &SceneFailedError{Msg: fmt.Sprintf("scene %d failed: %s", n, f.Reason)}
	}
	return upstreamError(ctx, log, n, f.Upstream, f.Cause)
}

// sceneOwner is a scene as the owner of the job being started: its state
// in the video's record (or its regenerate's) marks a create being sent,
// so a retried task never creates a second job. It holds the store and
// clock it records with, not the Steps: what the Scene task's function can
// reach is what its role allows (deploy/internal/reach follows every
// method of a type the engine's port is given, so holding the Steps would
// reach the hold's settlement, which only the poller and MarkFailed make).
type sceneOwner struct {
	store    Store
	now      func() time.Time
	log      *slog.Logger
	videoID  string
	n        int
	revision int // a regenerate's, else 0
}

func (o *sceneOwner) Holder() string { return sceneHolder(o.videoID, o.n) }
func (o *sceneOwner) Hook() string   { return "" }

func (o *sceneOwner) Sending(ctx context.Context, name string) error {
	return o.set(ctx, domain.SceneState{Status: domain.StatusProcessing, Upstream: name, Submitting: true})
}

// Unsent puts the scene back where it was, even if the task is being
// stopped meanwhile.
func (o *sceneOwner) Unsent(ctx context.Context) {
	if err := o.set(ctx, domain.SceneState{Status: domain.StatusProcessing}); err != nil {
		o.log.WarnContext(ctx, "could not clear the scene's create mark", "error", err)
	}
}

func (o *sceneOwner) Record(ctx context.Context, run domain.UpstreamRun) error {
	return o.set(ctx, domain.SceneState{Status: domain.StatusProcessing, Upstream: run.Upstream, UpstreamJob: run.Jobs[0]})
}

// set records the scene's state (its regenerate's when revision is set).
// A video no longer processing, or a regenerate that ended, stops the
// scene (SceneFailedError); another failure is retried by the workflow.
func (o *sceneOwner) set(ctx context.Context, state domain.SceneState) error {
	err := storeScene(ctx, o.store, domain.Now(o.now), o.videoID, o.n, o.revision, state)
	switch {
	case errors.Is(err, domain.ErrConflict):
		return &SceneFailedError{Msg: fmt.Sprintf("scene %d stopped: the video is no longer processing, or its regenerate ended", o.n)}
	case err != nil:
		return &TransientError{Msg: fmt.Sprintf("scene %d: record state: %v", o.n, err)}
	}
	return nil
}

// storeScene writes a scene's state: the video's while it is processing,
// the regenerate's of revision when set.
func storeScene(ctx context.Context, store Store, at time.Time, videoID string, n, revision int, state domain.SceneState) error {
	if revision > 0 {
		return store.SetRegenerateState(ctx, videoID, revision, state, at)
	}
	return store.SetSceneStatus(ctx, videoID, n, state, at)
}

// engine is the job engine on the steps' ports: the one that runs a
// generation's job.
func (s *Steps) engine() *job.Engine {
	return &job.Engine{Upstreams: s.Upstream, Slots: s.Slots, Copier: s.Copier, PollInterval: s.PollInterval, Now: s.Now}
}

// watch enqueues a poll of the scene's job.
func (s *Steps) watch(ctx context.Context, m ScenePoll, delay time.Duration) error {
	m.Kind = job.KindScene
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
	if m.Revision > 0 {
		var running bool
		if _, state, running = regeneratedScene(v, n, m.Revision); !running {
			// Canceled, or ended by the sweeper: Cancel stops the job too.
			return s.resume(ctx, log, m.TaskToken, nil, &SceneFailedError{Msg: fmt.Sprintf("scene %d stopped: its regenerate (revision %d) no longer runs", n, m.Revision)})
		}
	} else if v.Status != domain.StatusProcessing {
		// Canceled or failed meanwhile: MarkFailed or Cancel stops the jobs
		// too; doing it here as well costs one more idempotent cancel.
		stopSceneJob(ctx, log, s.Upstream, s.Slots, v, n, state)
		return s.resume(ctx, log, m.TaskToken, nil, &SceneFailedError{Msg: fmt.Sprintf("scene %d stopped: the video is %s", n, v.Status)})
	}
	if state.ID == "" {
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
	w := &watchedScene{s: s, log: log, v: v, m: m, state: state}
	return s.engine().Poll(ctx, log, w, job.Progress{Attempt: m.Attempt, Errors: m.Errors})
}

// watchedScene is a scene whose job the engine polls. Its completion hook
// records the clip and resumes the waiting task with it.
type watchedScene struct {
	s     *Steps
	log   *slog.Logger
	v     domain.LongVideo
	m     ScenePoll
	state domain.SceneState
}

func (w *watchedScene) Run() domain.UpstreamRun { return w.state.Run() }

func (w *watchedScene) Outputs() job.Outputs {
	return job.Outputs{Want: 1, Kind: domain.MediaVideo, KeyBase: func(int) string { return sceneClipBase(w.v.ID, w.m.SceneNumber, w.m.Revision) }}
}

func (w *watchedScene) Again(ctx context.Context, p job.Progress, delay time.Duration) error {
	m := w.m
	m.Attempt, m.Errors = p.Attempt, p.Errors
	return w.s.watch(ctx, m, delay)
}

// Running keeps the provider's own figure of the scene's job with its
// state, only upward, for the video's view (running scenes count by it).
// Shown, not needed: a failed write only logs.
func (w *watchedScene) Running(ctx context.Context, percent int) {
	p := min(percent, 100)
	if p <= w.state.Progress {
		return
	}
	w.state.Progress = p
	if err := w.s.Store.SetSceneStatus(ctx, w.v.ID, w.m.SceneNumber, w.state, w.s.now()); err != nil && !errors.Is(err, domain.ErrConflict) {
		w.log.WarnContext(ctx, "could not store the scene's progress", "progress", p, "error", err)
	}
}

// Finishing: a scene has no finish to claim; a video that ends while the
// clip is copied is found when the clip is recorded (Succeeded).
func (w *watchedScene) Finishing(context.Context) (bool, error) { return true, nil }

// Failed records the scene's failure, frees its slot and fails the
// workflow's task, which fails the video (MarkFailed releases its hold).
func (w *watchedScene) Failed(ctx context.Context, reason string) error {
	s, n := w.s, w.m.SceneNumber
	state := w.state
	state.Status = domain.StatusFailed
	if err := storeScene(ctx, s.Store, s.now(), w.v.ID, n, w.m.Revision, state); err != nil && !errors.Is(err, domain.ErrConflict) {
		w.log.WarnContext(ctx, "could not record the scene's failure", "error", err)
	}
	s.engine().Release(ctx, w.log, state.Upstream, sceneHolder(w.v.ID, n))
	why := fmt.Sprintf("scene %d failed: %s", n, reason)
	w.log.WarnContext(ctx, "scene failed", "reason", why)
	return s.resume(ctx, w.log, w.m.TaskToken, nil, &SceneFailedError{Msg: why})
}

// Succeeded records the clip kept (at a key that depends only on the
// video and scene, so a repeat overwrites), frees the slot and resumes the
// workflow with the clip.
func (w *watchedScene) Succeeded(ctx context.Context, _ []string) error {
	s, v, n := w.s, w.v, w.m.SceneNumber
	state := w.state
	state.Status = domain.StatusCompleted
	key := sceneClipBase(v.ID, n, w.m.Revision) + ".mp4"
	err := storeScene(ctx, s.Store, s.now(), v.ID, n, w.m.Revision, state)
	if errors.Is(err, domain.ErrConflict) && s.Deleter != nil {
		// The video ended (canceled, failed, its files perhaps deleted)
		// while the clip was copied: this write comes after the copy, so a
		// delete of the video's files that listed before the copy landed
		// is followed by this cleanup. The clip serves nothing now.
		if derr := s.Deleter.Delete(ctx, []string{key}); derr != nil {
			return fmt.Errorf("scene %d of %s: delete the clip kept after the video ended: %w", n, v.ID, derr)
		}
	}
	if err != nil && !errors.Is(err, domain.ErrConflict) {
		return fmt.Errorf("scene %d of %s: record completed: %w", n, v.ID, err)
	}
	s.engine().Release(ctx, w.log, state.Upstream, sceneHolder(v.ID, n))
	out, err := json.Marshal(SceneClip{SceneNumber: n, Key: key})
	if err != nil {
		return fmt.Errorf("encode scene clip: %w", err)
	}
	w.log.InfoContext(ctx, "scene kept", "upstream", state.Upstream, "upstream_id", state.ID)
	return s.resume(ctx, w.log, w.m.TaskToken, out, nil)
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
	if state.ID != "" && state.Status == domain.StatusProcessing {
		if err := cancelScene(ctx, ups, sceneModel(v, n), state); err != nil {
			log.WarnContext(ctx, "could not cancel a scene upstream", "scene", n, "upstream", state.Upstream,
				"upstream_id", state.ID, "error", err)
		} else {
			log.InfoContext(ctx, "scene job canceled upstream", "scene", n, "upstream", state.Upstream, "upstream_id", state.ID)
		}
	}
	if slots == nil || state.Status == domain.StatusCompleted || state.Status == domain.StatusFailed {
		return // a finished scene already freed its slot
	}
	names := []string{state.Upstream}
	if variant, err := catalog.LookupVersion(sceneModel(v, n)); err == nil {
		for _, r := range ups.Routes(variant.Model, variant.Version) {
			if !slices.Contains(names, r.Upstream) {
				names = append(names, r.Upstream)
			}
		}
	}
	e := &job.Engine{Upstreams: ups, Slots: slots}
	for _, name := range names {
		e.Release(ctx, log, name, sceneHolder(v.ID, n))
	}
}

// sceneModel is the model_version that makes scene n of v.
func sceneModel(v domain.LongVideo, n int) string {
	i := slices.IndexFunc(v.Scenes, func(sc domain.Scene) bool { return sc.SceneNumber == n })
	if i < 0 {
		return v.Model
	}
	return v.SceneModel(v.Scenes[i])
}

// stopScenes stops every scene of a video that may still run or wait.
func stopScenes(ctx context.Context, log *slog.Logger, ups Providers, slots Slots, v domain.LongVideo) {
	for _, sc := range v.Scenes {
		stopSceneJob(ctx, log, ups, slots, v, sc.SceneNumber, v.SceneStatus[sc.SceneNumber])
	}
}

// HandleScenePoll polls a scene for a poll message of kind job.KindScene:
// the poller's port for the scenes (generation.ScenePolls).
func (s *Steps) HandleScenePoll(ctx context.Context, body []byte) error {
	m, err := parseScenePoll(body)
	if err != nil {
		// Never valid: delivering it again would not help.
		s.log().WarnContext(ctx, "scene poll dropped", "error", err)
		return nil
	}
	return s.PollScene(ctx, m)
}
