package apiview

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// LongVideoCreated is the spec's long-form creation answer.
type LongVideoCreated struct {
	ID      string `json:"id"`
	VideoID string `json:"video_id"`
	Status  string `json:"status"`
	Message string `json:"message"`
}

// LongVideoCreatedOf is the answer to a video's creation.
func LongVideoCreatedOf(v domain.LongVideo, sceneSeconds int) LongVideoCreated {
	return LongVideoCreated{ID: v.ID, VideoID: v.ID, Status: string(v.Status),
		Message: fmt.Sprintf("Long-form video generation started: %d scenes, about %d seconds; %s credits are held until it finishes.",
			len(v.Scenes), len(v.Scenes)*sceneSeconds, domain.FormatCredits(v.CreditsHeld))}
}

// LongVideoStatus is the spec's long-form status view, with progress, each
// scene's state and the webhook's delivery attempts.
type LongVideoStatus struct {
	ID            string `json:"id"`
	Status        string `json:"status"`
	FinalVideoURL string `json:"final_video_url"`
	// CaptionsURL is the WebVTT file beside the final video, when the
	// video has captions (and while the final video is served).
	CaptionsURL   string  `json:"captions_url,omitempty"`
	TotalDuration float64 `json:"total_duration"`
	Error         *string `json:"error"`
	// Progress is 0-100: the scenes are most of the work (each running
	// one counted by its provider's own progress), then assembly.
	Progress int           `json:"progress"`
	Scenes   []SceneStatus `json:"scenes"`
	Model    string        `json:"model"`
	// Studio is how the video is made: the options it was created with,
	// every default written out.
	Studio LongVideoStudio `json:"studio"`
	// CreatedAt is RFC 3339 UTC.
	CreatedAt string `json:"created_at"`
	// Revision is the video's render: 1, then the revision of each
	// regenerate of a scene that completed (a canceled or failed one
	// leaves a gap: domain.LongVideo.NextRevision).
	Revision int `json:"revision"`
	// Regenerating is the regenerate of a scene running, if one is: the
	// video stays completed at Revision, with its final video, meanwhile.
	Regenerating *Regenerating `json:"regenerating,omitempty"`
	OutputFiles
	Webhook *Webhook `json:"webhook,omitempty"`
}

// LongVideoStudio is the options a long video is made with, defaults
// included. Voice and NarrationSpeed are null without narration,
// MusicURL and MusicVolume without music.
type LongVideoStudio struct {
	Captions       string   `json:"captions"`
	Voice          *string  `json:"voice"`
	AspectRatio    string   `json:"aspect_ratio"`
	Transition     string   `json:"transition"`
	MusicURL       *string  `json:"music_url"`
	MusicVolume    *float64 `json:"music_volume"`
	NarrationSpeed *float64 `json:"narration_speed"`
	Language       string   `json:"language"`
}

// longVideoStudioOf renders the studio applied (its defaults written out)
// to a video narrated in language. A data: URI of music is shown by its
// media type and size, never its bytes: "data:audio/wav (48000 bytes)".
func longVideoStudioOf(applied domain.Studio, language string) LongVideoStudio {
	out := LongVideoStudio{Captions: applied.Captions, AspectRatio: applied.AspectRatio, Transition: applied.Transition,
		MusicVolume: applied.MusicVolume, NarrationSpeed: applied.NarrationSpeed, Language: language}
	if applied.Voice != "" {
		out.Voice = &applied.Voice
	}
	if applied.MusicURL != "" {
		music := musicShown(applied.MusicURL)
		out.MusicURL = &music
	}
	return out
}

// musicShown is a music_url as the view shows it: a URL as given, a data:
// URI as "data:<media type> (<n> bytes)", n the decoded size.
func musicShown(uri string) string {
	if len(uri) < 5 || !strings.EqualFold(uri[:5], "data:") {
		return uri
	}
	head, payload, _ := strings.Cut(uri, ",")
	mediaType, _, _ := strings.Cut(head[5:], ";")
	payload = strings.TrimRight(payload, "=")
	return fmt.Sprintf("data:%s (%d bytes)", strings.ToLower(mediaType), base64.RawStdEncoding.DecodedLen(len(payload)))
}

// Regenerating is a regenerate of one scene while it runs.
type Regenerating struct {
	SceneNumber int    `json:"scene_number"`
	Revision    int    `json:"revision"`
	Status      string `json:"status"`
}

// SceneStatus is one scene's state in the status view: pending until the
// workflow submits it, canceled when its video ended (failed or canceled)
// before it finished, since its job was then stopped. Progress is 100 once
// the scene completed, else its provider's own figure (0 when it gave
// none), so that the video's event stream shows each scene moving.
type SceneStatus struct {
	SceneNumber int    `json:"scene_number"`
	Status      string `json:"status"`
	Progress    int    `json:"progress"`
}

// scenePending is the status of a scene not yet submitted.
const scenePending = "pending"

// LongVideoStatusAt renders a video as its status view at now: its final
// video's URL only while its files are served; applied is the studio it
// is made with, its defaults written out (longform.Applied).
func LongVideoStatusAt(v domain.LongVideo, applied domain.Studio, now time.Time) LongVideoStatus {
	view := LongVideoStatus{ID: v.ID, Status: string(v.Status), TotalDuration: v.TotalDuration,
		Model: v.Model, Studio: longVideoStudioOf(applied, v.LanguageCode), CreatedAt: v.CreatedAt.UTC().Format(time.RFC3339Nano), Scenes: make([]SceneStatus, 0, len(v.Scenes)),
		OutputFiles: outputFilesAt(v.Files, now),
		Webhook:     webhookOf(v.Webhook, v.WebhookAttempts, domain.LongVideoEvents), Revision: max(v.Revision, 1)}
	if r := v.Regenerating; r != nil {
		view.Regenerating = &Regenerating{SceneNumber: r.SceneNumber, Revision: r.Revision, Status: string(domain.StatusProcessing)}
	}
	if v.Status == domain.StatusCompleted && v.Files.Served(now) {
		view.FinalVideoURL = v.FinalVideoURL
		if v.Studio.CaptionsFile() {
			view.CaptionsURL = captionsURL(v.FinalVideoURL)
		}
	}
	if v.Status != domain.StatusCompleted && v.Error != "" {
		e := v.Error
		view.Error = &e
	}
	// A video that ended without completing stopped every scene still
	// waiting or running: those read canceled, not pending or processing
	// forever. The record keeps their last state; the view tells what
	// became of them.
	stopped := v.Status.Terminal() && v.Status != domain.StatusCompleted
	done := 0 // the scenes' work done, in hundredths of a scene
	for _, sc := range v.Scenes {
		st, progress := scenePending, 0
		state, ok := v.SceneStatus[sc.SceneNumber]
		if ok {
			st = string(state.Status)
			if state.Status == domain.StatusCompleted {
				progress = 100
			} else {
				progress = min(max(state.Progress, 0), 99) // the provider's own figure
			}
			done += progress
		}
		if stopped && state.Status != domain.StatusCompleted && state.Status != domain.StatusFailed {
			st = string(domain.StatusCanceled)
		}
		view.Scenes = append(view.Scenes, SceneStatus{SceneNumber: sc.SceneNumber, Status: st, Progress: progress})
	}
	switch {
	case v.Status.Terminal():
		view.Progress = 100
	case len(v.Scenes) > 0:
		// Scenes are 90 % (each finished one, and the running ones by
		// their provider's figure): assembly and narration the rest.
		view.Progress = 90 * done / (100 * len(v.Scenes))
	}
	return view
}

// LongVideoEstimate is the spec's long-form cost estimate.
type LongVideoEstimate struct {
	Success        bool            `json:"success"`
	Model          string          `json:"model"`
	Duration       int             `json:"duration"`
	SceneCountMode bool            `json:"scene_count_mode"`
	SceneInfo      SceneInfo       `json:"scene_info"`
	Credits        EstimateCredits `json:"credits"`
	Pricing        EstimatePricing `json:"pricing"`
}

// SceneInfo describes the scenes of an estimate.
type SceneInfo struct {
	TotalScenes       int    `json:"total_scenes"`
	DurationPerScene  int    `json:"duration_per_scene"`
	SceneDurationNote string `json:"scene_duration_note"`
}

// EstimateCredits are numbers in the spec; they carry two decimal places.
type EstimateCredits struct {
	Required  json.Number `json:"required"`
	PerSecond json.Number `json:"per_second"`
	Total     json.Number `json:"total"`
}

// EstimatePricing shows the base USD cost behind the credits.
type EstimatePricing struct {
	BaseCostUSDPerSecond json.Number `json:"base_cost_usd_per_second"`
	TotalBaseCostUSD     json.Number `json:"total_base_cost_usd"`
	ProfitMargin         string      `json:"profit_margin"`
}

// captionsURL is the URL of the captions beside the final video at
// finalVideoURL (both are stored under the same base: Files.URL).
func captionsURL(finalVideoURL string) string {
	base, ok := strings.CutSuffix(finalVideoURL, "/final.mp4")
	if !ok {
		return ""
	}
	return base + "/captions.vtt"
}
