package httpapi

import (
	"context"
	"net/http"

	"github.com/mediagen-dev/mediagen/shared/accounts"
	"github.com/mediagen-dev/mediagen/shared/apiview"
	"github.com/mediagen-dev/mediagen/shared/domain"
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
// included, newest first, without their secrets.
func KeysListRoute(l *accounts.KeyLister, gate *Gate) Handler {
	return gate.AuthedUser(adminAccess, func(ctx context.Context, req Request, userID string) (Response, error) {
		keys, err := l.List(ctx, userID)
		if err != nil {
			return Response{}, err
		}
		out := apiview.KeyList{Data: make([]apiview.ListedKey, len(keys))}
		for i, k := range keys {
			out.Data[i] = apiview.ListedKeyOf(k.APIKey, k.SpentToday)
		}
		return jsonResponse(http.StatusOK, out), nil
	})
}

// KeyRevokeRoute is DELETE /api/account/keys/{prefix}: the key stops
// working (within the authorizer cache's TTL in AWS).
func KeyRevokeRoute(r *accounts.KeyRevoker, gate *Gate) Handler {
	return gate.AuthedUser(adminAccess, func(ctx context.Context, req Request, userID string) (Response, error) {
		prefix := req.PathParameters["prefix"]
		at, err := r.Revoke(ctx, userID, prefix)
		if err != nil {
			return Response{}, err
		}
		return jsonResponse(http.StatusOK, apiview.RevokedKeyOf(prefix, at)), nil
	})
}
