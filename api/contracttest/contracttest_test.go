package contracttest

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// errorRecorder is a test that keeps its errors instead of failing.
type errorRecorder struct {
	testing.TB
	errs []string
}

func (r *errorRecorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestContractCatchesMismatches shows that the contract transport fails a
// test on an answer or a request that openapi.yaml does not describe.
func TestContractCatchesMismatches(t *testing.T) {
	limits := http.Header{"Content-Type": {"application/json"}, "X-Ratelimit-Limit": {"100"},
		"X-Ratelimit-Remaining": {"99"}, "X-Ratelimit-Reset": {"1700000000"}}
	status := `{"id":"00000000-0000-4000-8000-000000000000","status":"processing","output":[],"created_at":"2025-01-02T03:04:05.678901","model":"provider-a/zeta","progress":5,"data_removed":false}`
	noProgress := strings.Replace(status, `,"progress":5`, "", 1)
	tests := []struct {
		name, method, path, reqBody string
		malformed                   bool
		code                        int
		header                      http.Header
		body                        string
		wantFailure                 bool
	}{
		{"a documented answer", "GET", "/api/generations/status/1", "", false, 200, limits, status, false},
		{"a missing field", "GET", "/api/generations/status/1", "", false, 200, limits, noProgress, true},
		{"an extra field", "GET", "/api/generations/status/1", "", false, 200, limits, strings.Replace(status, "{", `{"eta":3,`, 1), true},
		{"no rate-limit headers", "GET", "/api/generations/status/1", "", false, 200, http.Header{"Content-Type": {"application/json"}}, status, true},
		{"an undocumented status", "GET", "/api/generations/status/1", "", false, 418, limits, `{}`, true},
		{"not the error envelope", "GET", "/api/generations/status/1", "", false, 404, limits, `{"message":"no"}`, true},
		{"an undocumented route", "GET", "/api/nothing", "", false, 404, limits, `{}`, true},
		{"a request off the document", "POST", "/api/long-story/videos/estimate", `{"model":"zeta","scene_count":3}`, false, 400, limits,
			`{"error":{"code":"invalid_request","message":"m"},"request_id":"r"}`, true},
		{"the same request marked malformed", "POST", "/api/long-story/videos/estimate", `{"model":"zeta","scene_count":3}`, true, 400, limits,
			`{"error":{"code":"invalid_request","message":"m"},"request_id":"r"}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(roundTripFunc(func(*http.Request) (*http.Response, error) {
				return &http.Response{StatusCode: tt.code, Header: tt.header, Body: io.NopCloser(strings.NewReader(tt.body))}, nil
			}))
			if err != nil {
				t.Fatal(err)
			}
			var body io.Reader
			if tt.reqBody != "" {
				body = strings.NewReader(tt.reqBody)
			}
			req, _ := http.NewRequest(tt.method, "http://127.0.0.1:1"+tt.path, body)
			req.Header.Set("Authorization", "Bearer mgk_x")
			if body != nil {
				req.Header.Set("Content-Type", "application/json")
			}
			rec := &errorRecorder{TB: t}
			resp, err := c.RoundTrip(Request(rec, req, tt.malformed))
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := io.ReadAll(resp.Body); string(got) != tt.body {
				t.Errorf("the transport changed the answer's body to %s", got)
			}
			if failed := len(rec.errs) > 0; failed != tt.wantFailure {
				t.Errorf("contract failed the test: %v, want %v (%v)", failed, tt.wantFailure, rec.errs)
			}
		})
	}
}
