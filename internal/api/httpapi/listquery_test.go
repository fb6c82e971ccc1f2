package httpapi

import (
	"errors"
	"net/http"
	"strings"
	"testing"
)

// A list's query string is read whole: every problem is named in the one
// 400, the order of from and to among them.
func TestAListQueryNamesEveryProblemAtOnce(t *testing.T) {
	tests := []struct {
		name  string
		query map[string]string
		want  []string // substrings of the message; none: accepted
	}{
		{"a valid range", map[string]string{"from": "2026-12-01T00:00:00Z", "to": "2026-12-02T00:00:00Z", "limit": "5"}, nil},
		{"from after to, alone", map[string]string{"from": "2026-12-02T00:00:00Z", "to": "2026-12-01T00:00:00Z"}, []string{"from must be before to"}},
		{"from after to, with a bad limit", map[string]string{"limit": "0", "from": "2026-12-02T00:00:00Z", "to": "2026-12-01T00:00:00Z"},
			[]string{"limit must be", "from must be before to"}},
		{"a from that does not parse is not also out of order", map[string]string{"from": "yesterday", "to": "2026-12-01T00:00:00Z"},
			[]string{"from must be an RFC 3339 time"}},
		{"an unknown parameter names those allowed", map[string]string{"kind": "x"},
			[]string{`unknown query parameter "kind" (allowed: limit, cursor, type, work_id, from, to)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := journalQuery(Request{QueryStringParameters: tt.query}, "u1")
			if tt.want == nil {
				if err != nil {
					t.Fatalf("journalQuery = %v, want accepted", err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Status != http.StatusBadRequest {
				t.Fatalf("journalQuery = %v, want a 400", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(e.Message, w) {
					t.Errorf("message %q does not name %q", e.Message, w)
				}
			}
			if len(tt.want) == 1 && strings.Contains(e.Message, ";") {
				t.Errorf("message %q names more than the one problem", e.Message)
			}
		})
	}
}
