package longform

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/pricing"
)

func TestEstimateFollowsTheSpecsSample(t *testing.T) {
	tests := []struct {
		model     string
		scenes    int
		perSecond string
	}{
		{"beta-2", 3, "13"}, // 0.10 USD/s × 130 credits/USD
		{"beta-2", 1, "13"},
		{"beta-2-enchanted", 4, "26"}, // its shortest clip is 10 s: 1.00 USD for a 5 s scene
		{"video-01", 20, "13"},        // 0.50 USD per 6 s clip, over 5 s
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s x%d", tt.model, tt.scenes), func(t *testing.T) {
			e, err := ParseEstimate(pricing.Default(), []byte(fmt.Sprintf(`{"model":%q,"scene_count":%d}`, tt.model, tt.scenes)))
			if err != nil {
				t.Fatal(err)
			}
			if e.Model != tt.model || e.Duration != tt.scenes*5 || e.SceneCount != tt.scenes {
				t.Errorf("estimate = %+v", e)
			}
			if !e.CreditsPerSecond.Equal(decimal.RequireFromString(tt.perSecond)) {
				t.Errorf("per_second = %s, want %s", e.CreditsPerSecond, tt.perSecond)
			}
			if want := e.CreditsPerSecond.Mul(decimal.NewFromInt(int64(e.Duration))); !e.Credits.Equal(want) {
				t.Errorf("total %s, want per_second × duration = %s", e.Credits, want)
			}
			if !e.ProfitMarginPercent.Equal(decimal.NewFromInt(30)) || !e.USDPerSecond.IsPositive() {
				t.Errorf("pricing: %s USD/s at %s%% margin", e.USDPerSecond, e.ProfitMarginPercent)
			}
		})
	}
}

func TestEstimateRefusesBadModelsAndCounts(t *testing.T) {
	for _, body := range []string{
		`{"model":"zeta","scene_count":3}`,
		`{"model":"gamma-v2.1","scene_count":3}`, // needs a start image a scene cannot give
		`{"model":"beta-9","scene_count":3}`,
		`{"scene_count":3}`,
		`{"model":"beta-2","scene_count":0}`,
		`{"model":"beta-2","scene_count":21}`,
		`{"model":"beta-2","scene_count":2.5}`,
		`{"model":"beta-2","scene_count":"3"}`,
		`{"model":"beta-2"}`,
		`{"model":"beta-2","scene_count":3,"extra":1}`,
		`[]`,
	} {
		if _, err := ParseEstimate(pricing.Default(), []byte(body)); !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("%s: err = %v, want a validation error", body, err)
		}
	}
}

func TestParseCreateAppliesDefaultsAndSortsScenes(t *testing.T) {
	req, err := ParseCreate([]byte(`{"prompt":"the sea","language_code":"es","scenes":[
		{"scene_number":3,"prompt":"gulls"},{"scene_number":1,"prompt":"waves","narration":"Las olas."}]}`), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if req.Model != "beta-2" || !req.EnableNarration || req.VideoStyle != "auto" || req.LanguageCode != "es" {
		t.Errorf("defaults: %+v", req)
	}
	if len(req.Scenes) != 2 || req.Scenes[0].SceneNumber != 1 || req.Scenes[0].Narration != "Las olas." || req.Scenes[1].SceneNumber != 3 {
		t.Errorf("scenes = %+v, want sorted by scene_number", req.Scenes)
	}
}

func TestParseCreateRefusesBadRequests(t *testing.T) {
	scene := func(n int) string { return fmt.Sprintf(`{"scene_number":%d,"prompt":"s%d"}`, n, n) }
	many := make([]string, 21)
	for i := range many {
		many[i] = scene(i + 1)
	}
	tests := []struct {
		name, body, field string
	}{
		{"no scenes", `{"prompt":"p","language_code":"en"}`, "scenes"},
		{"empty scenes", `{"prompt":"p","language_code":"en","scenes":[]}`, "scenes"},
		{"21 scenes", `{"prompt":"p","language_code":"en","scenes":[` + strings.Join(many, ",") + `]}`, "scenes"},
		{"duplicate scene numbers", `{"prompt":"p","language_code":"en","scenes":[` + scene(1) + `,` + scene(1) + `]}`, "scenes[1].scene_number"},
		{"zero scene number", `{"prompt":"p","language_code":"en","scenes":[` + scene(0) + `]}`, "scenes[0].scene_number"},
		{"scene without prompt", `{"prompt":"p","language_code":"en","scenes":[{"scene_number":1}]}`, "scenes[0].prompt"},
		{"unknown scene field", `{"prompt":"p","language_code":"en","scenes":[{"scene_number":1,"prompt":"x","length":9}]}`, "scenes[0].length"},
		{"unknown language", `{"prompt":"p","language_code":"xx","scenes":[` + scene(1) + `]}`, "language_code"},
		{"missing language", `{"prompt":"p","scenes":[` + scene(1) + `]}`, "language_code"},
		{"image model", `{"prompt":"p","language_code":"en","model":"zeta","scenes":[` + scene(1) + `]}`, "model"},
		{"empty prompt", `{"prompt":"","language_code":"en","scenes":[` + scene(1) + `]}`, "prompt"},
		{"narration not boolean", `{"prompt":"p","language_code":"en","enable_narration":"no","scenes":[` + scene(1) + `]}`, "enable_narration"},
		{"unknown style", `{"prompt":"p","language_code":"en","video_style":"glitter","scenes":[` + scene(1) + `]}`, "video_style"},
		{"unknown field", `{"prompt":"p","language_code":"en","scenes":[` + scene(1) + `],"music":true}`, "music"},
		{"scene's model unknown", `{"prompt":"p","language_code":"en","scenes":[{"scene_number":1,"prompt":"x","model":"beta-9"}]}`, "scenes[0].model"},
		{"scene's model an image model", `{"prompt":"p","language_code":"en","scenes":[` + scene(1) + `,{"scene_number":2,"prompt":"x","model":"zeta"}]}`, "scenes[1].model"},
		{"scene's model not a string", `{"prompt":"p","language_code":"en","scenes":[{"scene_number":1,"prompt":"x","model":2}]}`, "scenes[0].model"},
		{"scene's model makes no portrait", `{"prompt":"p","language_code":"en","aspect_ratio":"portrait","scenes":[{"scene_number":1,"prompt":"x","model":"video-01"}]}`, "scenes[0].model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseCreate([]byte(tt.body), catalog.Options{})
			var ve *catalog.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("err = %v, want a validation error", err)
			}
			found := false
			for _, d := range ve.Details {
				found = found || d.Field == tt.field
			}
			if !found {
				t.Errorf("details %+v do not name %s", ve.Details, tt.field)
			}
		})
	}
}

func TestScenePromptCarriesStyleNumberAndTheme(t *testing.T) {
	got := ScenePrompt("cinematic", "a trip to the sea", domain.Scene{SceneNumber: 2, Prompt: "gulls over the pier"})
	for _, want := range []string{"Cinematic", "Scene 2: gulls over the pier", "a trip to the sea"} {
		if !strings.Contains(got, want) {
			t.Errorf("ScenePrompt = %q, missing %q", got, want)
		}
	}
	if auto := ScenePrompt("auto", "t", domain.Scene{SceneNumber: 1, Prompt: "p"}); !strings.HasPrefix(auto, "Scene 1: p") {
		t.Errorf("auto style prompt = %q, want no prefix", auto)
	}
}

// The narration limit of each language is what the slower engine says in
// 7.5 s (5 s at 1.5×); the rates are proved against espeak-ng in
// internal/local/espeak.
func TestNarrationLimitPerLanguageFollowsTheSlowerEngine(t *testing.T) {
	want := map[string]int{"en": 90, "es": 90, "fr": 90, "de": 90, "it": 90, "pt": 90, "nl": 90, "pl": 90, "hi": 75, "ja": 37}
	if len(want) != len(Languages) {
		t.Fatalf("%d limits for %d languages: add the new language here", len(want), len(Languages))
	}
	for _, l := range Languages {
		slower := min(l.EspeakRate, l.PollyRate)
		if got := l.MaxNarration(); got != want[l.Code] || float64(got) > slower*NarrationSeconds {
			t.Errorf("%s: MaxNarration = %d, want %d (at most %.1f chars/s × %g s)", l.Code, got, want[l.Code], slower, NarrationSeconds)
		}
	}
}

// narrationBody is a one-scene create body in lang whose scene has the
// given narration (none when "") and prompt.
func narrationBody(lang, prompt, narration string, narrate bool) string {
	sc := map[string]any{"scene_number": 1, "prompt": prompt}
	if narration != "" {
		sc["narration"] = narration
	}
	raw, _ := json.Marshal(map[string]any{"prompt": "the sea", "language_code": lang, "enable_narration": narrate, "scenes": []any{sc}})
	return string(raw)
}

// wantDetail checks that err is a validation error naming field with a
// message holding every part.
func wantDetail(t *testing.T, err error, field string, parts ...string) {
	t.Helper()
	var ve *catalog.ValidationError
	if !errors.As(err, &ve) || !errors.Is(err, domain.ErrInvalid) {
		t.Fatalf("err = %v, want a validation error", err)
	}
	for _, d := range ve.Details {
		if d.Field != field {
			continue
		}
		for _, part := range parts {
			if !strings.Contains(d.Message, part) {
				t.Errorf("%s: %q does not say %q", field, d.Message, part)
			}
		}
		return
	}
	t.Errorf("details %+v do not name %s", ve.Details, field)
}

// A scene's spoken text must fit its 5 s at 1.5× in its language, at create
// and at the estimate alike: the limit is accepted, one character more is a
// 400 naming the field and the limit.
func TestNarrationLongerThanItsSceneIsRefusedPerLanguage(t *testing.T) {
	parse := map[string]func(body string) error{
		"create": func(body string) error { _, err := ParseCreate([]byte(body), catalog.Options{}); return err },
		"estimate": func(body string) error {
			var obj map[string]any
			json.Unmarshal([]byte(body), &obj)
			delete(obj, "prompt")
			obj["model"] = "beta-2"
			raw, _ := json.Marshal(obj)
			_, err := ParseEstimate(pricing.Default(), raw)
			return err
		},
	}
	for _, l := range Languages {
		max := l.MaxNarration()
		letter := map[string]string{"hi": "क", "ja": "あ"}[l.Code]
		if letter == "" {
			letter = "a"
		}
		fits, over := strings.Repeat(letter, max), strings.Repeat(letter, max+1)
		limit := fmt.Sprintf("at most %d characters in %s", max, l.Name)
		for route, parse := range parse {
			t.Run(l.Code+" "+route, func(t *testing.T) {
				if err := parse(narrationBody(l.Code, "waves", fits, true)); err != nil {
					t.Errorf("a narration of %d characters: %v", max, err)
				}
				wantDetail(t, parse(narrationBody(l.Code, "waves", over, true)), "scenes[0].narration", limit, fmt.Sprintf("got %d", max+1))
				// Without narration the prompt is spoken, and held to the same limit.
				if err := parse(narrationBody(l.Code, fits, "", true)); err != nil {
					t.Errorf("a spoken prompt of %d characters: %v", max, err)
				}
				wantDetail(t, parse(narrationBody(l.Code, over, "", true)), "scenes[0].prompt", limit, "enable_narration")
				// A long prompt is fine when a narration is spoken instead, or nothing is.
				if err := parse(narrationBody(l.Code, over, "short", true)); err != nil {
					t.Errorf("a long prompt with a narration: %v", err)
				}
				if err := parse(narrationBody(l.Code, over, "", false)); err != nil {
					t.Errorf("a long prompt without narration: %v", err)
				}
			})
		}
	}
}

// Regression: 20 scenes of 1,000-character narrations were accepted, billed
// 100 s and made a 1,249 s video.
func TestTwentyScenesOfLongNarrationAreRefusedSceneByScene(t *testing.T) {
	var list []string
	for i := 1; i <= 20; i++ {
		list = append(list, fmt.Sprintf(`{"scene_number":%d,"prompt":"p","narration":%q}`, i, strings.Repeat("word ", 200)))
	}
	scenes := `"scenes":[` + strings.Join(list, ",") + `]`
	_, err := ParseCreate([]byte(`{"prompt":"p","language_code":"en",`+scenes+`}`), catalog.Options{})
	for i := range 20 {
		wantDetail(t, err, fmt.Sprintf("scenes[%d].narration", i), "at most 90 characters in English", "got 1000")
	}
	_, err = ParseEstimate(pricing.Default(), []byte(`{"model":"beta-2","language_code":"en",`+scenes+`}`))
	wantDetail(t, err, "scenes[19].narration", "at most 90 characters in English")
}

func TestEstimateCountsTheScenesItIsGiven(t *testing.T) {
	e, err := ParseEstimate(pricing.Default(), []byte(`{"model":"beta-2","language_code":"hi","scenes":[
		{"scene_number":1,"prompt":"waves","narration":"भोर में समुद्र।"},{"scene_number":2,"prompt":"gulls"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if e.SceneCount != 2 || e.Duration != 10 {
		t.Errorf("estimate of 2 scenes = %+v", e)
	}
	tests := []struct{ name, body, field string }{
		{"scene_count disagrees", `{"model":"beta-2","scene_count":3,"language_code":"en","scenes":[{"scene_number":1,"prompt":"a"}]}`, "scene_count"},
		{"scenes without language", `{"model":"beta-2","scenes":[{"scene_number":1,"prompt":"a"}]}`, "language_code"},
		{"unsupported language", `{"model":"beta-2","scene_count":1,"language_code":"xx"}`, "language_code"},
		{"bad scene", `{"model":"beta-2","language_code":"en","scenes":[{"scene_number":0,"prompt":"a"}]}`, "scenes[0].scene_number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseEstimate(pricing.Default(), []byte(tt.body))
			wantDetail(t, err, tt.field)
		})
	}
}

// A scene may name its own model: it is made and priced by it, the
// estimate taking the same field; the others keep the video's model.
func TestAScenesOwnModelPricesIt(t *testing.T) {
	body := `{"prompt":"the sea","model":"beta-2","language_code":"en","scenes":[
		{"scene_number":1,"prompt":"waves"},{"scene_number":2,"prompt":"gulls","model":"delta-1-pro"},{"scene_number":3,"prompt":"dusk"}]}`
	req, err := ParseCreate([]byte(body), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if req.Scenes[0].Model != "" || req.Scenes[1].Model != "delta-1-pro" || req.Scenes[2].Model != "" {
		t.Fatalf("scenes %+v, want scene 2's own model kept", req.Scenes)
	}
	one := func(model string) decimal.Decimal {
		q, err := Price(pricing.Default(), model, 1)
		if err != nil {
			t.Fatal(err)
		}
		return q.Credits
	}
	want := one("beta-2").Mul(decimal.NewFromInt(2)).Add(one("delta-1-pro"))
	if want.Equal(one("beta-2").Mul(decimal.NewFromInt(3))) {
		t.Fatal("delta-1-pro costs what beta-2 does: the test cannot tell them apart")
	}
	est, err := ParseEstimate(pricing.Default(), []byte(strings.Replace(body, `"prompt":"the sea",`, "", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if !est.Credits.Equal(want) || est.Duration != 15 || est.Model != "beta-2" {
		t.Errorf("estimate %s credits for %d s of %s, want %s (each scene by its model)", est.Credits, est.Duration, est.Model, want)
	}
	if q, err := priceScenes(pricing.Default(), req.Model, req.Scenes); err != nil || !q.Credits.Equal(want) {
		t.Errorf("the create's price = %v (%v), want %s as estimated", q.Credits, err, want)
	}
	if _, err := ParseEstimate(pricing.Default(), []byte(`{"model":"beta-2","language_code":"en","scenes":[{"scene_number":1,"prompt":"a","model":"zeta"}]}`)); err == nil {
		t.Error("an estimate with a scene of an image model was priced, want a 400")
	} else {
		wantDetail(t, err, "scenes[0].model")
	}
}
