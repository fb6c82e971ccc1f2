package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/mediagen-dev/mediagen/internal/api/apiview"
)

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
	return encoded(q)
}

// encoded is q as a query string ("" when empty).
func encoded(q url.Values) string {
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

// Page is one page of a list, the service's view (apiview.ListPage);
// NextCursor is nil on the last.
type Page[T any] apiview.ListPage[T]

// Next is the options of the page after p.
func (p Page[T]) Next(o ListOptions) (ListOptions, bool) {
	if p.NextCursor == nil {
		return o, false
	}
	o.Cursor = *p.NextCursor
	return o, true
}

// Generations lists the caller's generations, newest first.
func (c *Client) Generations(ctx context.Context, o ListOptions) (Page[GenerationStatus], error) {
	return do[Page[GenerationStatus]](ctx, c, http.MethodGet, "/api/generations"+o.query(), nil)
}

// LongVideos lists the caller's long-form videos, newest first.
func (c *Client) LongVideos(ctx context.Context, o ListOptions) (Page[LongVideoStatus], error) {
	return do[Page[LongVideoStatus]](ctx, c, http.MethodGet, "/api/long-story/videos"+o.query(), nil)
}
