package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/mediagen-dev/mediagen/internal/api/apiview"
)

// Statuses a generation or long-form video can have. Only processing is not
// final.
const (
	StatusProcessing = "processing"
	StatusCompleted  = "completed"
	StatusFailed     = "failed"
	StatusCanceled   = "canceled"
)

// Final reports whether a status is final: nothing will change any more.
func Final(status string) bool {
	return status == StatusCompleted || status == StatusFailed || status == StatusCanceled
}

// GenerateRequest is the body of POST /api/generations/generate.
type GenerateRequest struct {
	Model        string         `json:"model"`
	ModelVersion string         `json:"model_version"`
	Input        map[string]any `json:"input"`
	// ImageCount is how many images (1–4); 0 leaves it to the service (1).
	ImageCount int `json:"image_count,omitempty"`
	// WebhookURL, when set, is called when the generation ends;
	// WebhookEvents narrows the events (default: all).
	WebhookURL    string   `json:"webhook_url,omitempty"`
	WebhookEvents []string `json:"webhook_events,omitempty"`
	// DeadlineSeconds, when set (1–86400), cancels the generation if it is
	// not done that many seconds after its creation: it ends canceled with
	// error "deadline", and is not charged.
	DeadlineSeconds int `json:"deadline_seconds,omitempty"`
}

// The views below are the service's own (internal/api/apiview): the client reads
// what the routes render, so the two cannot drift apart.

// Generation is the record POST /api/generations/generate answers.
type Generation = apiview.GenerationRecord

// GenerationStatus is the status view of a generation: its outputs once
// completed, its progress (0–100), its place in line while the provider is
// busy, and its webhook's delivery attempts.
type GenerationStatus = apiview.GenerationStatus

// OutputFiles, in both status views, says when the stored files expire
// (OutputExpiresAt, RFC 3339) and whether they are gone (DataRemoved).
type OutputFiles = apiview.OutputFiles

// GenerationEstimate is the answer of POST /api/generations/estimate;
// Credits keeps the service's decimal text ("12.35").
type GenerationEstimate = apiview.GenerationEstimate

// Scene is one scene of a long-form video.
type Scene struct {
	SceneNumber int    `json:"scene_number"`
	Prompt      string `json:"prompt"`
	// Narration is the text spoken over the scene; empty = the prompt.
	Narration string `json:"narration,omitempty"`
	// Model is the video model_version that makes this scene, and prices
	// it; empty = the video's model.
	Model string `json:"model,omitempty"`
}

// LongVideoRequest is the body of POST /api/long-story/videos.
type LongVideoRequest struct {
	Prompt       string  `json:"prompt"`
	Scenes       []Scene `json:"scenes"`
	LanguageCode string  `json:"language_code"`
	// Model is a video model_version; empty = the service's default.
	Model string `json:"model,omitempty"`
	// EnableNarration nil = the service's default (narrated).
	EnableNarration *bool  `json:"enable_narration,omitempty"`
	VideoStyle      string `json:"video_style,omitempty"`
	StudioOptions
	WebhookURL    string   `json:"webhook_url,omitempty"`
	WebhookEvents []string `json:"webhook_events,omitempty"`
}

// StudioOptions are the production options a create and an estimate
// take; each zero value is the service's default.
type StudioOptions struct {
	// AspectRatio is "landscape" or "portrait"; empty = landscape.
	AspectRatio string `json:"aspect_ratio,omitempty"`
	// Captions is "none", "sidecar" or "burned"; empty = the service's default
	// (sidecar when narrated).
	Captions string `json:"captions,omitempty"`
	// Transition is "cut" or "crossfade"; empty = cut.
	Transition string `json:"transition,omitempty"`
	// MusicURL is an uploaded file's URL (mediagen://files/…), an https
	// URL or a data:audio URI; MusicVolume its gain (0–1), nil = the
	// service's default.
	MusicURL    string   `json:"music_url,omitempty"`
	MusicVolume *float64 `json:"music_volume,omitempty"`
	// Voice is a voice id of the language (Voices); empty = the
	// language's default voice.
	Voice string `json:"voice,omitempty"`
	// NarrationSpeed is the narration's tempo (0.5–1.5); nil = 1.
	NarrationSpeed *float64 `json:"narration_speed,omitempty"`
}

// LongVideoCreated is the answer of POST /api/long-story/videos.
type LongVideoCreated = apiview.LongVideoCreated

// LongVideoStatus is the status view of a long-form video, with its progress
// (0–100) and each scene's status.
type LongVideoStatus = apiview.LongVideoStatus

// LongVideoStudio is the options a long video is made with, as its status
// view shows them (LongVideoStatus.Studio), every default written out.
type LongVideoStudio = apiview.LongVideoStudio

// SceneStatus is one scene in a long-form status view.
type SceneStatus = apiview.SceneStatus

// EstimateRequest is the body of POST /api/long-story/videos/estimate:
// the spec's Model and SceneCount, or the create's Scenes with their
// LanguageCode, then each scene is priced by its own model and checked
// as the create will check it. The options are checked as at creation.
type EstimateRequest struct {
	Model string `json:"model"`
	// SceneCount is the number of scenes; 0 = the number of Scenes.
	SceneCount   int     `json:"scene_count,omitempty"`
	Scenes       []Scene `json:"scenes,omitempty"`
	LanguageCode string  `json:"language_code,omitempty"`
	// EnableNarration nil = the service's default (narrated).
	EnableNarration *bool `json:"enable_narration,omitempty"`
	StudioOptions
}

// LongVideoEstimate is the cost estimate of a long-form video. Amounts keep
// the service's decimal text.
type LongVideoEstimate = apiview.LongVideoEstimate

// Generate starts an image or video generation.
func (c *Client) Generate(ctx context.Context, req GenerateRequest) (Generation, error) {
	return do[Generation](ctx, c, http.MethodPost, "/api/generations/generate", req)
}

// MaxWait is the longest wait GenerateAndWait asks for (Prefer: wait=60);
// the service answers within 25 s whatever is asked.
const MaxWait = 60 * time.Second

// GenerateAndWait is Generate with Prefer: wait=N, N being wait in whole
// seconds (1 to MaxWait): the service answers once the generation is final
// or the wait is over, so a quick image comes back completed, with its
// outputs, in one request; one still running comes back processing.
func (c *Client) GenerateAndWait(ctx context.Context, req GenerateRequest, wait time.Duration) (Generation, error) {
	secs := min(max(int((wait+time.Second-1)/time.Second), 1), int(MaxWait/time.Second))
	var out Generation
	err := c.doWith(ctx, http.MethodPost, "/api/generations/generate", req, &out, http.Header{"Prefer": {"wait=" + strconv.Itoa(secs)}})
	return out, err
}

// Generation reads a generation's status by its UUID or integer id.
func (c *Client) Generation(ctx context.Context, id string) (GenerationStatus, error) {
	return do[GenerationStatus](ctx, c, http.MethodGet, "/api/generations/status/"+pathEscape(id), nil)
}

// EstimateGeneration prices a generate request without starting it.
func (c *Client) EstimateGeneration(ctx context.Context, req GenerateRequest) (GenerationEstimate, error) {
	return do[GenerationEstimate](ctx, c, http.MethodPost, "/api/generations/estimate", req)
}

// CancelGeneration stops a generation and returns its credits; a finished
// one is an *APIError with status 409.
func (c *Client) CancelGeneration(ctx context.Context, id string) (GenerationStatus, error) {
	return do[GenerationStatus](ctx, c, http.MethodPost, "/api/generations/"+pathEscape(id)+"/cancel", nil)
}

// DeleteGenerationOutput deletes the files stored for a generation and
// answers its status view, DataRemoved and without URLs; a repeat answers
// the same. One still processing is an *APIError with status 409.
func (c *Client) DeleteGenerationOutput(ctx context.Context, id string) (GenerationStatus, error) {
	return do[GenerationStatus](ctx, c, http.MethodDelete, "/api/generations/"+pathEscape(id)+"/output", nil)
}

// EstimateLongVideo prices a long-form video: SceneCount scenes of its
// model, or its Scenes, each by its own model.
func (c *Client) EstimateLongVideo(ctx context.Context, req EstimateRequest) (LongVideoEstimate, error) {
	return do[LongVideoEstimate](ctx, c, http.MethodPost, "/api/long-story/videos/estimate", req)
}

// CreateLongVideo starts a long-form video.
func (c *Client) CreateLongVideo(ctx context.Context, req LongVideoRequest) (LongVideoCreated, error) {
	return do[LongVideoCreated](ctx, c, http.MethodPost, "/api/long-story/videos", req)
}

// LongVideo reads a long-form video's status.
func (c *Client) LongVideo(ctx context.Context, id string) (LongVideoStatus, error) {
	return do[LongVideoStatus](ctx, c, http.MethodGet, "/api/long-story/videos/"+pathEscape(id), nil)
}

// CancelLongVideo stops a long-form video and returns its credits.
func (c *Client) CancelLongVideo(ctx context.Context, id string) (LongVideoStatus, error) {
	return do[LongVideoStatus](ctx, c, http.MethodPost, "/api/long-story/videos/"+pathEscape(id)+"/cancel", nil)
}

// RegenerateRequest is the body of POST
// /api/long-story/videos/{videoId}/scenes/{n}/regenerate; a field left
// empty keeps the scene's.
type RegenerateRequest struct {
	Prompt    string `json:"prompt,omitempty"`
	Narration string `json:"narration,omitempty"`
}

// RegenerateScene re-renders scene n of a completed long-form video,
// charging that scene alone; the answer is the video still at its
// revision, with Regenerating set (WaitRegenerate waits for its end).
func (c *Client) RegenerateScene(ctx context.Context, id string, n int, req RegenerateRequest) (LongVideoStatus, error) {
	return do[LongVideoStatus](ctx, c, http.MethodPost,
		"/api/long-story/videos/"+pathEscape(id)+"/scenes/"+strconv.Itoa(n)+"/regenerate", req)
}

// DeleteLongVideoOutput deletes the files stored for a long-form video
// (its final video, the scenes' clips and the narration) and answers its
// status view; like DeleteGenerationOutput, a repeat answers the same and
// one still processing is a 409.
func (c *Client) DeleteLongVideoOutput(ctx context.Context, id string) (LongVideoStatus, error) {
	return do[LongVideoStatus](ctx, c, http.MethodDelete, "/api/long-story/videos/"+pathEscape(id)+"/output", nil)
}

// Voice is a narration voice of GET /api/long-story/voices.
type Voice struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	Gender       string `json:"gender"`
	LanguageCode string `json:"language_code"`
	Default      bool   `json:"default"`
	PreviewURL   string `json:"preview_url"`
}

// Voices lists the narration voices of a language, its default first,
// each with a short preview clip.
func (c *Client) Voices(ctx context.Context, languageCode string) ([]Voice, error) {
	var list struct {
		Voices []Voice `json:"voices"`
	}
	err := c.Do(ctx, http.MethodGet, "/api/long-story/voices?"+url.Values{"language_code": {languageCode}}.Encode(), nil, &list)
	return list.Voices, err
}

// Models lists every variant of the public catalog; it needs no API key.
func (c *Client) Models(ctx context.Context) ([]Model, error) {
	var list struct {
		Models []Model `json:"models"`
	}
	err := c.Do(ctx, http.MethodGet, "/api/models", nil, &list)
	return list.Models, err
}
