package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/mediagen-dev/mediagen/internal/api/apiview"
	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/longform"
	"github.com/mediagen-dev/mediagen/internal/core/pricing"

	"github.com/shopspring/decimal"
)

// The long-form video routes: each is a function of exactly the use case
// it runs and the gate.

// LongVideoEstimateRoute is POST /api/long-story/videos/estimate: it needs
// the prices and nothing else.
func LongVideoEstimateRoute(prices *pricing.Table, gate *Gate) Handler {
	return gate.Authed(estimateAccess, func(ctx context.Context, req Request, a domain.Account) (Response, error) {
		body, err := jsonBody(req)
		if err != nil {
			return Response{}, err
		}
		q, err := longform.ParseEstimate(prices, body)
		if err != nil {
			return Response{}, err
		}
		return jsonResponse(http.StatusOK, longVideoEstimateOf(q)), nil
	})
}

// LongVideoCreateRoute is POST /api/long-story/videos.
func LongVideoCreateRoute(c *longform.Creator, gate *Gate) Handler {
	return gate.AuthedUser(generateAccess, func(ctx context.Context, req Request, userID string) (Response, error) {
		body, err := jsonBody(req)
		if err != nil {
			return Response{}, err
		}
		v, err := c.Create(ctx, userID, body)
		if err != nil {
			return Response{}, err
		}
		return jsonResponse(http.StatusOK, apiview.LongVideoCreatedOf(v, longform.SceneSeconds)), nil
	})
}

// LongVideoStatusRoute is GET /api/long-story/videos/{videoId}; like the
// generation status route it also accepts identity-provider tokens.
func LongVideoStatusRoute(r *longform.Reader, gate *Gate) Handler {
	return gate.AuthedUser(readAccess, func(ctx context.Context, req Request, userID string) (Response, error) {
		v, err := r.Lookup(ctx, userID, req.PathParameters["videoId"])
		if err != nil {
			return Response{}, err
		}
		return jsonResponse(http.StatusOK, longVideoStatusAt(v, gate.now())), nil
	})
}

// LongVideoCancelRoute is POST /api/long-story/videos/{videoId}/cancel.
func LongVideoCancelRoute(c *longform.Canceler, gate *Gate) Handler {
	return gate.Authed(generateAccess, func(ctx context.Context, req Request, a domain.Account) (Response, error) {
		v, err := c.Cancel(ctx, a.UserID, req.PathParameters["videoId"])
		if err != nil {
			return Response{}, err
		}
		return jsonResponse(http.StatusOK, longVideoStatusAt(v, gate.now())), nil
	})
}

// LongVideoRegenerateRoute is POST
// /api/long-story/videos/{videoId}/scenes/{n}/regenerate, body optional
// {"prompt", "narration"}: it holds that scene's price and starts its
// render, and answers 202 with the status view (revision, regenerating);
// the video stays completed with its final video until the new one is
// ready.
func LongVideoRegenerateRoute(r *longform.Regenerator, gate *Gate) Handler {
	return gate.AuthedUser(generateAccess, func(ctx context.Context, req Request, userID string) (Response, error) {
		body, err := jsonBody(req)
		if err != nil {
			return Response{}, err
		}
		v, err := r.Regenerate(ctx, userID, req.PathParameters["videoId"], req.PathParameters["n"], body)
		if err != nil {
			return Response{}, err
		}
		return jsonResponse(http.StatusAccepted, longVideoStatusAt(v, gate.now())), nil
	})
}

// LongVideoOutputDeleteRoute is DELETE
// /api/long-story/videos/{videoId}/output: it deletes the video's stored
// files (the final video, the scenes' clips and the narration) and answers
// its status view, with data_removed; a repeat answers the same.
func LongVideoOutputDeleteRoute(r *longform.OutputRemover, gate *Gate) Handler {
	return gate.AuthedUser(generateAccess, func(ctx context.Context, req Request, userID string) (Response, error) {
		v, err := r.RemoveOutput(ctx, userID, req.PathParameters["videoId"])
		if err != nil {
			return Response{}, err
		}
		return jsonResponse(http.StatusOK, longVideoStatusAt(v, gate.now())), nil
	})
}

// LongVideosListRoute is GET /api/long-story/videos: the caller's videos,
// newest first.
func LongVideosListRoute(r *longform.Reader, gate *Gate) Handler {
	return listRoute(gate, r.List, longVideoStatusAt)
}

// longVideoStatusAt is a video's status view at now, with the studio it
// is made with (its defaults written out): the status routes', the list's
// and the long_video.* webhooks' one view.
func longVideoStatusAt(v domain.LongVideo, now time.Time) apiview.LongVideoStatus {
	return apiview.LongVideoStatusAt(v, longform.Applied(v), now)
}

// sceneNoteFormat explains the scenes' length in an estimate.
const sceneNoteFormat = "Each scene is about %d seconds: it is generated at the model's clip length nearest to %d s and fitted to exactly %d s."

// longVideoEstimateOf renders a quote: total = per_second × duration, as
// the spec's sample shows, when one model makes every scene (with scenes'
// own models, per_second is their mean).
func longVideoEstimateOf(q longform.Quote) apiview.LongVideoEstimate {
	num := func(d decimal.Decimal) json.Number { return json.Number(d.String()) }
	return apiview.LongVideoEstimate{
		Success: true, Model: q.Model, Duration: q.Duration, SceneCountMode: true,
		SceneInfo: apiview.SceneInfo{TotalScenes: q.SceneCount, DurationPerScene: longform.SceneSeconds,
			SceneDurationNote: fmt.Sprintf(sceneNoteFormat, longform.SceneSeconds, longform.SceneSeconds, longform.SceneSeconds)},
		Credits: apiview.EstimateCredits{Required: num(q.Credits), PerSecond: num(q.CreditsPerSecond), Total: num(q.Credits)},
		Pricing: apiview.EstimatePricing{
			BaseCostUSDPerSecond: num(q.USDPerSecond),
			TotalBaseCostUSD:     num(q.TotalUSD),
			ProfitMargin:         q.ProfitMarginPercent.String() + "%",
		},
	}
}

// LongVideoVoicesRoute is GET /api/long-story/voices?language_code=xx: the
// voices a long video's narration may be read in.
func LongVideoVoicesRoute(l *longform.VoiceLister, gate *Gate) Handler {
	return gate.Authed(estimateAccess, func(ctx context.Context, req Request, _ domain.Account) (Response, error) {
		var p catalog.Problems
		for name := range req.QueryStringParameters {
			if name != "language_code" {
				p.Add(name, "is not a query parameter of this route; it takes language_code only")
			}
		}
		if err := p.Err(); err != nil {
			return Response{}, err
		}
		voices, err := l.List(ctx, req.QueryStringParameters["language_code"])
		if err != nil {
			return Response{}, err
		}
		return jsonResponse(http.StatusOK, map[string]any{"voices": voices}), nil
	})
}
