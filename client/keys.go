package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/mediagen-dev/mediagen/shared/apiview"
)

// KeyRequest is the body of POST /api/account/keys.
type KeyRequest struct {
	Name string `json:"name"`
	// Scopes are among generate, read and admin; none asks for the
	// service's default (generate and read).
	Scopes []string `json:"scopes,omitempty"`
	// DailyCreditLimit caps what the key's holds take per UTC day, such
	// as "25.00"; empty for none.
	DailyCreditLimit string `json:"daily_credit_limit,omitempty"`
}

// CreatedKey is a new key with its secret (APIKey), shown this once.
type CreatedKey = apiview.CreatedKey

// Key is one key of GET /api/account/keys: never its secret.
type Key = apiview.ListedKey

// RevokedKey says when a key stopped working.
type RevokedKey = apiview.RevokedKey

// CreateKey makes a key of the caller's account; the caller's key needs
// the admin scope (or use an identity-provider token). The service keeps
// no Idempotency-Key for this route (its answer carries the secret), so
// the client never sends it again after a lost answer or a 503, which may
// have made the key: Keys lists it, and RevokeKey removes one never
// received.
func (c *Client) CreateKey(ctx context.Context, req KeyRequest) (CreatedKey, error) {
	return do[CreatedKey](ctx, c, http.MethodPost, "/api/account/keys", req)
}

// Keys lists the account's keys, revoked ones included, newest first.
func (c *Client) Keys(ctx context.Context) ([]Key, error) {
	list, err := do[apiview.KeyList](ctx, c, http.MethodGet, "/api/account/keys", nil)
	return list.Data, err
}

// RevokeKey revokes the account's key with this prefix (mgk_…). Revoking
// it again answers the first revocation's time.
func (c *Client) RevokeKey(ctx context.Context, prefix string) (RevokedKey, error) {
	return do[RevokedKey](ctx, c, http.MethodDelete, "/api/account/keys/"+url.PathEscape(prefix), nil)
}
