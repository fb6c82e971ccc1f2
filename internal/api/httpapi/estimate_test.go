package httpapi

import (
	"encoding/json"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/core/longform"
	"github.com/mediagen-dev/mediagen/internal/core/pricing"
)

// The estimate a client reads: the spec's fields, amounts as JSON numbers,
// total = required = per_second × duration, and the base price behind it.
func TestLongVideoEstimateIsTheSpecsShape(t *testing.T) {
	tests := []struct {
		model  string
		scenes int
	}{{"beta-2", 3}, {"beta-2-enchanted", 4}, {"video-01", 20}}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			q, err := longform.Price(pricing.Default(), tt.model, tt.scenes)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := json.Marshal(longVideoEstimateOf(q))
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				Success        bool   `json:"success"`
				Model          string `json:"model"`
				Duration       int    `json:"duration"`
				SceneCountMode bool   `json:"scene_count_mode"`
				SceneInfo      struct {
					TotalScenes       int    `json:"total_scenes"`
					DurationPerScene  int    `json:"duration_per_scene"`
					SceneDurationNote string `json:"scene_duration_note"`
				} `json:"scene_info"`
				Credits map[string]any `json:"credits"`
				Pricing map[string]any `json:"pricing"`
			}
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatal(err)
			}
			if !got.Success || got.Model != tt.model || got.Duration != tt.scenes*5 || !got.SceneCountMode ||
				got.SceneInfo.TotalScenes != tt.scenes || got.SceneInfo.DurationPerScene != 5 || got.SceneInfo.SceneDurationNote == "" {
				t.Errorf("estimate %s", raw)
			}
			num := func(m map[string]any, k string) decimal.Decimal {
				f, ok := m[k].(float64)
				if !ok {
					t.Fatalf("%s is not a JSON number in %s", k, raw)
				}
				return decimal.NewFromFloat(f)
			}
			per, total := num(got.Credits, "per_second"), num(got.Credits, "total")
			if !total.Equal(per.Mul(decimal.NewFromInt(int64(got.Duration)))) || !num(got.Credits, "required").Equal(total) {
				t.Errorf("credits %v: want required = total = per_second × duration", got.Credits)
			}
			usd := num(got.Pricing, "base_cost_usd_per_second")
			if !num(got.Pricing, "total_base_cost_usd").Equal(usd.Mul(decimal.NewFromInt(int64(got.Duration)))) || got.Pricing["profit_margin"] != "30%" {
				t.Errorf("pricing %v", got.Pricing)
			}
		})
	}
}
