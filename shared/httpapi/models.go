package httpapi

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/shared/catalog"
	"github.com/mediagen-dev/mediagen/shared/domain"
	"github.com/mediagen-dev/mediagen/shared/pricing"
)

// Models is the public catalog route: no credentials, no rate limit of an
// account (the gateway's throttling applies), nothing but the catalog and
// the price file is read.
type Models struct {
	Prices *pricing.Table
	Log    *slog.Logger
}

// ModelList is the answer of GET /api/models.
type ModelList struct {
	Models []ModelView `json:"models"`
}

// ModelView is one variant: its kind, the JSON Schema of its input (built
// from the fields the validator checks) and its price rule in credits.
type ModelView struct {
	Model       string         `json:"model"`
	Version     string         `json:"version"`
	Kind        string         `json:"kind"`
	InputSchema map[string]any `json:"input_schema"`
	Price       PriceView      `json:"price"`
}

// PriceView is a price rule in credits. A request costs credits_per_unit of
// the first case whose every "when" field has the request's value (defaults
// included), else the rule's own, times its units, rounded up to 0.01.
type PriceView struct {
	// Basis is per_second, per_image or per_generation (for image variants
	// charged per image).
	Basis string `json:"basis"`
	// Unit is what one credits_per_unit buys: second, image or video.
	Unit           string          `json:"unit"`
	CreditsPerUnit string          `json:"credits_per_unit"`
	Cases          []PriceCaseView `json:"cases,omitempty"`
	// CreditsAtDefaults is the price of one video, or one image, with every
	// option at its default; absent when a required option has no default
	// (beta-2's seconds).
	CreditsAtDefaults string `json:"credits_at_defaults,omitempty"`
}

// PriceCaseView is one conditional price.
type PriceCaseView struct {
	When           map[string]string `json:"when"`
	CreditsPerUnit string            `json:"credits_per_unit"`
}

// Catalog renders every variant in the catalog's order.
func Catalog(prices *pricing.Table) (ModelList, error) {
	out := ModelList{Models: []ModelView{}}
	for _, v := range catalog.All() {
		rule, err := prices.Rule(v)
		if err != nil {
			return ModelList{}, fmt.Errorf("catalog: %w", err)
		}
		p := PriceView{Basis: string(rule.Basis), Unit: rule.Unit, CreditsPerUnit: formatRate(rule.CreditsPerUnit)}
		for _, c := range rule.Cases {
			p.Cases = append(p.Cases, PriceCaseView{When: c.When, CreditsPerUnit: formatRate(c.CreditsPerUnit)})
		}
		if q, err := prices.QuoteFor(v, nil, 1); err == nil {
			p.CreditsAtDefaults = domain.FormatCredits(q.Credits)
		}
		out.Models = append(out.Models, ModelView{Model: v.Model, Version: v.Version, Kind: string(v.Kind),
			InputSchema: v.InputSchema(), Price: p})
	}
	return out, nil
}

// formatRate shows a per-unit price with two places, or all of its places
// when it has more (a rate is not rounded; only a request's total is).
func formatRate(d decimal.Decimal) string {
	if d.Equal(d.Truncate(domain.CreditPlaces)) {
		return domain.FormatCredits(d)
	}
	return d.String()
}

// List is GET /api/models.
func (m *Models) List() Handler {
	return func(ctx context.Context, req Request) (Response, error) {
		list, err := Catalog(m.Prices)
		if err != nil {
			return errorResponse(ctx, domain.Logger(m.Log).With("request_id", requestID(req), "route", req.RouteKey), req, err), nil
		}
		resp := jsonResponse(http.StatusOK, list)
		// The catalog changes only with a deployment.
		resp.Headers["Cache-Control"] = "public, max-age=300"
		return resp, nil
	}
}
