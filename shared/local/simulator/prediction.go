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
	// Output is null until the prediction succeeds, then a list of URLs
	// (one element for a video).
	Output      []string       `json:"output"`
	Error       *string        `json:"error"`
	Logs        string         `json:"logs"`
	CreatedAt   string         `json:"created_at"`
	StartedAt   *string        `json:"started_at"`
	CompletedAt *string        `json:"completed_at"`
	URLs        PredictionURLs `json:"urls"`
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
	// webhook is where the final prediction is posted; empty for none.
	webhook string
	// files maps output file names to their paths, once succeeded.
	files  map[string]string
	cancel context.CancelFunc
	// job is what the prediction renders, kept for a restart.
	job job
}

func final(status string) bool {
	return status == StatusSucceeded || status == StatusFailed || status == StatusCanceled
}

// timestamp formats like the provider: UTC, microseconds.
func timestamp(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000000Z07:00")
}

// versionOf is the one version id of a model: stable, shaped like the
// provider's 64-hex ids.
func versionOf(model string) string {
	sum := sha256.Sum256([]byte("mediagen-simulator:" + model))
	return hex.EncodeToString(sum[:])
}

// webhookWanted returns the webhook URL when the filter lets the completed
// event through: the simulator sends only that one. An empty filter is the
// provider's default, which includes it.
func webhookWanted(webhook string, filter []string) string {
	if webhook == "" || (len(filter) > 0 && !slices.Contains(filter, "completed")) {
		return ""
	}
	return webhook
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
