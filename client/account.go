package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/mediagen-dev/mediagen/internal/api/apiview"
)

// Account is the answer of GET /api/account.
type Account = apiview.Account

// Account reads the caller's account.
func (c *Client) Account(ctx context.Context) (Account, error) {
	return do[Account](ctx, c, http.MethodGet, "/api/account", nil)
}

// Transaction is one entry of the caller's credit journal.
type Transaction = apiview.Transaction

// UsageReport is the answer of GET /api/account/usage.
type UsageReport = apiview.UsageReport

// TransactionOptions selects a page of the journal; zero values take the
// defaults (every type and work, no time bound, 20 entries).
type TransactionOptions struct {
	Limit    int
	Cursor   string
	Type     string
	WorkID   string
	From, To time.Time
}

// Transactions pages the caller's credit journal, newest first.
func (c *Client) Transactions(ctx context.Context, o TransactionOptions) (Page[Transaction], error) {
	q := url.Values{}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	for k, v := range map[string]string{"cursor": o.Cursor, "type": o.Type, "work_id": o.WorkID} {
		if v != "" {
			q.Set(k, v)
		}
	}
	for k, t := range map[string]time.Time{"from": o.From, "to": o.To} {
		if !t.IsZero() {
			q.Set(k, t.UTC().Format(time.RFC3339Nano))
		}
	}
	return do[Page[Transaction]](ctx, c, http.MethodGet, "/api/account/transactions"+encoded(q), nil)
}

// Usage reads the caller's usage of the UTC days from..to (inclusive;
// zero: the service's default of the last 30 days) grouped by "day",
// "model" or "key" ("" is by day).
func (c *Client) Usage(ctx context.Context, from, to time.Time, groupBy string) (UsageReport, error) {
	q := url.Values{}
	for k, t := range map[string]time.Time{"from": from, "to": to} {
		if !t.IsZero() {
			q.Set(k, t.UTC().Format(time.DateOnly))
		}
	}
	if groupBy != "" {
		q.Set("group_by", groupBy)
	}
	return do[UsageReport](ctx, c, http.MethodGet, "/api/account/usage"+encoded(q), nil)
}
