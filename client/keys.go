package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/mediagen-dev/mediagen/internal/api/apiview"
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

// KeysPage is a page of the account's keys, revoked ones included, newest
// first (o's Limit and Cursor; its filters do not apply to keys).
func (c *Client) KeysPage(ctx context.Context, o ListOptions) (Page[Key], error) {
	o = ListOptions{Limit: o.Limit, Cursor: o.Cursor}
	return do[Page[Key]](ctx, c, http.MethodGet, "/api/account/keys"+o.query(), nil)
}

// Keys lists every key of the account, revoked ones included, newest
// first, page after page.
func (c *Client) Keys(ctx context.Context) ([]Key, error) {
	var keys []Key
	o := ListOptions{Limit: 100}
	for {
		page, err := c.KeysPage(ctx, o)
		if err != nil {
			return keys, err
		}
		keys = append(keys, page.Data...)
		var more bool
		if o, more = page.Next(o); !more {
			return keys, nil
		}
	}
}

// RevokeKey revokes the account's key with this prefix (mgk_…). Revoking
// it again answers the first revocation's time.
func (c *Client) RevokeKey(ctx context.Context, prefix string) (RevokedKey, error) {
	return do[RevokedKey](ctx, c, http.MethodDelete, "/api/account/keys/"+url.PathEscape(prefix), nil)
}

// RotatedWebhookSecret is the account's new webhook signing secret.
type RotatedWebhookSecret = apiview.RotatedWebhookSecret

// RotateWebhookSecret replaces the account's webhook signing secret and
// returns the new one, shown this once; the caller's key needs the admin
// scope. Webhooks sent from then on are signed with it. The service keeps
// no Idempotency-Key for this route: a retry rotates again, and the last
// answer's secret is the one in force.
func (c *Client) RotateWebhookSecret(ctx context.Context) (RotatedWebhookSecret, error) {
	return do[RotatedWebhookSecret](ctx, c, http.MethodPost, "/api/account/webhook-secret/rotate", nil)
}
