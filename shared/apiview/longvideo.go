package apiview

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/mediagen-dev/mediagen/shared/catalog"
	"github.com/mediagen-dev/mediagen/shared/domain"
	"github.com/mediagen-dev/mediagen/shared/media"
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
	// Progress is 0-100: the scenes are most of the work, then assembly.
	Progress int           `json:"progress"`
	Scenes   []SceneStatus `json:"scenes"`
	Model    string        `json:"model"`
	// CreatedAt is RFC 3339 UTC.
	CreatedAt string `json:"created_at"`
	// Revision counts the video's renders: 1, then one more for each
	// regenerate of a scene that completed.
	Revision int `json:"revision"`
	// Regenerating is the regenerate of a scene running, if one is: the
	// video stays completed at Revision, with its final video, meanwhile.
	Regenerating *Regenerating `json:"regenerating,omitempty"`
	OutputFiles
	Webhook *Webhook `json:"webhook,omitempty"`
}

// Regenerating is a regenerate of one scene while it runs.
type Regenerating struct {
	SceneNumber int    `json:"scene_number"`
	Revision    int    `json:"revision"`
	Status      string `json:"status"`
}

// SceneStatus is one scene's state in the status view: pending until the
// workflow submits it, canceled when its video ended (failed or canceled)
// before it finished, since its job was then stopped.
type SceneStatus struct {
	SceneNumber int    `json:"scene_number"`
	Status      string `json:"status"`
}

// ScenePending is the status of a scene not yet submitted.
const ScenePending = "pending"

// LongVideoStatusAt renders a video as its status view at now: its final
// video's URL only while its files are served.
func LongVideoStatusAt(v domain.LongVideo, now time.Time) LongVideoStatus {
	view := LongVideoStatus{ID: v.ID, Status: string(v.Status), TotalDuration: v.TotalDuration,
		Model: v.Model, CreatedAt: v.CreatedAt.UTC().Format(time.RFC3339Nano), Scenes: make([]SceneStatus, 0, len(v.Scenes)),
		OutputFiles: outputFilesAt(v.Files, now),
		Webhook:     WebhookOf(v.Webhook, v.WebhookAttempts, catalog.LongVideoEvents), Revision: max(v.Revision, 1)}
	if r := v.Regenerating; r != nil {
		view.Regenerating = &Regenerating{SceneNumber: r.SceneNumber, Revision: r.Revision, Status: string(domain.StatusProcessing)}
	}
	if v.Status == domain.StatusCompleted && v.Files.Served(now) {
		view.FinalVideoURL = v.FinalVideoURL
		if v.Studio.CaptionsFile() {
			view.CaptionsURL = media.CaptionsURL(v.FinalVideoURL)
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
	done := 0
	for _, sc := range v.Scenes {
		st := ScenePending
		state, ok := v.SceneStatus[sc.SceneNumber]
		if ok {
			st = string(state.Status)
			if state.Status == domain.StatusCompleted {
				done++
			}
		}
		if stopped && state.Status != domain.StatusCompleted && state.Status != domain.StatusFailed {
			st = string(domain.StatusCanceled)
		}
		view.Scenes = append(view.Scenes, SceneStatus{SceneNumber: sc.SceneNumber, Status: st})
	}
	switch {
	case v.Status.Terminal():
		view.Progress = 100
	case len(v.Scenes) > 0:
		// Scenes are 90 %: assembly and narration the rest.
		view.Progress = 90 * done / len(v.Scenes)
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
