package httpapi

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/mediagen-dev/mediagen/internal/api/apiview"
	"github.com/mediagen-dev/mediagen/internal/core/accounts"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// The key routes: a key's holder manages the account's keys with a key of
// the admin scope, or an identity-provider token.

// KeyCreateRoute is POST /api/account/keys. It does not honour
// Idempotency-Key: a replay would answer the key again from the
// idempotency table, and the service stores no key, only its hash. A
// client that lost an answer lists the keys and revokes the one it never
// received.
func KeyCreateRoute(c *accounts.KeyCreator, gate *Gate) Handler {
	return gate.withoutIdempotency().AuthedUser(adminAccess, func(ctx context.Context, req Request, userID string) (Response, error) {
		body, err := jsonBody(req)
		if err != nil {
			return Response{}, err
		}
		in, err := accounts.ParseNewKey(body)
		if err != nil {
			return Response{}, err
		}
		caller, _ := domain.CallerFrom(ctx)
		k, plain, err := c.Create(ctx, userID, caller, in)
		if err != nil {
			return Response{}, err
		}
		return jsonResponse(http.StatusCreated, apiview.CreatedKey{Key: apiview.KeyOf(k), APIKey: plain}), nil
	})
}

// KeysListRoute is GET /api/account/keys: the account's keys, revoked ones
// included, newest first, without their secrets, in the cursor pages of
// the other lists (limit, cursor).
func KeysListRoute(l *accounts.KeyLister, gate *Gate) Handler {
	return gate.AuthedUser(adminAccess, func(ctx context.Context, req Request, userID string) (Response, error) {
		limit, cursor, err := pageQuery(req, nil, nil)
		if err != nil {
			return Response{}, err
		}
		page, err := l.List(ctx, userID, limit, cursor)
		if err != nil {
			return Response{}, err
		}
		views := make([]apiview.ListedKey, len(page.Items))
		for i, k := range page.Items {
			views[i] = apiview.ListedKeyOf(k.APIKey, k.SpentToday)
		}
		return jsonResponse(http.StatusOK, apiview.ListOf(views, page.Next)), nil
	})
}

// pageQuery reads a list's limit and cursor from the query string, and
// filters: the parameters a list takes beyond them, each by its name. Any
// other parameter is refused, so a typo does not silently list all;
// together, when set, checks the filters read as a whole (a filter that
// did not parse keeps its zero value). Every problem is named in one 400.
func pageQuery(req Request, filters []queryFilter, together func() string) (limit int, cursor string, err error) {
	limit = defaultListLimit
	allowed := []string{"limit", "cursor"}
	for _, f := range filters {
		allowed = append(allowed, f.name)
	}
	var problems []string
	for _, k := range slices.Sorted(maps.Keys(req.QueryStringParameters)) {
		v := req.QueryStringParameters[k]
		i := slices.IndexFunc(filters, func(f queryFilter) bool { return f.name == k })
		switch {
		case k == "limit":
			n, problem := pageLimit(v)
			if problem != "" {
				problems = append(problems, problem)
				continue
			}
			limit = n
		case k == "cursor":
			cursor = v
		case i >= 0:
			if problem := filters[i].read(v); problem != "" {
				problems = append(problems, problem)
			}
		default:
			problems = append(problems, fmt.Sprintf("unknown query parameter %q (allowed: %s)", truncate(k, 32), strings.Join(allowed, ", ")))
		}
	}
	if together != nil {
		if problem := together(); problem != "" {
			problems = append(problems, problem)
		}
	}
	if len(problems) > 0 {
		return 0, "", &Error{Status: http.StatusBadRequest, Code: "invalid_request", Message: strings.Join(problems, "; ")}
	}
	return limit, cursor, nil
}

// queryFilter is a list's query parameter beyond limit and cursor: read
// takes its value and says what is wrong with it ("" when nothing is).
type queryFilter struct {
	name string
	read func(v string) (problem string)
}

// textFilter is a filter on a text of 1 to maxFilterLength characters.
func textFilter(name string, to *string) queryFilter {
	return queryFilter{name, func(v string) string {
		if v == "" || len(v) > maxFilterLength {
			return fmt.Sprintf("%s must be 1 to %d characters", name, maxFilterLength)
		}
		*to = v
		return ""
	}}
}

// KeyRevokeRoute is DELETE /api/account/keys/{prefix}: the key and the keys
// below it stop working (within the authorizer cache's TTL in AWS). A key
// revokes only itself and the keys below it; an owner's key any.
func KeyRevokeRoute(r *accounts.KeyRevoker, gate *Gate) Handler {
	return gate.AuthedUser(adminAccess, func(ctx context.Context, req Request, userID string) (Response, error) {
		prefix := req.PathParameters["prefix"]
		caller, _ := domain.CallerFrom(ctx)
		done, err := r.Revoke(ctx, userID, caller, prefix)
		if err != nil {
			return Response{}, err
		}
		return jsonResponse(http.StatusOK, apiview.RevokedKeyOf(prefix, done.At, done.Below)), nil
	})
}
