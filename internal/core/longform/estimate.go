package longform

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/pricing"

	"github.com/shopspring/decimal"
)

// Scene limits and length.
const (
	minScenes    = 1
	MaxScenes    = 20
	SceneSeconds = 5
	defaultModel = "beta-2"
)

// Quote is what a long-form video costs, and how the price is made.
type Quote struct {
	Model      string
	SceneCount int
	// Duration is the video's length in seconds.
	Duration int
	// USDPerSecond is the provider's base price; CreditsPerSecond adds the
	// margin (ProfitMarginPercent) and converts it; Credits is the total.
	// Scenes of different models make them the scenes' means (rounded),
	// and TotalUSD and Credits the sums of the scenes' prices.
	USDPerSecond        decimal.Decimal
	TotalUSD            decimal.Decimal
	CreditsPerSecond    decimal.Decimal
	Credits             decimal.Decimal
	ProfitMarginPercent decimal.Decimal
}

// Models lists the video model_versions a long-form video can use: those
// whose required inputs a scene can fill.
func Models() []string {
	var out []string
	for _, version := range catalog.VideoVersions() {
		v, err := catalog.LookupVersion(version)
		if err != nil {
			continue
		}
		if _, err := sceneInput(v, "scene", ""); err == nil {
			out = append(out, version)
		}
	}
	return out
}

// videoVariant checks that model is a video model_version a scene can use.
func videoVariant(model string) (catalog.Variant, error) {
	v, err := catalog.LookupVersion(model)
	if err == nil && v.Kind == domain.MediaVideo {
		_, err = sceneInput(v, "scene", "")
	}
	if err != nil || v.Kind != domain.MediaVideo {
		return catalog.Variant{}, fmt.Errorf("must be a video model_version that long-form videos support, one of: %s",
			strings.Join(Models(), ", "))
	}
	return v, nil
}

// Price computes the estimate of sceneCount scenes of model: every scene
// counts SceneSeconds, per_second comes from the price file and
// total = per_second × duration, as the spec's sample shows.
func Price(prices *pricing.Table, model string, sceneCount int) (Quote, error) {
	if sceneCount < minScenes || sceneCount > MaxScenes {
		return Quote{}, fmt.Errorf("must be from %d to %d", minScenes, MaxScenes)
	}
	return priceScenes(prices, model, make([]domain.Scene, sceneCount))
}

// priceScenes computes the estimate of scenes made by model, each scene
// by its own model when it names one (domain.Scene.Model): each scene
// costs its model's per-second price for SceneSeconds, and the total is
// their sum. When every scene is made by one model, per_second is its
// price and total = per_second × duration, as the spec's sample shows;
// when they differ, per_second and the base USD per second are the
// scenes' mean.
func priceScenes(prices *pricing.Table, model string, scenes []domain.Scene) (Quote, error) {
	v, err := videoVariant(model)
	if err != nil {
		return Quote{}, err
	}
	if len(scenes) < minScenes || len(scenes) > MaxScenes {
		return Quote{}, fmt.Errorf("must be from %d to %d", minScenes, MaxScenes)
	}
	seconds := decimal.NewFromInt(SceneSeconds)
	var usd, total decimal.Decimal
	for _, sc := range scenes {
		sv := v
		if sc.Model != "" {
			if sv, err = videoVariant(sc.Model); err != nil {
				return Quote{}, fmt.Errorf("scene %d: %w", sc.SceneNumber, err)
			}
		}
		usdPerSecond, err := prices.PerSecondUSD(sv.Version, SceneSeconds)
		if err != nil {
			return Quote{}, fmt.Errorf("price %s: %w", sv.Version, err)
		}
		usd = usd.Add(usdPerSecond)
		total = total.Add(pricing.RoundCredits(prices.CreditsFromUSD(usdPerSecond)).Mul(seconds))
	}
	n := decimal.NewFromInt(int64(len(scenes)))
	duration := len(scenes) * SceneSeconds
	return Quote{Model: v.Version, SceneCount: len(scenes), Duration: duration, USDPerSecond: usd.DivRound(n, 6),
		TotalUSD: usd.Mul(seconds), CreditsPerSecond: total.DivRound(decimal.NewFromInt(int64(duration)), 4), Credits: total,
		ProfitMarginPercent: prices.ProfitMarginPercent()}, nil
}

// estimateFields are the fields of an estimate body: the spec's model and
// scene_count, and optionally the create body's scenes with their
// language_code and enable_narration, so that a video is refused at its
// estimate for the same reasons (a narration too long for its scene) as at
// its creation.
var estimateFields = append([]string{"model", "scene_count", "scenes", "language_code", "enable_narration"}, studioFields...)

// ParseEstimate validates an estimate body {model, scene_count} (or
// {model, scenes, language_code[, enable_narration]}) and prices it.
func ParseEstimate(prices *pricing.Table, body []byte) (Quote, error) {
	obj, err := catalog.DecodeObject(body)
	if err != nil {
		return Quote{}, err
	}
	var p catalog.Problems
	p.Unknown("", obj, estimateFields)
	model, ok := obj["model"].(string)
	if !ok {
		p.Add("model", "is required: a video model_version such as "+defaultModel)
	} else if _, err := videoVariant(model); err != nil {
		p.Add("model", err.Error())
		ok = false
	}
	narrate := enableNarration(obj, &p)
	// An estimate fetches nothing: a music_url's host is the create's to
	// judge, so a local one passes here as it does in local use.
	frame := studio(obj, catalog.Options{AllowLoopbackURLs: true}, model, ok, narrate, &p)
	var count int
	var list []domain.Scene
	if raw, present := obj["scenes"]; present {
		lang, langOK := language(obj, &p)
		// No theme: the model's prompt limit is checked at creation.
		list = scenes(raw, &p, func(domain.Scene) string { return "" }, spoken{lang: lang, known: langOK, narrate: narrate},
			sceneModelCheck(frame.AspectRatio))
		count = len(list)
		if n, present := obj["scene_count"]; present && count > 0 {
			if c, msg := sceneCount(n); msg == "" && c != count {
				p.Add("scene_count", fmt.Sprintf("is %d but scenes holds %d; it may be left out", c, count))
			} else if msg != "" {
				p.Add("scene_count", msg)
			}
		}
	} else {
		// Without scenes there is nothing to narrate, but what is sent is
		// still checked.
		if _, present := obj["language_code"]; present {
			language(obj, &p)
		}
		var countErr string
		if count, countErr = sceneCount(obj["scene_count"]); countErr != "" {
			p.Add("scene_count", countErr)
		}
	}
	if err := p.Err(); err != nil {
		return Quote{}, err
	}
	if list != nil {
		return priceScenes(prices, model, list)
	}
	return Price(prices, model, count)
}

func sceneCount(v any) (int, string) {
	n, ok := v.(json.Number)
	if !ok {
		if v == nil {
			return 0, fmt.Sprintf("is required: the number of scenes, %d to %d", minScenes, MaxScenes)
		}
		return 0, "must be a number"
	}
	i, err := n.Int64()
	if err != nil || i < minScenes || i > MaxScenes {
		return 0, fmt.Sprintf("must be a whole number from %d to %d, got %s", minScenes, MaxScenes, catalog.Clip(n.String()))
	}
	return int(i), ""
}
