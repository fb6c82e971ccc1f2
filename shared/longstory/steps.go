package longstory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/mediagen-dev/mediagen/shared/catalog"
	"github.com/mediagen-dev/mediagen/shared/domain"
	"github.com/mediagen-dev/mediagen/shared/ffmpeg"
	"github.com/mediagen-dev/mediagen/shared/routing"
	"github.com/mediagen-dev/mediagen/shared/upstream"
)

// Task error types. The workflow matches them by name (a Lambda's errorType
// is the Go type name), so each step returns them unwrapped.

// TransientError is worth retrying: the workflow's Retry handles it.
type TransientError struct{ Msg string }

func (e *TransientError) Error() string { return e.Msg }

// SceneFailedError fails the whole video; its text names the scene.
type SceneFailedError struct{ Msg string }

func (e *SceneFailedError) Error() string { return e.Msg }

// Upstreams are the routes of each variant and their upstreams' clients
// (*upstream.Router): a scene follows its video model's routes, with
// failover, as a single generation does.
type Upstreams interface {
	Providers
	Plans(ctx context.Context, v catalog.Variant, resolved map[string]any, imageCount int) ([]routing.Plan, error)
}

// cancelScene stops a scene's job at the upstream it runs on.
func cancelScene(ctx context.Context, ups Providers, model string, sc domain.SceneState) error {
	name := sc.Upstream
	if name == "" {
		// Recorded before routing: the model's first route.
		v, err := catalog.LookupVersion(model)
		if err != nil {
			return err
		}
		if routes := ups.Routes(v.Model, v.Version); len(routes) > 0 {
			name = routes[0].Upstream
		}
	}
	p, err := ups.Provider(name)
	if err != nil {
		return err
	}
	return p.Cancel(ctx, sc.Job())
}

// Copier keeps the service's copy of an upstream output.
type Copier interface {
	Copy(ctx context.Context, src, keyBase string, kind domain.MediaKind) (string, error)
}

// Files moves files between the bucket and the step's scratch directory.
type Files interface {
	PutFile(ctx context.Context, key, path, contentType string) error
	GetFile(ctx context.Context, key, path string) error
	URL(key string) string
}

// Narrator speaks text in a language into an audio file under dir and
// returns its path and content type.
type Narrator interface {
	Speak(ctx context.Context, lang Language, text, dir string) (path, contentType string, err error)
}

// Steps are the workflow's tasks; each is one Lambda function.
type Steps struct {
	Store    Store
	Upstream Upstreams
	Notifier Notifier
	Copier   Copier
	Files    Files
	Narrator Narrator
	FFmpeg   ffmpeg.Runner
	// Queue carries the scenes' polls (the poller's queue), Tokens resumes
	// the workflow when a scene ends, and Slots caps the jobs at once per
	// upstream as for single generations (nil: no caps).
	Queue  Queue
	Tokens TaskTokens
	Slots  Slots
	// PollInterval is the first wait between polls of a scene's job.
	PollInterval time.Duration
	// WorkDir holds scratch files (Lambda: /tmp).
	WorkDir string
	Now     func() time.Time
	Log     *slog.Logger
}

func (s *Steps) log() *slog.Logger { return domain.Logger(s.Log) }

func (s *Steps) now() time.Time { return domain.Now(s.Now) }

// sceneInput is the upstream input of one scene: the model's clip length
// nearest SceneSeconds, landscape framing, and defaults for the rest.
func sceneInput(v catalog.Variant, prompt string) (map[string]any, error) {
	in := map[string]any{"prompt": prompt}
	if f, ok := v.DurationField(); ok {
		in[f.Name] = strconv.Itoa(v.NearestDuration(SceneSeconds))
	}
	if f, ok := v.Field("aspect_ratio"); ok {
		for _, want := range []string{"16:9", "landscape"} {
			for _, e := range f.Enum {
				if e == want && in["aspect_ratio"] == nil {
					in["aspect_ratio"] = want
				}
			}
		}
	}
	resolved := v.Resolve(in)
	for _, f := range v.Fields {
		if _, ok := resolved[f.Name]; f.Required && !ok {
			return nil, fmt.Errorf("%s needs %s, which a long-form scene cannot give", v.Version, f.Name)
		}
	}
	return resolved, nil
}

// upstreamError is a failure of a read or of a create that certainly
// started nothing: temporary ones are retried by the workflow.
func upstreamError(scene int, op string, err error) error {
	var ue *upstream.Error
	var conv *routing.ConvertError
	if errors.As(err, &ue) && !ue.Temporary() || errors.Is(err, upstream.ErrMalformed) || errors.As(err, &conv) {
		return &SceneFailedError{Msg: fmt.Sprintf("scene %d failed: upstream %s: %v", scene, op, err)}
	}
	return &TransientError{Msg: fmt.Sprintf("scene %d: upstream %s: %v", scene, op, err)}
}

// NarrateTask asks for every scene's narration; the scripts are read from
// the store.
type NarrateTask struct {
	VideoID string `json:"video_id"`
}

// Narration lists the narration track of each scene.
type Narration struct {
	Tracks []Track `json:"tracks"`
}

// Track is one scene's narration in the bucket.
type Track struct {
	SceneNumber int    `json:"scene_number"`
	Key         string `json:"key"`
}

// Narrate speaks each scene's script (its narration, else its prompt) and
// keeps the audio in the bucket.
func (s *Steps) Narrate(ctx context.Context, in NarrateTask) (Narration, error) {
	out := Narration{Tracks: []Track{}}
	v, err := s.Store.GetLongVideo(ctx, in.VideoID)
	if err != nil {
		return out, &TransientError{Msg: fmt.Sprintf("narration: read video: %v", err)}
	}
	if !v.EnableNarration {
		return out, nil
	}
	lang, ok := LookupLanguage(v.LanguageCode)
	if !ok {
		return out, &SceneFailedError{Msg: fmt.Sprintf("narration: unsupported language %q", v.LanguageCode)}
	}
	dir, err := os.MkdirTemp(s.WorkDir, "narrate-")
	if err != nil {
		return out, &TransientError{Msg: fmt.Sprintf("narration: scratch dir: %v", err)}
	}
	defer os.RemoveAll(dir)
	for _, sc := range v.Scenes {
		script := sc.Narration
		if script == "" {
			script = sc.Prompt
		}
		path, ctype, err := s.Narrator.Speak(ctx, lang, script, dir)
		if err != nil {
			return out, &TransientError{Msg: fmt.Sprintf("narration of scene %d: %v", sc.SceneNumber, err)}
		}
		key := fmt.Sprintf("long-videos/%s/narration/%03d%s", in.VideoID, sc.SceneNumber, filepath.Ext(path))
		if err := s.Files.PutFile(ctx, key, path, ctype); err != nil {
			return out, &TransientError{Msg: fmt.Sprintf("narration of scene %d: %v", sc.SceneNumber, err)}
		}
		out.Tracks = append(out.Tracks, Track{SceneNumber: sc.SceneNumber, Key: key})
	}
	return out, nil
}

// FinalizeTask names the assembled video.
type FinalizeTask struct {
	VideoID  string  `json:"video_id"`
	Key      string  `json:"key"`
	Duration float64 `json:"duration"`
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

// Finalize marks the video completed with its URL and measured length and
// captures its hold. A repeat changes nothing.
func (s *Steps) Finalize(ctx context.Context, in FinalizeTask) (Ended, error) {
	return s.finish(ctx, in.VideoID, domain.Outcome{Status: domain.StatusCompleted,
		OutputURLs: []string{s.Files.URL(in.Key)}, TotalDuration: in.Duration})
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
func (s *Steps) MarkFailed(ctx context.Context, in FailTask) (Ended, error) {
	if in.Detail != nil {
		in = failTaskOf(*in.Detail)
		if _, err := s.Store.GetLongVideo(ctx, in.VideoID); errors.Is(err, domain.ErrNotFound) {
			s.log().WarnContext(ctx, "execution event for no video of ours", "execution", in.VideoID)
			return Ended{}, nil
		}
	}
	view, err := s.finish(ctx, in.VideoID, domain.Outcome{Status: domain.StatusFailed, Error: readable(in.Failure)})
	if err != nil {
		return view, err
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

func (s *Steps) finish(ctx context.Context, videoID string, o domain.Outcome) (Ended, error) {
	err := s.Store.FinishLongVideo(ctx, videoID, o, s.now())
	if err != nil && !errors.Is(err, domain.ErrConflict) {
		return Ended{}, &TransientError{Msg: fmt.Sprintf("finish %s: %v", videoID, err)}
	}
	v, err := s.Store.GetLongVideo(ctx, videoID)
	if err != nil {
		return Ended{}, &TransientError{Msg: fmt.Sprintf("read %s: %v", videoID, err)}
	}
	settle, what := s.Store.Release, "released"
	if v.Status == domain.StatusCompleted {
		settle, what = s.Store.Capture, "captured"
	}
	settled, err := settle(ctx, v.UserID, v.ID)
	if err != nil {
		return Ended{}, &TransientError{Msg: fmt.Sprintf("settle %s: %v", videoID, err)}
	}
	if settled {
		s.log().InfoContext(ctx, "long video finished; hold "+what, "video_id", v.ID, "user_id", v.UserID,
			"status", v.Status, "credits", domain.FormatCredits(v.CreditsHeld))
		// Once, with the settlement: a retried step finds the hold settled.
		if err := notify(ctx, s.Notifier, v); err != nil {
			s.log().WarnContext(ctx, "could not enqueue the webhook", "video_id", v.ID, "error", err)
		}
	}
	return endedOf(v), nil
}
