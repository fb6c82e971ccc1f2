package client

import (
	"context"
	"net/http"
)

// Account is the answer of GET /api/account.
type Account struct {
	UserID    string `json:"user_id"`
	Plan      string `json:"plan"`
	Balance   string `json:"balance"`
	Held      string `json:"held"`
	RateLimit struct {
		RequestsPerMinute int `json:"requests_per_minute"`
	} `json:"rate_limit"`
	Usage struct {
		Month   string `json:"month"`
		Credits string `json:"credits"`
		Jobs    int    `json:"jobs"`
	} `json:"usage"`
	Webhooks struct {
		SigningSecret string `json:"signing_secret"`
	} `json:"webhooks"`
}

// Account reads the caller's account.
func (c *Client) Account(ctx context.Context) (Account, error) {
	var a Account
	err := c.Do(ctx, http.MethodGet, "/api/account", nil, &a)
	return a, err
}
