package longform

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/pricing"
)

// Every supported language has voices, its default being its own voices
// (a request without voice speaks as before), and every voice id is unique
// within its language.
func TestEveryLanguageHasItsVoicesDefaultFirst(t *testing.T) {
	for _, lang := range Languages {
		def, ok := defaultVoice(lang.Code)
		if !ok {
			t.Errorf("%s has no voice", lang.Code)
			continue
		}
		if def.Espeak != lang.EspeakVoice || def.Polly != lang.PollyVoice {
			t.Errorf("%s: default voice %s is espeak %q / Polly %q, want the language's %q / %q", lang.Code, def.ID, def.Espeak, def.Polly, lang.EspeakVoice, lang.PollyVoice)
		}
		seen := map[string]bool{}
		for _, v := range languageVoices(lang.Code) {
			if seen[v.ID] {
				t.Errorf("%s: voice %s twice", lang.Code, v.ID)
			}
			seen[v.ID] = true
			if v.Gender != female && v.Gender != male || v.Name == "" {
				t.Errorf("%s: voice %s has gender %q, name %q", lang.Code, v.ID, v.Gender, v.Name)
			}
		}
	}
	for _, v := range Voices {
		if _, ok := LookupLanguage(v.Language); !ok {
			t.Errorf("voice %s is of %q, not a supported language", v.ID, v.Language)
		}
	}
}

// voice is checked the same at creation and at the estimate: a voice of
// the language is kept (the default as ""), anything else is a 400 naming
// the language's voices.
func TestVoiceIsAValidatedChoiceOfTheLanguage(t *testing.T) {
	tests := []struct {
		name, fields string
		want         string // the record's voice
		problem      string // a part of the voice's problem; "" for none
	}{
		{"no voice", ``, "", ""},
		{"another voice", `,"voice":"matthew"`, "matthew", ""},
		{"the default voice", `,"voice":"joanna"`, "", ""},
		{"unknown", `,"voice":"hal"`, "", "its voices are joanna, matthew, ruth"},
		{"another language's", `,"voice":"lucia"`, "", "its voices are joanna, matthew, ruth"},
		{"not a string", `,"voice":7`, "", "must be a string"},
		{"without narration", `,"voice":"matthew","enable_narration":false`, "", "needs narration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scenes := `"scenes":[{"scene_number":1,"prompt":"a harbour at dawn"}],"language_code":"en"` + tt.fields
			create := fmt.Sprintf(`{"prompt":"the sea",%s}`, scenes)
			estimate := fmt.Sprintf(`{"model":"beta-2",%s}`, scenes)
			req, err := ParseCreate([]byte(create), catalog.Options{})
			_, estErr := ParseEstimate(pricing.Default(), []byte(estimate))
			for name, err := range map[string]error{"create": err, "estimate": estErr} {
				if tt.problem == "" {
					if err != nil {
						t.Errorf("%s: %v", name, err)
					}
					continue
				}
				var v *catalog.ValidationError
				if !errors.As(err, &v) {
					t.Fatalf("%s: err = %v, want a validation error", name, err)
				}
				found := false
				for _, d := range v.Details {
					found = found || d.Field == "voice" && strings.Contains(d.Message, tt.problem)
				}
				if !found {
					t.Errorf("%s: details %+v, want voice: …%s…", name, v.Details, tt.problem)
				}
			}
			if err == nil && req.Studio.Voice != tt.want {
				t.Errorf("voice kept as %q, want %q", req.Studio.Voice, tt.want)
			}
		})
	}
}

// narration_speed is a tempo from 0.5 to 1.5, kept (1 as nil) at creation
// and checked the same at the estimate.
func TestNarrationSpeedIsATempoWithinTheFitRule(t *testing.T) {
	tests := []struct {
		name, fields string
		want         float64 // 0: nil
		problem      string
	}{
		{"none", ``, 0, ""},
		{"faster", `,"narration_speed":1.25`, 1.25, ""},
		{"slower", `,"narration_speed":0.8`, 0.8, ""},
		{"one", `,"narration_speed":1`, 0, ""},
		{"past the fit rule", `,"narration_speed":1.6`, 0, "from 0.5 to 1.5"},
		{"too slow", `,"narration_speed":0.4`, 0, "from 0.5 to 1.5"},
		{"a string", `,"narration_speed":"fast"`, 0, "must be a number"},
		{"without narration", `,"narration_speed":1.2,"enable_narration":false`, 0, "needs narration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scenes := `"scenes":[{"scene_number":1,"prompt":"a harbour at dawn"}],"language_code":"en"` + tt.fields
			req, err := ParseCreate([]byte(fmt.Sprintf(`{"prompt":"the sea",%s}`, scenes)), catalog.Options{})
			_, estErr := ParseEstimate(pricing.Default(), []byte(fmt.Sprintf(`{"model":"beta-2",%s}`, scenes)))
			for name, err := range map[string]error{"create": err, "estimate": estErr} {
				if tt.problem == "" {
					if err != nil {
						t.Errorf("%s: %v", name, err)
					}
					continue
				}
				var v *catalog.ValidationError
				if !errors.As(err, &v) || !strings.Contains(fmt.Sprint(v.Details), "narration_speed") || !strings.Contains(fmt.Sprint(v.Details), tt.problem) {
					t.Errorf("%s: err = %v, want narration_speed: …%s…", name, err, tt.problem)
				}
			}
			if err != nil {
				return
			}
			got := 0.0
			if req.Studio.NarrationSpeed != nil {
				got = *req.Studio.NarrationSpeed
			}
			if got != tt.want {
				t.Errorf("narration_speed kept as %v, want %v", got, tt.want)
			}
		})
	}
}

// The narration is laid at the chosen speed when it fits its scene at it,
// else sped up to fit, never past 1.5×.
func TestNarrationTempoHonoursTheSpeedWithinTheFitRule(t *testing.T) {
	tests := []struct{ speech, speed, want float64 }{
		{3, 1, 1},
		{6, 1, 1.2},
		{9, 1, 1.5},
		{3, 1.3, 1.3},
		{7, 1.3, 1.4},
		{3, 0.8, 0.8},
		{4.5, 0.8, 0.9},
		{8, 0.5, 1.5},
	}
	for _, tt := range tests {
		if got := narrationTempo(tt.speech, tt.speed); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("narrationTempo(%g s, speed %g) = %g, want %g", tt.speech, tt.speed, got, tt.want)
		}
	}
}
