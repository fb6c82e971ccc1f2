// Package apiview holds the API's JSON views: the generation record, the
// generation and long-form status views, the long-form creation answer and
// the webhook payloads. The routes, the webhook deliverer and the client's
// tests render and read the same types; the use cases return domain values.
package apiview

import (
	"encoding/json"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// Timestamp layouts the spec shows.
const (
	recordTimeLayout = "2006-01-02T15:04:05.000Z"
	statusTimeLayout = "2006-01-02T15:04:05.000000"
)

// GenerationRecord is the spec's generation record, plus uuid.
type GenerationRecord struct {
	ID         int64  `json:"id"`
	UUID       string `json:"uuid"`
	UserID     string `json:"user_id"`
	UpstreamID string `json:"upstream_id"`
	// Upstream names the routing file's upstream that runs the job (absent
	// until one took it).
	Upstream        string          `json:"upstream,omitempty"`
	Model           string          `json:"model"`
	ModelVersion    string          `json:"model_version"`
	InputParameters json.RawMessage `json:"input_parameters"`
	OutputData      OutputData      `json:"output_data"`
	Status          string          `json:"status"`
	CreditsUsed     string          `json:"credits_used"`
	CreatedAt       string          `json:"created_at"`
	UpdatedAt       string          `json:"updated_at"`
}

// OutputData holds the output URLs.
type OutputData struct {
	URLs []string `json:"urls"`
}

// GenerationEstimate is the answer of POST /api/generations/estimate.
type GenerationEstimate struct {
	Model        string `json:"model"`
	ModelVersion string `json:"model_version"`
	Kind         string `json:"kind"`
	ImageCount   int    `json:"image_count"`
	// Credits is decimal text with two places ("12.35").
	Credits string `json:"credits"`
}

// GenerationStatus is the spec's generation status view, with progress and the
// webhook's delivery attempts.
type GenerationStatus struct {
	ID        string   `json:"id"`
	Status    string   `json:"status"`
	Output    []string `json:"output"`
	Error     string   `json:"error,omitempty"`
	CreatedAt string   `json:"created_at"`
	Model     string   `json:"model"`
	// Upstream names the routing file's upstream that ran the job (absent
	// until one took it).
	Upstream string `json:"upstream,omitempty"`
	// Progress is 0-100; while the provider works it is the provider's own
	// figure (its logs' percentages) or, when that is behind or absent, an
	// estimate from the time a job of its kind usually takes; it never goes
	// back.
	Progress int `json:"progress"`
	// QueuePosition is the generation's place in line (from 1) while the
	// provider is at its cap of jobs at once; absent otherwise.
	QueuePosition int `json:"queue_position,omitempty"`
	OutputFiles
	Webhook *Webhook `json:"webhook,omitempty"`
}

// OutputFiles says what became of a record's stored files.
type OutputFiles struct {
	// DataRemoved: the files were deleted, on request or at the end of
	// their retention; the view then lists no URL.
	DataRemoved bool `json:"data_removed"`
	// OutputExpiresAt is when the files' retention ends (RFC 3339 UTC):
	// present once the record completed with outputs.
	OutputExpiresAt string `json:"output_expires_at,omitempty"`
}

// outputFilesAt renders a record's files at now.
func outputFilesAt(f domain.StoredFiles, now time.Time) OutputFiles {
	out := OutputFiles{DataRemoved: f.Removed(now)}
	if !f.ExpiresAt.IsZero() {
		out.OutputExpiresAt = f.ExpiresAt.UTC().Format(time.RFC3339)
	}
	return out
}

// progressAt is a generation's progress at now: 100 when final; 0 before
// the provider has the job; then the provider's own figure
// (domain.Generation.Progress, from its logs) or, when it is behind or
// absent, an estimate that grows to 95 by the time a job of its kind
// usually takes (catalog.TypicalDuration). Both only grow, so the larger
// never goes back; it stays under 100 until the generation is done.
func progressAt(g domain.Generation, now time.Time) int {
	if g.Status.Terminal() {
		return 100
	}
	if g.UpstreamID == "" {
		return 0
	}
	f := now.Sub(g.CreatedAt).Seconds() / g.Kind.TypicalDuration().Seconds()
	estimate := int(5 + 90*min(max(f, 0), 1))
	return max(estimate, min(g.Progress, 99))
}

// RecordOf renders a generation as the creation record.
func RecordOf(g domain.Generation) GenerationRecord {
	urls := g.OutputURLs
	if urls == nil {
		urls = []string{}
	}
	input := g.Input
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	return GenerationRecord{
		ID: g.ID, UUID: g.UUID, UserID: g.UserID, UpstreamID: g.UpstreamID, Upstream: g.Upstream, Model: g.Model,
		ModelVersion: g.ModelVersion, InputParameters: input, OutputData: OutputData{URLs: urls},
		Status: string(g.Status), CreditsUsed: domain.FormatCredits(g.CreditsUsed),
		CreatedAt: g.CreatedAt.UTC().Format(recordTimeLayout), UpdatedAt: g.UpdatedAt.UTC().Format(recordTimeLayout),
	}
}

// GenerationStatusAt renders a generation as the status view at now: its
// output URLs only while its files are served (not deleted, not being
// deleted, not past their retention).
func GenerationStatusAt(g domain.Generation, now time.Time) GenerationStatus {
	v := GenerationStatus{ID: g.UUID, Status: string(g.Status), Output: []string{},
		CreatedAt: g.CreatedAt.UTC().Truncate(time.Microsecond).Format(statusTimeLayout),
		Model:     g.Model + "/" + g.ModelVersion, Upstream: g.Upstream, Progress: progressAt(g, now),
		OutputFiles: outputFilesAt(g.Files, now),
		Webhook:     webhookOf(g.Webhook, g.WebhookAttempts, domain.GenerationEvents)}
	if g.Status == domain.StatusCompleted && g.Files.Served(now) && g.OutputURLs != nil {
		v.Output = g.OutputURLs
	}
	if g.Status == domain.StatusFailed || g.Status == domain.StatusCanceled {
		v.Error = g.Error
	}
	return v
}
