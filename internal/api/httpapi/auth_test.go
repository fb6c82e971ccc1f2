package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// countingStore is an AuthStore of one account that counts its reads,
// and the key uses noted.
type countingStore struct {
	account      domain.Account
	accountReads int
	counted      int
	touched      []string // hashes
}

func (s *countingStore) TouchAPIKey(_ context.Context, hash string, _, _ time.Time) error {
	s.touched = append(s.touched, hash)
	return nil
}

func (s *countingStore) GetAPIKey(context.Context, string) (domain.APIKey, error) {
	return domain.APIKey{}, domain.ErrNotFound
}

func (s *countingStore) GetAccount(_ context.Context, userID string) (domain.Account, error) {
	s.accountReads++
	if userID != s.account.UserID {
		return domain.Account{}, domain.ErrNotFound
	}
	return s.account, nil
}

func (s *countingStore) CountRequest(context.Context, string, time.Time) (int, error) {
	s.counted++
	return s.counted, nil
}

// A route that needs only the user id takes the plan and limit from the
// authorizer's context, as API Gateway delivers it (JSON: the limit is a
// number), and reads no account; when the context lacks them or does not
// add up, and for routes that need the whole account, the account is read.
func TestRoutesReadTheAccountOnlyWhenTheAuthorizerDidNotSayEnough(t *testing.T) {
	tests := []struct {
		name       string
		authorizer string // requestContext.authorizer.lambda, JSON
		userOnly   bool
		reads      int
		limit      string
	}{
		{"user route, plan and limit given", `{"user_id":"u1","plan":"enterprise","rate_limit":250,"key_prefix":"mgk_a","scopes":"read"}`, true, 0, "250"},
		{"user route, pro plan", `{"user_id":"u1","plan":"pro","rate_limit":100,"key_prefix":"mgk_a","scopes":"read"}`, true, 0, "100"},
		{"user route, limit is not the plan's", `{"user_id":"u1","plan":"pro","rate_limit":7,"key_prefix":"mgk_a","scopes":"read"}`, true, 1, "250"},
		{"user route, no limit (older authorizer)", `{"user_id":"u1","key_prefix":"mgk_a","scopes":"read"}`, true, 1, "250"},
		{"account route", `{"user_id":"u1","plan":"enterprise","rate_limit":250,"key_prefix":"mgk_a","scopes":"read"}`, false, 1, "250"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &countingStore{account: domain.Account{UserID: "u1", Plan: domain.PlanEnterprise, CustomRateLimit: 250}}
			g := &Gate{Store: st}
			// The context as API Gateway passes it on: JSON, numbers as float64.
			req := Request{RouteKey: "GET /x"}
			if err := json.Unmarshal([]byte(tt.authorizer), &req.Authorizer); err != nil {
				t.Fatal(err)
			}
			var got string
			var h Handler
			if tt.userOnly {
				h = g.AuthedUser(readAccess, func(_ context.Context, _ Request, userID string) (Response, error) {
					got = userID
					return jsonResponse(http.StatusOK, map[string]string{}), nil
				})
			} else {
				h = g.Authed(readAccess, func(_ context.Context, _ Request, a domain.Account) (Response, error) {
					got = a.UserID
					return jsonResponse(http.StatusOK, map[string]string{}), nil
				})
			}
			resp, err := h(context.Background(), req)
			if err != nil || resp.StatusCode != http.StatusOK || got != "u1" {
				t.Fatalf("HTTP %d, user %q, err %v", resp.StatusCode, got, err)
			}
			if st.accountReads != tt.reads || st.counted != 1 {
				t.Errorf("%d account reads and %d counts, want %d and 1", st.accountReads, st.counted, tt.reads)
			}
			if l := resp.Headers["X-RateLimit-Limit"]; l != tt.limit {
				t.Errorf("X-RateLimit-Limit %q, want %s", l, tt.limit)
			}
		})
	}
}
