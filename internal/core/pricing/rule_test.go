package pricing

import (
	"testing"

	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/core/catalog"
)

// A rule read back must price a request exactly as Quote does.
func TestRulePricesRequestsAsQuoteDoes(t *testing.T) {
	table := Default()
	tests := []struct {
		version string
		input   map[string]any
		images  int
		units   int64
	}{
		{"alpha-3.1-fast", map[string]any{"prompt": "p"}, 1, 8},
		{"alpha-3.1-fast", map[string]any{"prompt": "p", "resolution": "1080p", "generate_audio": true, "duration": "4"}, 1, 4},
		{"gamma-v2.1", map[string]any{"prompt": "p", "mode": "pro", "duration": "10"}, 1, 10},
		{"video-01", map[string]any{"prompt": "p"}, 1, 1},
		{"epsilon-02", map[string]any{"prompt": "p", "duration": "10", "resolution": "512p"}, 1, 1},
		{"zeta-pro", map[string]any{"prompt": "ppp", "resolution": "4K"}, 3, 3},
		{"zeta", map[string]any{"prompt": "p"}, 2, 2},
	}
	for _, tt := range tests {
		v, err := catalog.LookupVersion(tt.version)
		if err != nil {
			t.Fatal(err)
		}
		rule, err := table.Rule(v)
		if err != nil {
			t.Fatal(err)
		}
		resolved := v.Resolve(tt.input)
		unit := rule.CreditsPerUnit
		for _, c := range rule.Cases {
			match := true
			for k, want := range c.When {
				if valueString(resolved[k]) != want {
					match = false
				}
			}
			if match {
				unit = c.CreditsPerUnit
				break
			}
		}
		got := RoundCredits(unit.Mul(decimal.NewFromInt(tt.units)))
		q, err := table.QuoteFor(v, tt.input, tt.images)
		if err != nil {
			t.Fatal(err)
		}
		if !got.Equal(q.Credits) {
			t.Errorf("%s %v: the rule gives %s credits, Quote %s", tt.version, tt.input, got, q.Credits)
		}
	}
}

func TestRuleUnits(t *testing.T) {
	for version, want := range map[string]string{"beta-2": unitSecond, "video-01": unitVideo, "epsilon-02": unitVideo, "zeta-pro": unitImage, "zeta": unitImage} {
		v, _ := catalog.LookupVersion(version)
		if r, err := Default().Rule(v); err != nil || r.Unit != want {
			t.Errorf("%s: unit %q (%v), want %q", version, r.Unit, err, want)
		}
	}
}
