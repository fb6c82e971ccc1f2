package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/generation"
)

// memoryKeys is an IdempotencyStore in memory that, like the real ones,
// refuses an answer over domain.MaxIdempotentAnswer.
type memoryKeys struct {
	mu   sync.Mutex
	recs map[string]domain.IdempotencyRecord
}

func (m *memoryKeys) ClaimIdempotencyKey(_ context.Context, r domain.IdempotencyRecord) (domain.IdempotencyRecord, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.recs[r.Key]; ok {
		return old, false, nil
	}
	m.recs[r.Key] = r
	return domain.IdempotencyRecord{}, true, nil
}

func (m *memoryKeys) FinishIdempotencyKey(_ context.Context, _, key string, status int, body []byte) error {
	if len(body) > domain.MaxIdempotentAnswer {
		return domain.ErrAnswerTooLarge
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.recs[key]
	r.StatusCode, r.Body = status, body
	m.recs[key] = r
	return nil
}

func (m *memoryKeys) ReleaseIdempotencyKey(_ context.Context, _, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.recs[key].StatusCode == 0 {
		delete(m.recs, key)
	}
	return nil
}

// TestTheIdempotencyGuardKeepsOnlyBoundedFinalAnswers: no answer over the
// bound is kept: an error over it is forgotten (a repeat runs again), a
// success over it is kept as a small 409 that says the work was done, so a
// repeat never runs it twice. A provider's refusal is kept (its record is
// failed and its word final); another 502 is forgotten so a repeat runs.
func TestTheIdempotencyGuardKeepsOnlyBoundedFinalAnswers(t *testing.T) {
	large := `{"x":"` + strings.Repeat("a", domain.MaxIdempotentAnswer) + `"}`
	tests := []struct {
		name     string
		answer   func() (Response, error)
		runs     int    // the handler's runs for two requests with the key
		repeated int    // the repeat's status
		code     string // the repeat's error code, if an error
	}{
		{"a success over the bound", func() (Response, error) { return Response{StatusCode: 200, Body: large}, nil }, 1, 409, "idempotency_answer_not_kept"},
		{"an error over the bound", func() (Response, error) { return Response{StatusCode: 400, Body: large}, nil }, 2, 400, ""},
		{"a success within the bound", func() (Response, error) { return jsonResponse(200, map[string]int{"id": 1}), nil }, 1, 200, ""},
		{"a provider's refusal", func() (Response, error) {
			return Response{}, &domain.RecordedWorkError{Kind: domain.WorkGeneration, ID: "g1",
				Err: &generation.UpstreamError{Refused: true, Upstream: "sim", Reason: "prompt: no", Cause: errors.New("HTTP 422")}}
		}, 1, 502, "upstream_refused"},
		{"an upstream unavailable", func() (Response, error) {
			return Response{}, &generation.UpstreamError{Reason: "upstream unreachable: sim", Cause: errors.New("dial tcp 127.0.0.1:1: connect: connection refused")}
		}, 2, 502, "upstream_unavailable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &memoryKeys{recs: map[string]domain.IdempotencyRecord{}}
			guard := &Idempotency{Store: store}
			runs := 0
			h := func(context.Context, Request, domain.Account) (Response, error) {
				runs++
				return tt.answer()
			}
			req := Request{Method: http.MethodPost, RouteKey: "POST /api/generations/generate", Body: `{}`,
				Headers: map[string]string{"idempotency-key": "k1"}}
			var last Response
			for try := 0; try < 2; try++ {
				resp, err := guard.wrap(context.Background(), req, domain.Account{UserID: "u1"}, h)
				if err != nil {
					resp = errorResponse(context.Background(), domain.Logger(nil), req, err)
				}
				last = resp
			}
			if runs != tt.runs {
				t.Errorf("the handler ran %d times, want %d", runs, tt.runs)
			}
			if last.StatusCode != tt.repeated {
				t.Errorf("the repeat answered %d %s, want %d", last.StatusCode, last.Body[:min(len(last.Body), 200)], tt.repeated)
			}
			if tt.code != "" {
				if code, _ := envelopeOf(t, last); code != tt.code {
					t.Errorf("the repeat's code is %s, want %s", code, tt.code)
				}
			}
			for key, r := range store.recs {
				if len(r.Body) > domain.MaxIdempotentAnswer {
					t.Errorf("key %s keeps %d bytes, over the bound", key, len(r.Body))
				}
			}
		})
	}
}
