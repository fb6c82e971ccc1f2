package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/mediagen-dev/mediagen/shared/domain"
	"github.com/mediagen-dev/mediagen/shared/generation"
)

// Timestamp layouts the spec shows.
const (
	recordTimeLayout = "2006-01-02T15:04:05.000Z"
	statusTimeLayout = "2006-01-02T15:04:05.000000"
)

// GenerationRecord is the spec's generation record, plus uuid.
type GenerationRecord struct {
	ID              int64           `json:"id"`
	UUID            string          `json:"uuid"`
	UserID          string          `json:"user_id"`
	UpstreamID      string          `json:"upstream_id"`
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

// StatusView is the spec's generation status view.
type StatusView struct {
	ID        string   `json:"id"`
	Status    string   `json:"status"`
	Output    []string `json:"output"`
	Error     string   `json:"error,omitempty"`
	CreatedAt string   `json:"created_at"`
	Model     string   `json:"model"`
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
		ID: g.ID, UUID: g.UUID, UserID: g.UserID, UpstreamID: g.UpstreamID, Model: g.Model,
		ModelVersion: g.ModelVersion, InputParameters: input, OutputData: OutputData{URLs: urls},
		Status: string(g.Status), CreditsUsed: domain.FormatCredits(g.CreditsUsed),
		CreatedAt: g.CreatedAt.UTC().Format(recordTimeLayout), UpdatedAt: g.UpdatedAt.UTC().Format(recordTimeLayout),
	}
}

// StatusOf renders a generation as the status view.
func StatusOf(g domain.Generation) StatusView {
	v := StatusView{ID: g.UUID, Status: string(g.Status), Output: []string{},
		CreatedAt: g.CreatedAt.UTC().Truncate(time.Microsecond).Format(statusTimeLayout),
		Model:     g.Model + "/" + g.ModelVersion}
	if g.Status == domain.StatusCompleted {
		v.Output = g.OutputURLs
	}
	if g.Status == domain.StatusFailed {
		v.Error = g.Error
	}
	return v
}

// Generations are the single-generation routes.
type Generations struct {
	Service *generation.Service
	Gate    *Gate
}

// Generate is POST /api/generations/generate.
func (r *Generations) Generate() Handler {
	return r.Gate.AuthedUser(false, func(ctx context.Context, req Request, userID string) (Response, error) {
		body, err := jsonBody(req)
		if err != nil {
			return Response{}, err
		}
		g, err := r.Service.Create(ctx, userID, body)
		if err != nil {
			return Response{}, err
		}
		return jsonResponse(http.StatusOK, RecordOf(g)), nil
	})
}

// Status is GET /api/generations/status/{id}; identity-provider tokens are
// accepted here as the spec says.
func (r *Generations) Status() Handler {
	return r.Gate.AuthedUser(true, func(ctx context.Context, req Request, userID string) (Response, error) {
		g, err := r.Service.Lookup(ctx, userID, req.PathParameters["id"])
		if err != nil {
			return Response{}, err
		}
		return jsonResponse(http.StatusOK, StatusOf(g)), nil
	})
}
