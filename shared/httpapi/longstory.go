package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/mediagen-dev/mediagen/shared/apiview"
	"github.com/mediagen-dev/mediagen/shared/domain"
	"github.com/mediagen-dev/mediagen/shared/longstory"
	"github.com/mediagen-dev/mediagen/shared/pricing"
)

// The long-form video routes: each is a function of exactly the use case
// it runs and the gate.

// LongVideoEstimateRoute is POST /api/long-story/videos/estimate: it needs
// the prices and nothing else.
func LongVideoEstimateRoute(prices *pricing.Table, gate *Gate) Handler {
	return gate.Authed(false, func(ctx context.Context, req Request, a domain.Account) (Response, error) {
		body, err := jsonBody(req)
		if err != nil {
			return Response{}, err
		}
		e, err := longstory.ParseEstimate(prices, body)
		if err != nil {
			return Response{}, err
		}
		return jsonResponse(http.StatusOK, e), nil
	})
}

// LongVideoCreateRoute is POST /api/long-story/videos.
func LongVideoCreateRoute(c *longstory.Creator, gate *Gate) Handler {
	return gate.AuthedUser(false, func(ctx context.Context, req Request, userID string) (Response, error) {
		body, err := jsonBody(req)
		if err != nil {
			return Response{}, err
		}
		v, err := c.Create(ctx, userID, body)
		if err != nil {
			return Response{}, err
		}
		return jsonResponse(http.StatusOK, apiview.LongVideoCreatedOf(v, longstory.SceneSeconds)), nil
	})
}

// LongVideoStatusRoute is GET /api/long-story/videos/{videoId}; like the
// generation status route it also accepts identity-provider tokens.
func LongVideoStatusRoute(r *longstory.Reader, gate *Gate) Handler {
	return gate.AuthedUser(true, func(ctx context.Context, req Request, userID string) (Response, error) {
		v, err := r.Lookup(ctx, userID, req.PathParameters["videoId"])
		if err != nil {
			return Response{}, err
		}
		return jsonResponse(http.StatusOK, apiview.LongVideoStatusOf(v)), nil
	})
}

// LongVideoCancelRoute is POST /api/long-story/videos/{videoId}/cancel.
func LongVideoCancelRoute(c *longstory.Canceler, gate *Gate) Handler {
	return gate.Authed(false, func(ctx context.Context, req Request, a domain.Account) (Response, error) {
		v, err := c.Cancel(ctx, a.UserID, req.PathParameters["videoId"])
		if err != nil {
			return Response{}, err
		}
		return jsonResponse(http.StatusOK, apiview.LongVideoStatusOf(v)), nil
	})
}

// LongVideosListRoute is GET /api/long-story/videos: the caller's videos,
// newest first.
func LongVideosListRoute(r *longstory.Reader, gate *Gate) Handler {
	return listRoute(gate, r.List, func(v domain.LongVideo, _ time.Time) apiview.LongVideoStatus {
		return apiview.LongVideoStatusOf(v)
	})
}
