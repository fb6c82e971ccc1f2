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

// LongStories are the long-form video routes.
type LongStories struct {
	Service *longstory.Service
	Gate    *Gate
}

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

// Create is POST /api/long-story/videos.
func (r *LongStories) Create() Handler {
	return r.Gate.AuthedUser(false, func(ctx context.Context, req Request, userID string) (Response, error) {
		body, err := jsonBody(req)
		if err != nil {
			return Response{}, err
		}
		v, err := r.Service.Create(ctx, userID, body)
		if err != nil {
			return Response{}, err
		}
		return jsonResponse(http.StatusOK, apiview.LongVideoCreatedOf(v, longstory.SceneSeconds)), nil
	})
}

// Status is GET /api/long-story/videos/{videoId}; like the generation status
// route it also accepts identity-provider tokens.
func (r *LongStories) Status() Handler {
	return r.Gate.AuthedUser(true, func(ctx context.Context, req Request, userID string) (Response, error) {
		v, err := r.Service.Lookup(ctx, userID, req.PathParameters["videoId"])
		if err != nil {
			return Response{}, err
		}
		return jsonResponse(http.StatusOK, apiview.LongVideoStatusOf(v)), nil
	})
}

// Cancel is POST /api/long-story/videos/{videoId}/cancel.
func (r *LongStories) Cancel() Handler {
	return r.Gate.Authed(false, func(ctx context.Context, req Request, a domain.Account) (Response, error) {
		v, err := r.Service.Cancel(ctx, a.UserID, req.PathParameters["videoId"])
		if err != nil {
			return Response{}, err
		}
		return jsonResponse(http.StatusOK, apiview.LongVideoStatusOf(v)), nil
	})
}

// List is GET /api/long-story/videos: the caller's videos, newest first.
func (r *LongStories) List() Handler {
	return listRoute(r.Gate, r.Service.List, func(v domain.LongVideo, _ time.Time) apiview.LongVideoStatus {
		return apiview.LongVideoStatusOf(v)
	})
}
