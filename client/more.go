package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
)

// GenerationEstimate is the answer of POST /api/generations/estimate.
type GenerationEstimate struct {
	Model        string `json:"model"`
	ModelVersion string `json:"model_version"`
	Kind         string `json:"kind"`
	ImageCount   int    `json:"image_count"`
	// Credits keeps the service's decimal text ("12.35").
	Credits string `json:"credits"`
}

// Account is the answer of GET /api/account.
type Account struct {
	UserID    string `json:"user_id"`
	Plan      string `json:"plan"`
	Balance   string `json:"balance"`
	Held      string `json:"held"`
	RateLimit struct {
		RequestsPerMinute int `json:"requests_per_minute"`
	} `json:"rate_limit"`
	Usage struct {
		Month   string `json:"month"`
		Credits string `json:"credits"`
		Jobs    int    `json:"jobs"`
	} `json:"usage"`
	Webhooks struct {
		SigningSecret string `json:"signing_secret"`
	} `json:"webhooks"`
}

// ListOptions selects a page of a list; zero values take the defaults.
type ListOptions struct {
	Limit  int
	Cursor string
	Status string
	Model  string
}

func (o ListOptions) query() string {
	q := url.Values{}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	for k, v := range map[string]string{"cursor": o.Cursor, "status": o.Status, "model": o.Model} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

// Page is one page of a list; NextCursor is empty on the last.
type Page[T any] struct {
	Data       []T     `json:"data"`
	NextCursor *string `json:"next_cursor"`
	HasMore    bool    `json:"has_more"`
}

// Next is the options of the page after p.
func (p Page[T]) Next(o ListOptions) (ListOptions, bool) {
	if p.NextCursor == nil {
		return o, false
	}
	o.Cursor = *p.NextCursor
	return o, true
}

// EstimateGeneration prices a generate request without starting it.
func (c *Client) EstimateGeneration(ctx context.Context, req GenerateRequest) (GenerationEstimate, error) {
	var e GenerationEstimate
	err := c.Do(ctx, http.MethodPost, "/api/generations/estimate", req, &e)
	return e, err
}

// CancelGeneration stops a generation and returns its credits; a finished
// one is an *APIError with status 409.
func (c *Client) CancelGeneration(ctx context.Context, id string) (GenerationStatus, error) {
	var s GenerationStatus
	err := c.Do(ctx, http.MethodPost, "/api/generations/"+pathEscape(id)+"/cancel", nil, &s)
	return s, err
}

// CancelLongVideo stops a long-form video and returns its credits.
func (c *Client) CancelLongVideo(ctx context.Context, id string) (LongVideoStatus, error) {
	var s LongVideoStatus
	err := c.Do(ctx, http.MethodPost, "/api/long-story/videos/"+pathEscape(id)+"/cancel", nil, &s)
	return s, err
}

// Generations lists the caller's generations, newest first.
func (c *Client) Generations(ctx context.Context, o ListOptions) (Page[GenerationStatus], error) {
	var p Page[GenerationStatus]
	err := c.Do(ctx, http.MethodGet, "/api/generations"+o.query(), nil, &p)
	return p, err
}

// LongVideos lists the caller's long-form videos, newest first.
func (c *Client) LongVideos(ctx context.Context, o ListOptions) (Page[LongVideoStatus], error) {
	var p Page[LongVideoStatus]
	err := c.Do(ctx, http.MethodGet, "/api/long-story/videos"+o.query(), nil, &p)
	return p, err
}

// Account reads the caller's account.
func (c *Client) Account(ctx context.Context) (Account, error) {
	var a Account
	err := c.Do(ctx, http.MethodGet, "/api/account", nil, &a)
	return a, err
}
