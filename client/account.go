package client

import (
	"context"
	"net/http"

	"github.com/mediagen-dev/mediagen/shared/apiview"
)

// Account is the answer of GET /api/account.
type Account = apiview.Account

// Account reads the caller's account.
func (c *Client) Account(ctx context.Context) (Account, error) {
	return do[Account](ctx, c, http.MethodGet, "/api/account", nil)
}
