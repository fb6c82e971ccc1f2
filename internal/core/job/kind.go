package job

import (
	"encoding/json"
	"fmt"
)

// The kinds of the poll queue's messages: each names the kind of record
// whose job it polls, in its "kind" field.
const (
	KindGeneration = "generation"
	// KindScene is a scene of a long-form video: a child job of its video.
	KindScene = "scene"
)

// KindOf reads the kind of a poll message.
func KindOf(body []byte) (string, error) {
	var probe struct {
		Kind    string  `json:"kind"`
		VideoID *string `json:"video_id"`
	}
	if err := json.Unmarshal(body, &probe); err != nil {
		return "", fmt.Errorf("poll message: %w", err)
	}
	switch {
	case probe.Kind != "":
		return probe.Kind, nil
	case probe.VideoID != nil:
		// Compatibility with the messages enqueued before messages named
		// their kind: a scene's poll had a video_id and no kind. Such
		// messages may be in flight while a deploy replaces the poller;
		// this branch can go once the queue holds none (the longest a poll
		// chain runs, a video's deadline, after the deploy).
		return KindScene, nil
	}
	// A generation's poll named no kind before, either.
	return KindGeneration, nil
}
