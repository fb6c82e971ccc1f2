package client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

const (
	refused = `{"error":{"code":"upstream_refused","message":"upstream sim refused the job: prompt: the prompt asked to be refused; no credits were charged",` +
		`"generation_id":"6f1c2a8e-3b7d-4e2f-9a51-0c8d7e6b5a43"},"request_id":"r3"}`
	internal   = `{"error":{"code":"internal_error","message":"internal error; the request id identifies it in our logs"},"request_id":"r4"}`
	inProgress = `{"error":{"code":"idempotency_key_in_progress","message":"a request with this Idempotency-Key is still running; retry shortly"},"request_id":"r5"}`
	created    = `{"id":7,"uuid":"u","status":"processing","credits_used":"2.60","output_data":{"urls":[]}}`
)

// TestFinalAnswersAreSentOnce: an answer that says the request will not
// succeed as it is (a 500, a provider's refusal or unavailability whose
// failed record exists, a conflict) is returned at once, not sent again.
func TestFinalAnswersAreSentOnce(t *testing.T) {
	tests := []struct {
		name   string
		answer answer
		code   string
	}{
		{"500", answer{500, nil, internal}, "internal_error"},
		{"502 upstream_refused", answer{502, nil, refused}, "upstream_refused"},
		{"502 upstream_unavailable", answer{502, nil, unavailable}, "upstream_unavailable"},
		{"502 from a gateway", answer{502, nil, `Bad Gateway`}, "http_502"},
		{"504 from a gateway", answer{504, nil, `Gateway Timeout`}, "http_504"},
		{"409 conflict", answer{409, nil, `{"error":{"code":"conflict","message":"already completed"},"request_id":"r"}`}, "conflict"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, s, waits := testClient(t, tt.answer, answer{200, nil, created})
			_, err := c.Generate(context.Background(), GenerateRequest{Model: "provider-a", ModelVersion: "theta-4-fast", Input: map[string]any{"prompt": "p"}})
			var apiErr *APIError
			if !errors.As(err, &apiErr) || apiErr.Code != tt.code || apiErr.Temporary() {
				t.Fatalf("Generate = %v, want the final *APIError %s", err, tt.code)
			}
			if len(s.requests) != 1 || len(*waits) != 0 {
				t.Errorf("%d requests and waits %v, want the one request and no wait", len(s.requests), *waits)
			}
		})
	}
}

// TestARefusedCreateNamesItsFailedRecord: the 502's generation_id is the
// failed record's uuid, so a caller can match it in the list.
func TestARefusedCreateNamesItsFailedRecord(t *testing.T) {
	c, _, _ := testClient(t, answer{502, nil, refused})
	_, err := c.Generate(context.Background(), GenerateRequest{Model: "provider-a", ModelVersion: "theta-4-fast", Input: map[string]any{"prompt": "p"}})
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.GenerationID != "6f1c2a8e-3b7d-4e2f-9a51-0c8d7e6b5a43" || apiErr.RequestID != "r3" {
		t.Fatalf("Generate = %#v, want the 502 naming its generation", err)
	}
}

// TestWhatMaySucceedIsRetriedWithItsWait: a 503 with Retry-After, a 429
// and a 409 for a key still in progress are sent again, after the wait the
// service asked for, with the same Idempotency-Key.
func TestWhatMaySucceedIsRetriedWithItsWait(t *testing.T) {
	c, s, waits := testClient(t,
		answer{503, map[string]string{"Retry-After": "7"}, `Service Unavailable`},
		answer{429, map[string]string{"Retry-After": "2"}, rateLimited},
		answer{409, map[string]string{"Retry-After": "1"}, inProgress},
		answer{200, nil, created},
	)
	g, err := c.Generate(context.Background(), GenerateRequest{Model: "provider-a", ModelVersion: "theta-4-fast", Input: map[string]any{"prompt": "p"}})
	if err != nil || g.ID != 7 {
		t.Fatalf("Generate = %+v, %v", g, err)
	}
	if want := []time.Duration{7 * time.Second, 2 * time.Second, time.Second}; len(*waits) != 3 ||
		(*waits)[0] != want[0] || (*waits)[1] != want[1] || (*waits)[2] != want[2] {
		t.Errorf("waited %v, want %v", *waits, want)
	}
	key := s.requests[0].Header.Get("Idempotency-Key")
	for i, r := range s.requests {
		if got := r.Header.Get("Idempotency-Key"); got != key || key == "" {
			t.Errorf("try %d has Idempotency-Key %q, want %q on every try", i, got, key)
		}
	}
}

// dropping closes the connection of its first n requests without an
// answer, as a network failure after the request arrived, then answers
// 200 with body.
type dropping struct {
	mu       sync.Mutex
	n        int
	body     string
	requests []http.Header
}

// seen is a copy of the headers of the requests received so far.
func (d *dropping) seen() []http.Header {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]http.Header(nil), d.requests...)
}

func (d *dropping) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	d.requests = append(d.requests, r.Header.Clone())
	drop := len(d.requests) <= d.n
	d.mu.Unlock()
	if drop {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte(d.body))
}

// TestALostConnectionIsRetriedOnlyWhenSafeToRepeat: a create carries an
// Idempotency-Key, so it is sent again with the same key; a read is sent
// again; a key's creation, which keeps no Idempotency-Key, is not (a
// second try could make a second key), nor after a 503.
func TestALostConnectionIsRetriedOnlyWhenSafeToRepeat(t *testing.T) {
	tests := []struct {
		name     string
		call     func(c *Client) error
		requests int
		keyed    bool
	}{
		{"a create, with its key", func(c *Client) error {
			_, err := c.Generate(context.Background(), GenerateRequest{Model: "provider-a", ModelVersion: "theta-4-fast", Input: map[string]any{"prompt": "p"}})
			return err
		}, 2, true},
		{"a read", func(c *Client) error { _, err := c.Generation(context.Background(), "7"); return err }, 2, false},
		{"a key's creation", func(c *Client) error {
			_, err := c.CreateKey(context.Background(), KeyRequest{Name: "ci"})
			return err
		}, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &dropping{n: 1, body: `{}`}
			srv := httptest.NewServer(d)
			defer srv.Close()
			c := New(srv.URL, "mgk_test_key")
			c.Sleep = func(ctx context.Context, _ time.Duration) error { return ctx.Err() }
			err := tt.call(c)
			requests := d.seen()
			if got := len(requests); got != tt.requests {
				t.Fatalf("%d requests (error %v), want %d", got, err, tt.requests)
			}
			if tt.requests == 1 && err == nil {
				t.Error("no error after a lost connection that was not retried")
			}
			if tt.requests == 2 && err != nil {
				t.Errorf("retried call failed: %v", err)
			}
			key := requests[0].Get("Idempotency-Key")
			if (key != "") != tt.keyed {
				t.Errorf("Idempotency-Key %q, want one: %v", key, tt.keyed)
			}
			if tt.keyed && requests[1].Get("Idempotency-Key") != key {
				t.Errorf("the retry's key %q is not the first try's %q", requests[1].Get("Idempotency-Key"), key)
			}
		})
	}
	t.Run("a key's creation after a 503", func(t *testing.T) {
		c, s, _ := testClient(t, answer{503, nil, `Service Unavailable`}, answer{200, nil, `{}`})
		if _, err := c.CreateKey(context.Background(), KeyRequest{Name: "ci"}); err == nil {
			t.Error("CreateKey after a 503 succeeded")
		}
		if len(s.requests) != 1 {
			t.Errorf("%d requests, want 1", len(s.requests))
		}
	})
}
