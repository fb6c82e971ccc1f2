package longform

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/mediagen-dev/mediagen/internal/adapters/ffmpeg"
	"github.com/mediagen-dev/mediagen/internal/adapters/upstream"
	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/media"
	"github.com/mediagen-dev/mediagen/internal/core/routing"
)

// Task error types. The workflow matches them by name (a Lambda's errorType
// is the Go type name), so each step returns them unwrapped.

// TransientError is worth retrying: the workflow's Retry handles it.
type TransientError struct{ Msg string }

func (e *TransientError) Error() string { return e.Msg }

// SceneFailedError fails the whole video; its text names the scene.
type SceneFailedError struct{ Msg string }

func (e *SceneFailedError) Error() string { return e.Msg }

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
	return p.Cancel(ctx, sc.UpstreamJob)
}

// Steps are the workflow's tasks; each is one Lambda function, built by its
// constructor (SubmitSceneStep, NarrateStep, AssembleStep, FinalizeStep,
// MarkFailedStep) with only the ports it uses, and the poller's share of
// the scenes by ScenePoller. The local runtime and the tests, which run
// every step in one process, fill one Steps with every port.
type Steps struct {
	Store    Store
	Upstream Upstreams
	Notifier Notifier
	Copier   Copier
	Files    Files
	// Retainer tags a completed video's files when its account keeps them
	// for less than the default retention (media.KeepFor).
	Retainer media.Retainer
	// Deleter deletes the final video of a video that did not end
	// completed (Assemble's late upload, MarkFailed's cleanup).
	Deleter  Deleter
	Narrator Narrator
	// Narrations keeps the narration tracks (Narrate).
	Narrations NarrationFiles
	FFmpeg     ffmpeg.Runner
	// Downloader fetches a music_url given as a URL (Assemble).
	Downloader Downloader
	// Music finds the object of a music_url naming an uploaded file
	// (Assemble).
	Music MusicFiles
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
	// CaptionFontDirs hold the caption fonts' files (CaptionFonts);
	// nil is DefaultCaptionFontDirs.
	CaptionFontDirs []string
}

// StepSettings are the task steps' knobs; zero values take defaults.
type StepSettings struct {
	PollInterval time.Duration
	WorkDir      string
	Now          func() time.Time
	Log          *slog.Logger
	// CaptionFontDirs hold the files of the fonts burned captions are
	// drawn in (CaptionFonts); nil is DefaultCaptionFontDirs.
	CaptionFontDirs []string
}

// steps is a Steps with settings applied: the step constructors (one per
// Lambda function, each taking exactly the ports its step uses) fill the
// ports.
func (st StepSettings) steps() *Steps {
	return &Steps{PollInterval: st.PollInterval, WorkDir: st.WorkDir, Now: st.Now, Log: st.Log, CaptionFontDirs: st.CaptionFontDirs}
}

func (s *Steps) log() *slog.Logger { return domain.Logger(s.Log) }

func (s *Steps) now() time.Time { return domain.Now(s.Now) }

// sceneInput is the upstream input of one scene in the video's frame
// (domain.AspectLandscape or domain.AspectPortrait; "" is landscape): the
// model's clip length nearest SceneSeconds, the frame by the model's own
// name for it, and defaults for the rest. A model without an upright frame
// cannot make a portrait scene.
func sceneInput(v catalog.Variant, prompt, aspect string) (map[string]any, error) {
	in := map[string]any{"prompt": prompt}
	if f, ok := v.DurationField(); ok {
		in[f.Name] = strconv.Itoa(v.NearestDuration(SceneSeconds))
	}
	names := []string{"16:9", "landscape"}
	if aspect == domain.AspectPortrait {
		names = []string{"9:16", "portrait"}
	}
	if f, ok := v.Field("aspect_ratio"); ok {
		for _, want := range names {
			if in["aspect_ratio"] == nil && slices.Contains(f.Enum, want) {
				in["aspect_ratio"] = want
			}
		}
	}
	if aspect == domain.AspectPortrait && in["aspect_ratio"] == nil {
		return nil, fmt.Errorf("%w: %s makes no portrait (9:16) clips", errNoPortrait, v.Version)
	}
	resolved := v.Resolve(in)
	for _, f := range v.Fields {
		if _, ok := resolved[f.Name]; f.Required && !ok {
			return nil, fmt.Errorf("%s needs %s, which a long-form scene cannot give", v.Version, f.Name)
		}
	}
	return resolved, nil
}

// errNoPortrait is a model that cannot make a portrait scene.
var errNoPortrait = errors.New("no portrait frame")

// upstreamError is a failure of a read or of a create that certainly
// started nothing at the upstream name ("" when err says which): temporary
// ones are retried by the workflow. Its message, which the video's view
// shows, says what happened in words (upstream.Public); err itself, which
// may name addresses, is for the logs.
func upstreamError(ctx context.Context, log *slog.Logger, scene int, name string, err error) error {
	log.WarnContext(ctx, "upstream call failed", "scene", scene, "upstream", name, "error", err)
	var ue *upstream.Error
	var conv *routing.ConvertError
	switch {
	case errors.As(err, &conv):
		return &SceneFailedError{Msg: fmt.Sprintf("scene %d failed: %v", scene, conv)}
	case errors.As(err, &ue) && !ue.Temporary() || errors.Is(err, upstream.ErrMalformed):
		return &SceneFailedError{Msg: fmt.Sprintf("scene %d failed: %s", scene, upstream.Public(name, err))}
	}
	return &TransientError{Msg: fmt.Sprintf("scene %d: %s", scene, upstream.Public(name, err))}
}
