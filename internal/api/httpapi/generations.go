package httpapi

import (
	"context"
	"net/http"

	"github.com/mediagen-dev/mediagen/internal/api/apiview"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/generation"
)

// The single-generation routes: each is a function of exactly the use case
// it runs and the gate, so a route wired without one does not compile.

// GenerateRoute is POST /api/generations/generate. With Prefer: wait it
// answers once the job is final, or when the wait (capped by
// generation.WaitCap) is over, with the record as it then is.
func GenerateRoute(c *generation.Creator, gate *Gate) Handler {
	return gate.AuthedUser(generateAccess, func(ctx context.Context, req Request, userID string) (Response, error) {
		body, err := jsonBody(req)
		if err != nil {
			return Response{}, err
		}
		wait, err := preferWait(header(req, preferHeader))
		if err != nil {
			return Response{}, err
		}
		g, err := c.CreateAndWait(ctx, userID, body, wait)
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
		view := apiview.GenerationStatusAt(g, gate.now())
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
		return jsonResponse(http.StatusOK, apiview.GenerationStatusAt(g, gate.now())), nil
	})
}

// GenerationOutputDeleteRoute is DELETE /api/generations/{id}/output: it
// deletes the generation's stored files and answers its status view, with
// data_removed; a repeat answers the same.
func GenerationOutputDeleteRoute(r *generation.OutputRemover, gate *Gate) Handler {
	return gate.AuthedUser(generateAccess, func(ctx context.Context, req Request, userID string) (Response, error) {
		g, err := r.RemoveOutput(ctx, userID, req.PathParameters["id"])
		if err != nil {
			return Response{}, err
		}
		return jsonResponse(http.StatusOK, apiview.GenerationStatusAt(g, gate.now())), nil
	})
}

// GenerationsListRoute is GET /api/generations: the caller's generations,
// newest first.
func GenerationsListRoute(r *generation.Reader, gate *Gate) Handler {
	return listRoute(gate, r.List, apiview.GenerationStatusAt)
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
