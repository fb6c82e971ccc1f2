package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/routing"
	"github.com/mediagen-dev/mediagen/internal/core/webhook"
)

// Replicate is a client of the Replicate predictions API (as the official
// clients speak it): create by model or by version, read, cancel, list,
// the models' published input schemas and the webhook signing secret.
type Replicate struct {
	// BaseURL is the API root: https://api.replicate.com or .../v1.
	BaseURL string
	Token   string
	// WebhookSecret, when set, verifies callbacks instead of the secret
	// fetched from GET /v1/webhooks/default/secret.
	WebhookSecret string
	Tuning

	mu      sync.Mutex
	schemas map[string]map[string]string
	secret  string
}

// root is the API root ending in /v1, whichever form BaseURL has.
func (c *Replicate) root() string {
	b := strings.TrimRight(c.BaseURL, "/")
	if !strings.HasSuffix(b, "/v1") {
		b += "/v1"
	}
	return b
}

func (c *Replicate) call(ctx context.Context, op, method, path string, body any, create bool) (answer, error) {
	h := http.Header{}
	h.Set("Authorization", "Bearer "+c.Token)
	return c.do(ctx, request{op: op, method: method, url: c.root() + path, header: h, body: body, create: create})
}

// Submit creates a prediction: POST /v1/models/{owner}/{name}/predictions
// for "owner/name", POST /v1/predictions with the bare version id for
// "owner/name:version".
func (c *Replicate) Submit(ctx context.Context, model string, input map[string]any, hook string) (domain.UpstreamJob, error) {
	owner, name, version, err := splitModel(model)
	if err != nil {
		return domain.UpstreamJob{}, err
	}
	body := map[string]any{"input": input}
	if hook != "" {
		body["webhook"] = hook
		body["webhook_events_filter"] = []string{"completed"}
	}
	path := "/models/" + url.PathEscape(owner) + "/" + url.PathEscape(name) + "/predictions"
	if version != "" {
		body["version"] = version
		path = "/predictions"
	}
	a, err := c.call(ctx, "create", http.MethodPost, path, body, true)
	if err != nil {
		return domain.UpstreamJob{}, err
	}
	p, err := decodePrediction(a.body)
	if err != nil {
		// The provider answered 2xx: a job was most likely made.
		return domain.UpstreamJob{}, &UnknownOutcomeError{Cause: fmt.Errorf("upstream create: %w", err)}
	}
	return domain.UpstreamJob{ID: p.ID}, nil
}

// Get reads a prediction.
func (c *Replicate) Get(ctx context.Context, job domain.UpstreamJob) (Result, error) {
	a, err := c.call(ctx, "get", http.MethodGet, "/predictions/"+url.PathEscape(job.ID), nil, false)
	if err != nil {
		return Result{}, err
	}
	return decodePrediction(a.body)
}

// Cancel asks the provider to stop a prediction.
func (c *Replicate) Cancel(ctx context.Context, job domain.UpstreamJob) error {
	_, err := c.call(ctx, "cancel", http.MethodPost, "/predictions/"+url.PathEscape(job.ID)+"/cancel", nil, false)
	return err
}

// InputTypes reads the model's published input schema once: the latest
// version's (GET /v1/models/{owner}/{name}) or a pinned version's.
func (c *Replicate) InputTypes(ctx context.Context, model string) (map[string]string, error) {
	c.mu.Lock()
	types, ok := c.schemas[model]
	c.mu.Unlock()
	if ok {
		return types, nil
	}
	owner, name, version, err := splitModel(model)
	if err != nil {
		return nil, err
	}
	path := "/models/" + url.PathEscape(owner) + "/" + url.PathEscape(name)
	if version != "" {
		path += "/versions/" + url.PathEscape(version)
	}
	a, err := c.call(ctx, "schema", http.MethodGet, path, nil, false)
	if err != nil {
		return nil, err
	}
	var doc struct {
		OpenAPISchema json.RawMessage `json:"openapi_schema"`
		LatestVersion *struct {
			OpenAPISchema json.RawMessage `json:"openapi_schema"`
		} `json:"latest_version"`
	}
	if err := json.Unmarshal(a.body, &doc); err != nil {
		return nil, fmt.Errorf("upstream schema of %s: %w: %v", model, ErrMalformed, err)
	}
	schema := doc.OpenAPISchema
	if version == "" {
		if doc.LatestVersion == nil {
			return nil, fmt.Errorf("upstream schema of %s: the model has no version", model)
		}
		schema = doc.LatestVersion.OpenAPISchema
	}
	types = routing.SchemaTypes(schema)
	if types == nil {
		types = map[string]string{}
	}
	c.mu.Lock()
	if c.schemas == nil {
		c.schemas = map[string]map[string]string{}
	}
	c.schemas[model] = types
	c.mu.Unlock()
	return types, nil
}

// FindJob lists recent predictions (GET /v1/predictions, newest first, two
// pages at most) for one created since since whose webhook holds marker.
func (c *Replicate) FindJob(ctx context.Context, marker string, since time.Time) (domain.UpstreamJob, bool, error) {
	next := c.root() + "/predictions"
	for page := 0; page < 2 && next != ""; page++ {
		h := http.Header{}
		h.Set("Authorization", "Bearer "+c.Token)
		a, err := c.do(ctx, request{op: "list", method: http.MethodGet, url: next, header: h})
		if err != nil {
			return domain.UpstreamJob{}, false, err
		}
		var list struct {
			Next    *string `json:"next"`
			Results []struct {
				ID        string `json:"id"`
				Webhook   string `json:"webhook"`
				CreatedAt string `json:"created_at"`
			} `json:"results"`
		}
		if err := json.Unmarshal(a.body, &list); err != nil {
			return domain.UpstreamJob{}, false, fmt.Errorf("upstream list: %w: %v", ErrMalformed, err)
		}
		for _, p := range list.Results {
			if p.Webhook != "" && strings.Contains(p.Webhook, marker) {
				return domain.UpstreamJob{ID: p.ID}, true, nil
			}
			if t, err := time.Parse(time.RFC3339Nano, p.CreatedAt); err == nil && t.Before(since.Add(-time.Minute)) {
				return domain.UpstreamJob{}, false, nil // older than the create: no need to look further
			}
		}
		next = ""
		if list.Next != nil {
			next = *list.Next
		}
	}
	return domain.UpstreamJob{}, false, nil
}

// signingSecret is the configured secret, or the one the API gives
// (fetched once).
func (c *Replicate) signingSecret(ctx context.Context) (string, error) {
	if c.WebhookSecret != "" {
		return c.WebhookSecret, nil
	}
	c.mu.Lock()
	s := c.secret
	c.mu.Unlock()
	if s != "" {
		return s, nil
	}
	a, err := c.call(ctx, "webhook secret", http.MethodGet, "/webhooks/default/secret", nil, false)
	if err != nil {
		return "", err
	}
	var body struct {
		Key string `json:"key"`
	}
	if err := json.Unmarshal(a.body, &body); err != nil || body.Key == "" {
		return "", fmt.Errorf("upstream webhook secret: %w", ErrMalformed)
	}
	c.mu.Lock()
	c.secret = body.Key
	c.mu.Unlock()
	return body.Key, nil
}

// VerifyWebhook checks the Standard Webhooks signature of a callback.
func (c *Replicate) VerifyWebhook(ctx context.Context, h http.Header, body []byte, now time.Time) error {
	secret, err := c.signingSecret(ctx)
	if err != nil {
		return err
	}
	return webhook.Verify(secret, h, body, now)
}

// DecodeWebhook reads a callback: the prediction.
func (c *Replicate) DecodeWebhook(body []byte) (Result, error) { return decodePrediction(body) }

// splitModel reads "owner/name" or "owner/name:version".
func splitModel(model string) (owner, name, version string, err error) {
	ref, version, _ := strings.Cut(model, ":")
	owner, name, ok := strings.Cut(ref, "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		return "", "", "", fmt.Errorf("upstream: model %q is not owner/name or owner/name:version", model)
	}
	return owner, name, version, nil
}

type wirePrediction struct {
	ID     string          `json:"id"`
	Status string          `json:"status"`
	Output json.RawMessage `json:"output"`
	Error  json.RawMessage `json:"error"`
	Logs   string          `json:"logs"`
}

// decodePrediction reads a prediction as the provider sends it, in answers
// and in its callbacks.
func decodePrediction(raw []byte) (Result, error) {
	var w wirePrediction
	if err := json.Unmarshal(raw, &w); err != nil {
		return Result{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if w.ID == "" {
		return Result{}, fmt.Errorf("%w: prediction without id", ErrMalformed)
	}
	switch w.Status {
	case statusStarting, StatusProcessing, StatusSucceeded, StatusFailed, StatusCanceled, StatusAborted:
	default:
		return Result{}, fmt.Errorf("%w: unknown status %q", ErrMalformed, w.Status)
	}
	r := Result{ID: w.ID, Status: w.Status, Progress: progressOf(w.Logs)}
	var err error
	if r.Outputs, err = outputURLs(w.Output); err != nil {
		return Result{}, err
	}
	if len(w.Error) > 0 && string(w.Error) != "null" {
		var msg string
		if err := json.Unmarshal(w.Error, &msg); err != nil {
			msg = string(w.Error)
		}
		r.Error = truncate(msg, 1000)
	}
	return r, nil
}
