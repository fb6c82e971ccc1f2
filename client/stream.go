package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"
)

// ErrNoStream says the service serves no event stream where the client
// asked (a service from before the streams, or a deployment whose
// StreamURL the client was not given: API Gateway answers 404 there), or
// would not open one now (429): the Follow helpers then poll instead.
var ErrNoStream = errors.New("no event stream")

// maxResumes bounds the reconnections of one Follow: a stream ends after
// 10 minutes and is resumed, so this is hours of waiting.
const maxResumes = 1000

// FollowGeneration follows a generation's event stream
// (GET /api/generations/{id}/events, on StreamURL) until its view is
// final, and returns that view; progress, when not nil, sees each view the
// stream sends, the last included. A stream that ends before the final
// view (its time limit, a dropped connection) is resumed with
// Last-Event-ID. Where the service has no stream (ErrNoStream) it polls as
// WaitGeneration does, with opts.
func (c *Client) FollowGeneration(ctx context.Context, id string, opts WaitOptions, progress func(GenerationStatus)) (GenerationStatus, error) {
	st, err := follow(ctx, c, "/api/generations/"+pathEscape(id)+"/events",
		func(ctx context.Context) (GenerationStatus, error) { return c.Generation(ctx, id) },
		func(s GenerationStatus) string { return s.Status }, progress)
	if errors.Is(err, ErrNoStream) {
		return c.WaitGeneration(ctx, id, opts, progress)
	}
	return st, err
}

// FollowLongVideo follows a long-form video's event stream
// (GET /api/long-story/videos/{videoId}/events) like FollowGeneration,
// polling as WaitLongVideo does where there is none.
func (c *Client) FollowLongVideo(ctx context.Context, id string, opts WaitOptions, progress func(LongVideoStatus)) (LongVideoStatus, error) {
	st, err := follow(ctx, c, "/api/long-story/videos/"+pathEscape(id)+"/events",
		func(ctx context.Context) (LongVideoStatus, error) { return c.LongVideo(ctx, id) },
		func(s LongVideoStatus) string { return s.Status }, progress)
	if errors.Is(err, ErrNoStream) {
		return c.WaitLongVideo(ctx, id, opts, progress)
	}
	return st, err
}

// follow reads the stream at path, resuming it until a final view. A
// stream that ends without one is checked with get first (the client may
// have resumed after the final event), then resumed.
func follow[T any](ctx context.Context, c *Client, path string, get func(context.Context) (T, error), status func(T) string, progress func(T)) (T, error) {
	var last T
	lastID := ""
	for resumes := 0; ; resumes++ {
		body, err := c.openStream(ctx, path, lastID)
		if err != nil {
			if errors.Is(err, ErrNoStream) && lastID != "" {
				break // it served this stream before: read the view instead
			}
			return last, err
		}
		final := false
		err = readEvents(body, func(id, event, data string) error {
			if event == streamErrorEvent {
				return streamError(data)
			}
			var v T
			if err := json.Unmarshal([]byte(data), &v); err != nil {
				return fmt.Errorf("event %s: %w", id, err)
			}
			last, lastID = v, id
			if progress != nil {
				progress(v)
			}
			if Final(status(v)) {
				final = true
				return io.EOF
			}
			return nil
		})
		body.Close()
		if final {
			return last, nil
		}
		if ctx.Err() != nil {
			return last, ctx.Err()
		}
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			return last, fmt.Errorf("event stream %s: %w", path, err)
		}
		if resumes >= maxResumes {
			return last, fmt.Errorf("event stream %s: ended %d times without a final view", path, resumes+1)
		}
		// Ended early: the view may have turned final between streams.
		v, err := get(ctx)
		if err != nil {
			return last, fmt.Errorf("event stream %s: %w", path, err)
		}
		if Final(status(v)) {
			if progress != nil {
				progress(v)
			}
			return v, nil
		}
		if err := c.wait(ctx, streamRetry); err != nil {
			return last, err
		}
	}
	v, err := get(ctx)
	if err == nil && progress != nil {
		progress(v)
	}
	return v, err
}

// streamErrorEvent is the event that ends a stream whose credential no
// longer holds (a key revoked, a token expired while it streamed): its
// data is the API's 401 error envelope.
const streamErrorEvent = "error"

// streamError is the *APIError of an error event's envelope.
func streamError(data string) error {
	var env envelope
	if err := json.Unmarshal([]byte(data), &env); err != nil || env.Error.Code == "" {
		return fmt.Errorf("event stream: an error event without the error envelope: %q", data)
	}
	e := &APIError{Code: env.Error.Code, Message: env.Error.Message, Details: env.Error.Details, RequestID: env.RequestID}
	if e.Code == "unauthorized" {
		e.Status = http.StatusUnauthorized
	}
	return e
}

// streamRetry is the wait before a stream is resumed (its retry: field).
const streamRetry = time.Second

// openStream opens the event stream at path on StreamURL: the answer's
// body, or ErrNoStream (no stream there, or not now), or the *APIError of
// a refusal (a missing generation, a bad key).
func (c *Client) openStream(ctx context.Context, path, lastID string) (io.ReadCloser, error) {
	base := c.StreamURL
	if base == "" {
		base = c.BaseURL
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	if c.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	if c.UserAgent != "" {
		req.Header.Set("User-Agent", c.UserAgent)
	}
	// The client's timeout bounds whole answers; a stream is bounded by
	// ctx and its own time limit instead.
	hc := *c.httpClient()
	hc.Timeout = 0
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case resp.StatusCode == http.StatusOK && mt == "text/event-stream":
		return resp.Body, nil
	case resp.StatusCode < 300, resp.StatusCode == http.StatusTooManyRequests, resp.StatusCode == http.StatusMethodNotAllowed:
		resp.Body.Close()
		return nil, ErrNoStream
	}
	apiErr := readError(resp)
	resp.Body.Close()
	if apiErr.Status == http.StatusNotFound && strings.HasPrefix(apiErr.Code, "http_") {
		// A 404 without the service's envelope: the gateway has no such
		// route (the service's own 404 names not_found).
		return nil, ErrNoStream
	}
	return nil, apiErr
}

// readEvents reads server-sent events (id, event name, data) from r, calling each for
// every event with data, until r ends or each returns an error (returned;
// io.EOF for the end of r).
func readEvents(r io.Reader, each func(id, event, data string) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var id, event string
	var data strings.Builder
	hasData := false
	for {
		line, err := br.ReadString('\n')
		if err != nil && line == "" {
			return err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if hasData {
				if err := each(id, event, data.String()); err != nil {
					return err
				}
			}
			data.Reset()
			hasData, event = false, ""
			continue
		}
		name, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch name {
		case "id":
			id = value
		case "event":
			event = value
		case "data":
			if hasData {
				data.WriteByte('\n')
			}
			data.WriteString(value)
			hasData = true
		}
		if err != nil {
			return err
		}
	}
}
