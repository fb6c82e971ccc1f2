package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mediagen-dev/mediagen/internal/api/apiview"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/store"
)

// List limits.
const (
	defaultListLimit = 20
	maxListLimit     = 100
	maxFilterLength  = 64
)

var listStatuses = []string{string(domain.StatusProcessing), string(domain.StatusCompleted), string(domain.StatusFailed), string(domain.StatusCanceled)}

// listRoute is a list route: the page of the caller's records that the
// query string asks for, each rendered by view at the time of the request.
func listRoute[T, V any](gate *Gate, list func(context.Context, store.ListQuery) (store.Page[T], error),
	view func(T, time.Time) V) Handler {
	// The caller's id is all a list needs: not the account's totals, which
	// on DynamoDB are a read of its purses and usage.
	return gate.AuthedUser(readAccess, func(ctx context.Context, req Request, userID string) (Response, error) {
		q, err := listQuery(req, userID)
		if err != nil {
			return Response{}, err
		}
		page, err := list(ctx, q)
		if err != nil {
			return Response{}, err
		}
		views := make([]V, len(page.Items))
		now := gate.now()
		for i, item := range page.Items {
			views[i] = view(item, now)
		}
		return jsonResponse(http.StatusOK, apiview.ListOf(views, page.Next)), nil
	})
}

// listQuery reads limit, cursor, status and model from the query string;
// any other parameter is refused, so a typo does not silently list all.
func listQuery(req Request, userID string) (store.ListQuery, error) {
	q := store.ListQuery{UserID: userID}
	status := queryFilter{"status", func(v string) string {
		if !slices.Contains(listStatuses, v) {
			return "status must be one of " + strings.Join(listStatuses, ", ")
		}
		q.Status = domain.Status(v)
		return ""
	}}
	var err error
	if q.Limit, q.Cursor, err = pageQuery(req, []queryFilter{status, textFilter("model", &q.Model)}, nil); err != nil {
		return store.ListQuery{}, err
	}
	return q, nil
}

// pageLimit reads a list's limit parameter: the number, or what is wrong
// with it.
func pageLimit(v string) (int, string) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxListLimit {
		return 0, fmt.Sprintf("limit must be a whole number from 1 to %d", maxListLimit)
	}
	return n, ""
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
