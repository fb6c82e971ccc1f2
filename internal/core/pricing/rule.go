package pricing

import (
	"fmt"
	"maps"

	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// Rule is a variant's price rule in credits (margin included, unrounded):
// the price of a request is CreditsPerUnit of the first case whose every
// When field equals the request's value (defaults included), else the
// rule's own, times the units (seconds of video, images, or one video),
// rounded up to 0.01 credit.
type Rule struct {
	Basis basis
	// Unit is what one CreditsPerUnit buys: "second", "image" or "video".
	Unit           string
	CreditsPerUnit decimal.Decimal
	Cases          []ruleCase
}

// RuleCase is one conditional price of a Rule.
type ruleCase struct {
	When           map[string]string
	CreditsPerUnit decimal.Decimal
}

// Unit names of a Rule.
const (
	unitSecond = "second"
	unitImage  = "image"
	unitVideo  = "video"
)

// Rule is the price rule of a variant in credits.
func (t *Table) Rule(v catalog.Variant) (Rule, error) {
	rl, ok := t.rules[v.Version]
	if !ok {
		return Rule{}, fmt.Errorf("%w: no rule for %s", errInvalidPriceFile, v.Version)
	}
	out := Rule{Basis: rl.basis, Unit: unitVideo, CreditsPerUnit: t.CreditsFromUSD(rl.usd)}
	switch {
	case rl.basis == PerSecond:
		out.Unit = unitSecond
	case v.Kind == domain.MediaImage: // per_image, or per_generation charged per image
		out.Unit = unitImage
	}
	for _, c := range rl.cases {
		out.Cases = append(out.Cases, ruleCase{When: maps.Clone(c.when), CreditsPerUnit: t.CreditsFromUSD(c.usd)})
	}
	return out, nil
}
