package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/mediagen-dev/mediagen/shared/apiview"
	"github.com/mediagen-dev/mediagen/shared/domain"
	"github.com/mediagen-dev/mediagen/shared/generation"
)

// The single-generation routes: each is a function of exactly the use case
// it runs and the gate, so a route wired without one does not compile.

// GenerateRoute is POST /api/generations/generate.
func GenerateRoute(c *generation.Creator, gate *Gate) Handler {
	return gate.AuthedUser(generateAccess, func(ctx context.Context, req Request, userID string) (Response, error) {
		body, err := jsonBody(req)
		if err != nil {
			return Response{}, err
		}
		g, err := c.Create(ctx, userID, body)
		if err != nil {
			return Response{}, err
		}
		return jsonResponse(http.StatusOK, apiview.RecordOf(g)), nil
	})
}

// GenerationStatusRoute is GET /api/generations/status/{id};
// identity-provider tokens are accepted here as the spec says.
func GenerationStatusRoute(r *generation.Reader, gate *Gate) Handler {
	return gate.AuthedUser(readAccess, func(ctx context.Context, req Request, userID string) (Response, error) {
		g, err := r.Lookup(ctx, userID, req.PathParameters["id"])
		if err != nil {
			return Response{}, err
		}
		view := apiview.GenerationStatusAt(g, time.Now())
		if view.QueuePosition, err = r.QueuePosition(ctx, g); err != nil {
			return Response{}, err
		}
		return jsonResponse(http.StatusOK, view), nil
	})
}

// GenerationCancelRoute is POST /api/generations/{id}/cancel.
func GenerationCancelRoute(c *generation.Canceler, gate *Gate) Handler {
	return gate.Authed(generateAccess, func(ctx context.Context, req Request, a domain.Account) (Response, error) {
		g, err := c.Cancel(ctx, a.UserID, req.PathParameters["id"])
		if err != nil {
			return Response{}, err
		}
		return jsonResponse(http.StatusOK, apiview.GenerationStatusAt(g, time.Now())), nil
	})
}

// GenerationsListRoute is GET /api/generations: the caller's generations,
// newest first.
func GenerationsListRoute(r *generation.Reader, gate *Gate) Handler {
	return listRoute(gate, r.List, func(g domain.Generation, now time.Time) apiview.GenerationStatus {
		return apiview.GenerationStatusAt(g, now)
	})
}

// GenerationEstimateRoute is POST /api/generations/estimate: the price of a
// generate body, with nothing held, recorded or submitted.
func GenerationEstimateRoute(est *generation.Estimator, gate *Gate) Handler {
	return gate.Authed(estimateAccess, func(ctx context.Context, req Request, a domain.Account) (Response, error) {
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
