package generation

import (
	"fmt"

	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/pricing"
)

// Estimator validates and prices generate requests: the estimate route's
// use case, and the first step of Create. It needs the prices and nothing
// else, so the estimate route is wired with no store, upstream or queue.
type Estimator struct {
	prices     *pricing.Table
	validation catalog.Options
}

// NewEstimator prices by prices and validates with validation.
func NewEstimator(prices *pricing.Table, validation catalog.Options) *Estimator {
	return &Estimator{prices: prices, validation: validation}
}

// Estimate validates and prices a generate request without holding,
// recording or submitting anything.
func (e *Estimator) Estimate(body []byte) (catalog.Request, pricing.Quote, error) {
	req, err := catalog.ParseGenerate(body, e.validation)
	if err != nil {
		return catalog.Request{}, pricing.Quote{}, err
	}
	quote, err := e.prices.Quote(req)
	if err != nil {
		return catalog.Request{}, pricing.Quote{}, fmt.Errorf("price %s: %w", req.Variant.Version, err)
	}
	return req, quote, nil
}
