package generation

import (
	"fmt"

	"github.com/mediagen-dev/mediagen/shared/catalog"
	"github.com/mediagen-dev/mediagen/shared/pricing"
)

// Estimate validates and prices a generate request without holding,
// recording or submitting anything.
func (s *Service) Estimate(body []byte) (catalog.Request, pricing.Quote, error) {
	req, err := catalog.ParseGenerate(body, s.Validation)
	if err != nil {
		return catalog.Request{}, pricing.Quote{}, err
	}
	quote, err := s.Prices.Quote(req)
	if err != nil {
		return catalog.Request{}, pricing.Quote{}, fmt.Errorf("price %s: %w", req.Variant.Version, err)
	}
	return req, quote, nil
}
