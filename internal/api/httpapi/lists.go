package httpapi

import (
	"context"
	"fmt"
	"maps"
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
	DefaultListLimit = 20
	MaxListLimit     = 100
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
	q := store.ListQuery{UserID: userID, Limit: DefaultListLimit}
	var problems []string
	for _, k := range slices.Sorted(maps.Keys(req.QueryStringParameters)) {
		v := req.QueryStringParameters[k]
		switch k {
		case "limit":
			n, problem := pageLimit(v)
			if problem != "" {
				problems = append(problems, problem)
				continue
			}
			q.Limit = n
		case "cursor":
			q.Cursor = v
		case "status":
			if !slices.Contains(listStatuses, v) {
				problems = append(problems, "status must be one of "+strings.Join(listStatuses, ", "))
				continue
			}
			q.Status = domain.Status(v)
		case "model":
			if v == "" || len(v) > maxFilterLength {
				problems = append(problems, fmt.Sprintf("model must be 1 to %d characters", maxFilterLength))
				continue
			}
			q.Model = v
		default:
			problems = append(problems, fmt.Sprintf("unknown query parameter %q (allowed: limit, cursor, status, model)", truncate(k, 32)))
		}
	}
	if len(problems) > 0 {
		return store.ListQuery{}, &Error{Status: http.StatusBadRequest, Code: "invalid_request", Message: strings.Join(problems, "; ")}
	}
	return q, nil
}

// pageLimit reads a list's limit parameter: the number, or what is wrong
// with it.
func pageLimit(v string) (int, string) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxListLimit {
		return 0, fmt.Sprintf("limit must be a whole number from 1 to %d", MaxListLimit)
	}
	return n, ""
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
