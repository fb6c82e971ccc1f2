// Package pricing prices generations from one price file: each variant's
// base USD rule, the credits per USD and the profit margin. All arithmetic is
// decimal; credits are rounded up to two places only at the end.
package pricing

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// EnvPriceFile names the environment variable that points at a price file
// to use instead of the embedded default.
const envPriceFile = "PRICE_FILE"

//go:embed prices.json
var defaultPrices []byte

// ErrInvalidPriceFile is returned for a price file that cannot be used.
var errInvalidPriceFile = errors.New("invalid price file")

// Basis says what a variant's unit price is multiplied by.
type basis string

const (
	// PerSecond multiplies by the video duration the request asks for.
	PerSecond basis = "per_second"
	// PerGeneration is one price per video. Image variants are charged per
	// image (ARCHITECTURE: image_count), so for them it is per image too.
	perGeneration basis = "per_generation"
	// PerImage multiplies by the image count.
	perImage basis = "per_image"
)

// Table is a loaded, validated price file. It is immutable.
type Table struct {
	creditsPerUSD decimal.Decimal
	marginPercent decimal.Decimal
	rules         map[string]rule // by model_version
}

type rule struct {
	basis basis
	usd   decimal.Decimal
	cases []priceCase
}

type priceCase struct {
	when map[string]string
	usd  decimal.Decimal
}

// Quote is the price of one request.
type Quote struct {
	BaseUSD decimal.Decimal
	// Credits is BaseUSD with margin, in credits, rounded up to 0.01.
	Credits decimal.Decimal
}

// file is the JSON shape of a price file.
type file struct {
	Comment             string                  `json:"comment"`
	CreditsPerUSD       string                  `json:"credits_per_usd"`
	ProfitMarginPercent string                  `json:"profit_margin_percent"`
	Variants            map[string]variantPrice `json:"variants"`
}

type variantPrice struct {
	Basis basis  `json:"basis"`
	USD   string `json:"usd"`
	Cases []struct {
		When map[string]string `json:"when"`
		USD  string            `json:"usd"`
	} `json:"cases"`
}

var defaultTable = sync.OnceValue(func() *Table {
	t, err := load(bytes.NewReader(defaultPrices))
	if err != nil {
		panic(fmt.Sprintf("embedded prices.json: %v", err)) // a build defect; tests catch it
	}
	return t
})

// Default is the table of the embedded prices.json.
func Default() *Table { return defaultTable() }

// FromEnv loads the file named by PRICE_FILE, or returns Default when the
// variable is empty. getenv is os.Getenv outside tests.
func fromEnv(getenv func(string) string) (*Table, error) {
	if path := getenv(envPriceFile); path != "" {
		return LoadFile(path)
	}
	return Default(), nil
}

// LoadFile reads and validates a price file.
func LoadFile(path string) (*Table, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load price file: %w", err)
	}
	defer f.Close()
	t, err := load(f)
	if err != nil {
		return nil, fmt.Errorf("load price file %s: %w", path, err)
	}
	return t, nil
}

// Load reads a price file and checks it against the catalog: every variant
// has a rule and no unknown one does, amounts are non-negative decimals, the
// basis suits the variant's kind, and cases name real fields and values.
// All problems are reported together.
func load(r io.Reader) (*Table, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var f file
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%w: %v", errInvalidPriceFile, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: data after the JSON object", errInvalidPriceFile)
	}

	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	amount := func(where, s string) decimal.Decimal {
		d, err := decimal.NewFromString(s)
		switch {
		case err != nil:
			bad("%s: %q is not a decimal number", where, s)
		case d.IsNegative():
			bad("%s: %s is negative", where, s)
		}
		return d
	}
	positive := func(where, s string) decimal.Decimal {
		if d, err := decimal.NewFromString(s); err == nil && !d.IsPositive() {
			bad("%s: must be greater than 0, got %s", where, s)
			return d
		}
		return amount(where, s)
	}
	t := &Table{
		creditsPerUSD: positive("credits_per_usd", f.CreditsPerUSD),
		marginPercent: amount("profit_margin_percent", f.ProfitMarginPercent),
		rules:         make(map[string]rule, len(f.Variants)),
	}

	for _, v := range catalog.All() {
		if _, ok := f.Variants[v.Version]; !ok {
			bad("variants: no price for %s (%s)", v.Version, v.Model)
		}
	}
	for _, version := range slices.Sorted(maps.Keys(f.Variants)) {
		vp := f.Variants[version]
		where := "variants." + version
		v, err := catalog.LookupVersion(version)
		if err != nil {
			bad("%s: not a variant of the catalog", where)
			continue
		}
		switch {
		case vp.Basis == PerSecond && v.Kind != domain.MediaVideo:
			bad("%s.basis: per_second needs a video variant", where)
		case vp.Basis == perImage && v.Kind != domain.MediaImage:
			bad("%s.basis: per_image needs an image variant", where)
		case vp.Basis != PerSecond && vp.Basis != perImage && vp.Basis != perGeneration:
			bad("%s.basis: %q is not per_second, per_generation or per_image", where, vp.Basis)
		}
		rl := rule{basis: vp.Basis, usd: amount(where+".usd", vp.USD)}
		for i, c := range vp.Cases {
			cw := fmt.Sprintf("%s.cases[%d]", where, i)
			if len(c.When) == 0 {
				bad("%s.when: must name at least one field", cw)
			}
			for _, name := range slices.Sorted(maps.Keys(c.When)) {
				if msg := conditionProblem(v, name, c.When[name]); msg != "" {
					bad("%s.when.%s: %s", cw, name, msg)
				}
			}
			rl.cases = append(rl.cases, priceCase{when: c.When, usd: amount(cw+".usd", c.USD)})
		}
		t.rules[version] = rl
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%w: %s", errInvalidPriceFile, strings.Join(problems, "; "))
	}
	return t, nil
}

// conditionProblem checks that a case compares an enum or boolean field of
// the variant with one of its values.
func conditionProblem(v catalog.Variant, name, value string) string {
	f, ok := v.Field(name)
	if !ok {
		return fmt.Sprintf("%s has no field %q", v.Version, name)
	}
	switch f.Type {
	case catalog.TypeEnum:
		if !slices.Contains(f.Enum, value) {
			return fmt.Sprintf("%q is not one of %s", value, strings.Join(f.Enum, ", "))
		}
	case catalog.TypeBoolean:
		if value != "true" && value != "false" {
			return fmt.Sprintf("%q is not true or false", value)
		}
	default:
		return fmt.Sprintf("a %s field cannot set a price", f.Type)
	}
	return ""
}

// CreditsPerUSD is how many credits one USD buys.
func (t *Table) CreditsPerUSD() decimal.Decimal { return t.creditsPerUSD }

// ProfitMarginPercent is the margin added to base prices, e.g. 30.
func (t *Table) ProfitMarginPercent() decimal.Decimal { return t.marginPercent }

// CreditsFromUSD converts a base USD amount to credits with the margin,
// unrounded, so that a caller can multiply first and round once (see
// RoundCredits).
func (t *Table) CreditsFromUSD(usd decimal.Decimal) decimal.Decimal {
	factor := decimal.NewFromInt(1).Add(t.marginPercent.Div(decimal.NewFromInt(100)))
	return usd.Mul(factor).Mul(t.creditsPerUSD)
}

// RoundCredits rounds an amount up to the credit precision (0.01): a
// customer is never charged less than the price.
func RoundCredits(d decimal.Decimal) decimal.Decimal { return d.RoundCeil(domain.CreditPlaces) }

// Quote prices a validated request.
func (t *Table) Quote(req catalog.Request) (Quote, error) {
	return t.QuoteFor(req.Variant, req.Resolved, req.ImageCount)
}

// QuoteFor prices a variant at the given input (defaults are filled in for
// absent fields) and image count (ignored for videos).
func (t *Table) QuoteFor(v catalog.Variant, input map[string]any, imageCount int) (Quote, error) {
	rl, ok := t.rules[v.Version]
	if !ok {
		return Quote{}, fmt.Errorf("%w: no rule for %s", errInvalidPriceFile, v.Version)
	}
	resolved := v.Resolve(input)
	unit := rl.unitUSD(resolved)
	var base decimal.Decimal
	switch {
	case rl.basis == PerSecond:
		seconds := v.DurationSeconds(resolved)
		if seconds <= 0 {
			return Quote{}, fmt.Errorf("%w: the %s request sets no duration", domain.ErrInvalid, v.Version)
		}
		base = unit.Mul(decimal.NewFromInt(int64(seconds)))
	case v.Kind == domain.MediaImage: // per_image, or per_generation charged per image
		if imageCount < 1 {
			return Quote{}, fmt.Errorf("%w: image count %d for %s", domain.ErrInvalid, imageCount, v.Version)
		}
		base = unit.Mul(decimal.NewFromInt(int64(imageCount)))
	default: // a video at one price per generation
		base = unit
	}
	return Quote{BaseUSD: base, Credits: RoundCredits(t.CreditsFromUSD(base))}, nil
}

// unitUSD is the price of the first case that matches, else the rule's own.
func (rl rule) unitUSD(resolved map[string]any) decimal.Decimal {
	for _, c := range rl.cases {
		if c.matches(resolved) {
			return c.usd
		}
	}
	return rl.usd
}

func (c priceCase) matches(resolved map[string]any) bool {
	for name, want := range c.when {
		if valueString(resolved[name]) != want {
			return false
		}
	}
	return true
}

// valueString renders an input value the way a price file writes it.
func valueString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case json.Number:
		return x.String()
	case nil:
		return "\x00absent" // matches no case value
	default:
		return fmt.Sprint(x)
	}
}

// ClipUSD is the base price of one clip of a video variant at the given
// length and default options.
func (t *Table) ClipUSD(version string, clipSeconds int) (decimal.Decimal, error) {
	v, err := catalog.LookupVersion(version)
	if err != nil {
		return decimal.Zero, fmt.Errorf("clip price: %w", err)
	}
	if v.Kind != domain.MediaVideo {
		return decimal.Zero, fmt.Errorf("clip price of %s: %w: not a video variant", version, domain.ErrInvalid)
	}
	if !slices.Contains(v.Durations(), clipSeconds) {
		return decimal.Zero, fmt.Errorf("clip price of %s: %w: %d s is not one of its durations %v", version, domain.ErrInvalid, clipSeconds, v.Durations())
	}
	input := map[string]any{}
	if f, ok := v.DurationField(); ok {
		input[f.Name] = strconv.Itoa(clipSeconds)
	}
	q, err := t.QuoteFor(v, input, 1)
	if err != nil {
		return decimal.Zero, err
	}
	return q.BaseUSD, nil
}

// PerSecondUSD is the base USD per second of output when a video variant
// fills durationSeconds (a long-form scene) at its default options. The
// scene is made from one clip at the variant's nearest duration
// (catalog.Variant.NearestDuration), so the result is that clip's price
// divided by durationSeconds; for a per_second variant it is never below the
// variant's rate. Thus beta-2 gives its 0.10 rate for a 5 s scene (a 4 s
// clip costs less), while beta-2-enchanted, whose shortest clip is 10 s,
// gives 1.00/5 = 0.20: the estimate never promises a scene for less than
// the clip it needs.
func (t *Table) PerSecondUSD(version string, durationSeconds int) (decimal.Decimal, error) {
	if durationSeconds <= 0 {
		return decimal.Zero, fmt.Errorf("per-second price of %s: %w: duration %d", version, domain.ErrInvalid, durationSeconds)
	}
	v, err := catalog.LookupVersion(version)
	if err != nil {
		return decimal.Zero, fmt.Errorf("per-second price: %w", err)
	}
	clip, err := t.ClipUSD(version, v.NearestDuration(durationSeconds))
	if err != nil {
		return decimal.Zero, err
	}
	perSecond := divUp(clip, decimal.NewFromInt(int64(durationSeconds)))
	if rl := t.rules[version]; rl.basis == PerSecond {
		rate := rl.unitUSD(v.Resolve(nil))
		perSecond = decimal.Max(perSecond, rate)
	}
	return perSecond, nil
}

// divUp divides to 10 places, rounding up so that the quotient times the
// divisor never falls below the dividend (a price never shrinks by rounding).
func divUp(a, b decimal.Decimal) decimal.Decimal {
	const places = 10
	q := a.DivRound(b, places)
	if q.Mul(b).LessThan(a) {
		q = q.Add(decimal.New(1, -places))
	}
	return q
}
