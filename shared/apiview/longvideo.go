package apiview

import (
	"fmt"
	"time"

	"github.com/mediagen-dev/mediagen/shared/catalog"
	"github.com/mediagen-dev/mediagen/shared/domain"
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
	ID            string  `json:"id"`
	Status        string  `json:"status"`
	FinalVideoURL string  `json:"final_video_url"`
	TotalDuration float64 `json:"total_duration"`
	Error         *string `json:"error"`
	// Progress is 0-100: the scenes are most of the work, then assembly.
	Progress int           `json:"progress"`
	Scenes   []SceneStatus `json:"scenes"`
	Model    string        `json:"model"`
	// CreatedAt is RFC 3339 UTC.
	CreatedAt string   `json:"created_at"`
	Webhook   *Webhook `json:"webhook,omitempty"`
}

// SceneStatus is one scene's state in the status view: pending until the
// workflow submits it.
type SceneStatus struct {
	SceneNumber int    `json:"scene_number"`
	Status      string `json:"status"`
}

// ScenePending is the status of a scene not yet submitted.
const ScenePending = "pending"

// LongVideoStatusOf renders a video as its status view.
func LongVideoStatusOf(v domain.LongVideo) LongVideoStatus {
	view := LongVideoStatus{ID: v.ID, Status: string(v.Status), FinalVideoURL: v.FinalVideoURL, TotalDuration: v.TotalDuration,
		Model: v.Model, CreatedAt: v.CreatedAt.UTC().Format(time.RFC3339Nano), Scenes: make([]SceneStatus, 0, len(v.Scenes)),
		Webhook: WebhookOf(v.Webhook, v.WebhookAttempts, catalog.LongVideoEvents)}
	if v.Status != domain.StatusCompleted && v.Error != "" {
		e := v.Error
		view.Error = &e
	}
	done := 0
	for _, sc := range v.Scenes {
		st := ScenePending
		if state, ok := v.SceneStatus[sc.SceneNumber]; ok {
			st = string(state.Status)
			if state.Status == domain.StatusCompleted {
				done++
			}
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
