package runtime_test

import (
	"net/http"
	"testing"

	"github.com/mediagen-dev/mediagen/shared/domain"
	"github.com/mediagen-dev/mediagen/shared/local/apigw"
)

// TestEveryErrorCarriesItsRequestID: a request no route takes is the error
// envelope with its request_id, like a route's error, and every answer
// names its request in the gateway's header with the same id.
func TestEveryErrorCarriesItsRequestID(t *testing.T) {
	rt := start(t, runtimeConfig())
	owner := newAccount(t, rt, domain.PlanPro, 10)
	tests := []struct {
		name, method, path, key string
		status                  int
		isMalformed             bool // no operation of openapi.yaml
	}{
		{"an unknown path", http.MethodGet, "/api/nothing", owner.APIKey, http.StatusNotFound, true},
		{"an unknown path without credentials", http.MethodGet, "/api/nothing/at/all", "", http.StatusNotFound, true},
		{"a route's path with another method", http.MethodPost, "/api/account", owner.APIKey, http.StatusNotFound, true},
		{"a route's path without its id", http.MethodGet, "/api/generations/status/", owner.APIKey, http.StatusNotFound, true},
		{"a route's 404", http.MethodGet, "/api/generations/status/00000000-0000-4000-8000-000000000000", owner.APIKey, http.StatusNotFound, false},
		{"a route's 401", http.MethodGet, "/api/account", "", http.StatusUnauthorized, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body any
			if tt.isMalformed {
				body = malformed(nil)
			}
			a := call(t, rt, tt.method, tt.path, tt.key, body)
			checkEnvelope(t, a, tt.status)
			if id := a.header.Get(apigw.RequestIDHeader); id == "" || id != a.str("request_id") {
				t.Errorf("%s %q, request_id %q: want the same id in both", apigw.RequestIDHeader, id, a.str("request_id"))
			}
		})
	}
}
