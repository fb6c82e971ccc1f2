package testsupport

import (
	"encoding/json"
	"fmt"

	"github.com/mediagen-dev/mediagen/internal/adapters/ffmpeg"
)

// StreamCounts are how many video and audio streams ffprobe found in a
// file.
func StreamCounts(info ffmpeg.Info) (videos, audios int) {
	for _, s := range info.Streams {
		switch s.Type {
		case "video":
			videos++
		case "audio":
			audios++
		}
	}
	return videos, audios
}

// GenerationWebhook is the body of a generation's webhook as its receiver
// reads it: the event's type and the generation's status view.
type generationWebhook struct {
	Type string `json:"type"`
	Data struct {
		ID     string   `json:"id"`
		Status string   `json:"status"`
		Output []string `json:"output"`
	} `json:"data"`
}

// DecodeGenerationWebhook reads a generation webhook's body.
func DecodeGenerationWebhook(body []byte) (generationWebhook, error) {
	var w generationWebhook
	if err := json.Unmarshal(body, &w); err != nil {
		return w, fmt.Errorf("a generation webhook's body: %w", err)
	}
	return w, nil
}
