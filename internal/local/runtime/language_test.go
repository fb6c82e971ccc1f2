package runtime_test

import (
	"net/http"
	"testing"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// TestLanguageCodeIsOneOfTheContractsLowercaseCodes: language_code is an
// enum of lowercase codes in openapi.yaml (the spec's samples are
// lowercase), so another case is a 400 naming language_code, at creation
// and at estimate alike, and nothing is held.
func TestLanguageCodeIsOneOfTheContractsLowercaseCodes(t *testing.T) {
	rt := start(t, storyConfig())
	owner := newAccount(t, rt, domain.PlanEnterprise, 1000)
	scenes := []storyScene{{1, "a path"}, {2, "a gate"}}
	tests := []struct {
		code   string
		status int
	}{
		{"fr", http.StatusOK},
		{"ja", http.StatusOK},
		{"FR", http.StatusBadRequest},
		{"Fr", http.StatusBadRequest},
		{"EN", http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			body := storyBody("A walk", tt.code, true, "auto", scenes)
			estimate := map[string]any{"model": "beta-2", "scenes": body["scenes"], "language_code": tt.code}
			for _, r := range []struct {
				path string
				body map[string]any
			}{{"/api/long-story/videos/estimate", estimate}, {"/api/long-story/videos", body}} {
				before := account(t, rt, owner.UserID)
				var sent any = r.body
				if tt.status != http.StatusOK {
					sent = malformed(r.body) // outside the document's enum
				}
				a := call(t, rt, http.MethodPost, r.path, owner.APIKey, sent)
				if tt.status == http.StatusOK {
					if a.status != http.StatusOK {
						t.Errorf("POST %s with language_code %q: HTTP %d %s", r.path, tt.code, a.status, a.body)
					}
					continue
				}
				checkEnvelope(t, a, tt.status)
				if !namesField(a, "language_code") {
					t.Errorf("POST %s with language_code %q: the 400 does not name language_code: %s", r.path, tt.code, a.body)
				}
				if after := account(t, rt, owner.UserID); !after.Held.Equal(before.Held) {
					t.Errorf("POST %s with language_code %q held %s", r.path, tt.code, after.Held.Sub(before.Held))
				}
			}
		})
	}
}

// namesField reports whether an error envelope's details name field.
func namesField(a answer, field string) bool {
	e, _ := a.decoded["error"].(map[string]any)
	details, _ := e["details"].([]any)
	for _, d := range details {
		if m, _ := d.(map[string]any); m["field"] == field {
			return true
		}
	}
	return false
}
