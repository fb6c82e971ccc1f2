package simulator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"time"
)

// Prediction is a prediction as the protocol shows it.
type Prediction struct {
	ID      string          `json:"id"`
	Model   string          `json:"model"`
	Version string          `json:"version"`
	Input   json.RawMessage `json:"input"`
	Status  string          `json:"status"`
	// Output is null until the first output is rendered (shown while
	// processing, growing image by image), then the video's URL
	// (a string, as video models answer) or a list of the images' URLs.
	Output      any            `json:"output"`
	Error       *string        `json:"error"`
	Logs        string         `json:"logs"`
	CreatedAt   string         `json:"created_at"`
	StartedAt   *string        `json:"started_at"`
	CompletedAt *string        `json:"completed_at"`
	URLs        PredictionURLs `json:"urls"`
	Source      string         `json:"source"`
	// Webhook and its events filter, as the create gave them.
	Webhook             string   `json:"webhook,omitempty"`
	WebhookEventsFilter []string `json:"webhook_events_filter,omitempty"`
}

// PredictionURLs are the API URLs of a prediction.
type PredictionURLs struct {
	Get    string `json:"get"`
	Cancel string `json:"cancel"`
}

// prediction is the simulator's record of one prediction. Fields of view
// are replaced, never mutated in place, so a copy of view is a safe snapshot.
type prediction struct {
	view    Prediction
	baseURL string
	// webhook is where the events are posted; empty for none. events is
	// the filter (empty: every event).
	webhook string
	events  []string
	// fal is a request of the fal face (app is its owner/alias).
	fal bool
	app string
	// done closes when the prediction is final (Prefer: wait).
	done       chan struct{}
	doneClosed bool
	// files maps output file names to their paths, once succeeded.
	files  map[string]string
	cancel context.CancelFunc
	// job is what the prediction renders, kept for a restart.
	job job
}

func final(status string) bool {
	return status == statusSucceeded || status == statusFailed || status == StatusCanceled
}

// timestamp formats like the provider: UTC, microseconds.
func timestamp(t time.Time) string {
	return t.UTC().Format(timestampLayout)
}

// timestampLayout is how the provider writes times.
const timestampLayout = "2006-01-02T15:04:05.000000Z07:00"

// versionOf is the one version id of a model: stable, shaped like the
// provider's 64-hex ids.
func versionOf(model string) string {
	sum := sha256.Sum256([]byte("mediagen-simulator:" + model))
	return hex.EncodeToString(sum[:])
}

// Webhook events of the Replicate protocol.
const (
	eventStart     = "start"
	eventOutput    = "output"
	eventLogs      = "logs"
	eventCompleted = "completed"
)

// wants reports whether the prediction's filter lets an event through; an
// empty filter is the provider's default: every event.
func (p *prediction) wants(event string) bool {
	return p.webhook != "" && (len(p.events) == 0 || slices.Contains(p.events, event))
}

func ptr[T any](v T) *T { return &v }

// Lookup returns a snapshot of a prediction, as GET /v1/predictions/{id}
// would, for in-process callers (the bench reads when a job completed).
func (s *Simulator) Lookup(id string) (Prediction, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.predictions[id]
	if !ok {
		return Prediction{}, false
	}
	return p.view, true
}

// Active counts the predictions of an "owner/name" model that are not
// final: the jobs the provider is running (or starting) for it.
func (s *Simulator) Active(model string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, p := range s.predictions {
		if p.view.Model == model && p.view.Status != "succeeded" && p.view.Status != "failed" && p.view.Status != "canceled" {
			n++
		}
	}
	return n
}
