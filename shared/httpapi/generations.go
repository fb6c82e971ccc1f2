package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/mediagen-dev/mediagen/shared/apiview"
	"github.com/mediagen-dev/mediagen/shared/domain"
	"github.com/mediagen-dev/mediagen/shared/generation"
)

// Generations are the single-generation routes.
type Generations struct {
	Service *generation.Service
	Gate    *Gate
}

// Generate is POST /api/generations/generate.
func (r *Generations) Generate() Handler {
	return r.Gate.AuthedUser(false, func(ctx context.Context, req Request, userID string) (Response, error) {
		body, err := jsonBody(req)
		if err != nil {
			return Response{}, err
		}
		g, err := r.Service.Create(ctx, userID, body)
		if err != nil {
			return Response{}, err
		}
		return jsonResponse(http.StatusOK, apiview.RecordOf(g)), nil
	})
}

// Status is GET /api/generations/status/{id}; identity-provider tokens are
// accepted here as the spec says.
func (r *Generations) Status() Handler {
	return r.Gate.AuthedUser(true, func(ctx context.Context, req Request, userID string) (Response, error) {
		g, err := r.Service.Lookup(ctx, userID, req.PathParameters["id"])
		if err != nil {
			return Response{}, err
		}
		view := apiview.GenerationStatusAt(g, time.Now())
		if view.QueuePosition, err = r.Service.QueuePosition(ctx, g); err != nil {
			return Response{}, err
		}
		return jsonResponse(http.StatusOK, view), nil
	})
}

// Cancel is POST /api/generations/{id}/cancel.
func (r *Generations) Cancel() Handler {
	return r.Gate.Authed(false, func(ctx context.Context, req Request, a domain.Account) (Response, error) {
		g, err := r.Service.Cancel(ctx, a.UserID, req.PathParameters["id"])
		if err != nil {
			return Response{}, err
		}
		return jsonResponse(http.StatusOK, apiview.GenerationStatusAt(g, time.Now())), nil
	})
}

// List is GET /api/generations: the caller's generations, newest first.
func (r *Generations) List() Handler {
	return listRoute(r.Gate, r.Service.List, func(g domain.Generation, now time.Time) apiview.GenerationStatus {
		return apiview.GenerationStatusAt(g, now)
	})
}

// GenerationEstimateRoute is POST /api/generations/estimate: the price of a
// generate body, with nothing held, recorded or submitted.
func GenerationEstimateRoute(est *generation.Estimator, gate *Gate) Handler {
	return gate.Authed(false, func(ctx context.Context, req Request, a domain.Account) (Response, error) {
		body, err := jsonBody(req)
		if err != nil {
			return Response{}, err
		}
		parsed, quote, err := est.Estimate(body)
		if err != nil {
			return Response{}, err
		}
		return jsonResponse(http.StatusOK, apiview.GenerationEstimate{Model: parsed.Variant.Model, ModelVersion: parsed.Variant.Version,
			Kind: string(parsed.Variant.Kind), ImageCount: parsed.ImageCount, Credits: domain.FormatCredits(quote.Credits)}), nil
	})
}
