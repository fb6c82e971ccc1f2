package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/api/apiview"
	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/pricing"
)

// Models is the public catalog route: no credentials, no rate limit of an
// account (the gateway's throttling applies), nothing but the catalog and
// the price file is read.
type Models struct {
	Prices *pricing.Table
	Log    *slog.Logger
}

// Catalog renders every variant in the catalog's order.
func Catalog(prices *pricing.Table) (apiview.ModelList, error) {
	out := apiview.ModelList{Models: []apiview.Model{}}
	for _, v := range catalog.All() {
		rule, err := prices.Rule(v)
		if err != nil {
			return apiview.ModelList{}, fmt.Errorf("catalog: %w", err)
		}
		schema, err := rawJSON(v.InputSchema())
		if err != nil {
			return apiview.ModelList{}, fmt.Errorf("catalog: input schema of %s: %w", v.Version, err)
		}
		p := apiview.Price{Basis: string(rule.Basis), Unit: rule.Unit, CreditsPerUnit: formatRate(rule.CreditsPerUnit)}
		for _, c := range rule.Cases {
			p.Cases = append(p.Cases, apiview.PriceCase{When: c.When, CreditsPerUnit: formatRate(c.CreditsPerUnit)})
		}
		if q, err := prices.QuoteFor(v, nil, 1); err == nil {
			p.CreditsAtDefaults = domain.FormatCredits(q.Credits)
		}
		out.Models = append(out.Models, apiview.Model{Model: v.Model, Version: v.Version, Kind: string(v.Kind),
			InputSchema: schema, Price: p, TypicalSeconds: int(v.TypicalDuration().Seconds())})
	}
	return out, nil
}

// rawJSON encodes v as jsonResponse does, with <, > and & kept as they
// are, so that a view can carry it as raw JSON.
func rawJSON(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
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
