package longform

import (
	"errors"
	"testing"
	"unicode/utf8"

	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/pricing"
)

// FuzzParseCreate: a create body parses into 1-20 scenes with unique
// positive numbers in order, a supported language and a usable model, or is
// refused with a validation error.
func FuzzParseCreate(f *testing.F) {
	for _, seed := range []string{
		`{"prompt":"A day at the seaside","language_code":"en","model":"beta-2","enable_narration":true,"video_style":"cinematic","scenes":[{"scene_number":1,"prompt":"waves"},{"scene_number":2,"prompt":"gulls"}]}`,
		`{"prompt":"x","language_code":"es","scenes":[{"scene_number":3,"prompt":"c","narration":"hola"},{"scene_number":1,"prompt":"a"}]}`,
		`{"prompt":"x","language_code":"en","scenes":[{"scene_number":1,"prompt":"a"},{"scene_number":1,"prompt":"b"}]}`,
		`{"prompt":"x","language_code":"xx","scenes":[]}`, `{}`, `[]`, `{"scenes":[1,2,3]}`,
		`{"prompt":"x","language_code":"ja","scenes":[{"scene_number":1,"prompt":"a","narration":"あさの ひかりが しずかな みなとに ゆっくりと ひろがる"}]}`,
		`{"prompt":"x","language_code":"hi","enable_narration":false,"scenes":[{"scene_number":1,"prompt":"a long prompt that nobody will ever speak over the scene because narration is off"}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := ParseCreate(body, catalog.Options{})
		if err != nil {
			var ve *catalog.ValidationError
			if !errors.As(err, &ve) || !errors.Is(err, domain.ErrInvalid) {
				t.Fatalf("refused with %T %v, want a validation error", err, err)
			}
			return
		}
		if len(req.Scenes) < minScenes || len(req.Scenes) > MaxScenes {
			t.Fatalf("accepted %d scenes", len(req.Scenes))
		}
		for i, s := range req.Scenes {
			if s.SceneNumber < 1 || (i > 0 && s.SceneNumber <= req.Scenes[i-1].SceneNumber) {
				t.Fatalf("scenes not unique, positive and in order: %+v", req.Scenes)
			}
		}
		lang, ok := LookupLanguage(req.LanguageCode)
		if !ok {
			t.Fatalf("accepted language %q", req.LanguageCode)
		}
		for _, s := range req.Scenes {
			spoken := s.Narration
			if spoken == "" && req.EnableNarration {
				spoken = s.Prompt
			}
			if n := utf8.RuneCountInString(s.Narration); n > lang.MaxNarration() {
				t.Fatalf("accepted a narration of %d characters in %s", n, lang.Code)
			}
			if n := utf8.RuneCountInString(spoken); req.EnableNarration && n > lang.MaxNarration() {
				t.Fatalf("accepted %d spoken characters in %s", n, lang.Code)
			}
		}
		if _, err := Price(pricing.Default(), req.Model, len(req.Scenes)); err != nil {
			t.Fatalf("accepted a request it cannot price: %v", err)
		}
	})
}

// FuzzParseEstimate: an estimate is priced or refused with a validation error.
func FuzzParseEstimate(f *testing.F) {
	for _, seed := range []string{`{"model":"beta-2","scene_count":3}`, `{"model":"video-01","scene_count":20}`,
		`{"model":"zeta","scene_count":3}`, `{"model":"beta-2","scene_count":1e309}`, `{"scene_count":-1}`,
		`{"model":"beta-2","language_code":"en","scenes":[{"scene_number":1,"prompt":"a","narration":"b"}]}`,
		`{"model":"beta-2","scene_count":2,"language_code":"fr","scenes":[{"scene_number":1,"prompt":"a"},{"scene_number":2,"prompt":"b"}]}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		e, err := ParseEstimate(pricing.Default(), body)
		if err != nil {
			if !errors.Is(err, domain.ErrInvalid) {
				t.Fatalf("refused with %v, want a validation error", err)
			}
			return
		}
		if e.Duration != e.SceneCount*SceneSeconds || e.SceneCount < minScenes || e.SceneCount > MaxScenes {
			t.Fatalf("estimate %+v", e)
		}
	})
}
