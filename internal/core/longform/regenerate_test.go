package longform

import (
	"errors"
	"strings"
	"testing"

	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

func regenerateVideo(narrated bool) domain.LongVideo {
	return domain.LongVideo{ID: "v1", Prompt: "the sea", Model: defaultModel, LanguageCode: "en", EnableNarration: narrated,
		VideoStyle: "auto", Status: domain.StatusCompleted, Scenes: []domain.Scene{
			{SceneNumber: 1, Prompt: "waves", Narration: "The waves."},
			{SceneNumber: 2, Prompt: "gulls"},
			{SceneNumber: 3, Prompt: "dusk", Narration: "Night falls."},
		}}
}

func TestParseRegenerateTakesTheScenesNewTexts(t *testing.T) {
	tests := []struct {
		name      string
		narrated  bool
		scene     string
		body      string
		want      domain.Scene
		renarrate bool
	}{
		{"no body keeps the texts", true, "2", ``, domain.Scene{SceneNumber: 2, Prompt: "gulls"}, false},
		{"an empty object keeps the texts", true, "2", `{}`, domain.Scene{SceneNumber: 2, Prompt: "gulls"}, false},
		{"a new prompt spoken over the scene is narrated again", true, "2", `{"prompt":"gulls at dusk"}`,
			domain.Scene{SceneNumber: 2, Prompt: "gulls at dusk"}, true},
		{"a new prompt under a narration keeps the narration", true, "1", `{"prompt":"big waves"}`,
			domain.Scene{SceneNumber: 1, Prompt: "big waves", Narration: "The waves."}, false},
		{"a new narration is narrated", true, "1", `{"narration":"The sea rolls."}`,
			domain.Scene{SceneNumber: 1, Prompt: "waves", Narration: "The sea rolls."}, true},
		{"the same narration is not narrated again", true, "3", `{"narration":"Night falls."}`,
			domain.Scene{SceneNumber: 3, Prompt: "dusk", Narration: "Night falls."}, false},
		{"a video without narration narrates nothing", false, "2", `{"prompt":"gulls at dusk"}`,
			domain.Scene{SceneNumber: 2, Prompt: "gulls at dusk"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseRegenerate(regenerateVideo(tt.narrated), tt.scene, []byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if got.Scene != tt.want || got.Renarrate != tt.renarrate {
				t.Errorf("ParseRegenerate = %+v, want scene %+v, renarrate %v", got, tt.want, tt.renarrate)
			}
		})
	}
}

func TestParseRegenerateRefusesBadRequests(t *testing.T) {
	tests := []struct {
		name, scene, body, field string
	}{
		{"scene zero", "0", ``, "scene_number"},
		{"a scene the video does not have", "4", `{}`, "scene_number"},
		{"a scene that is no number", "two", ``, "scene_number"},
		{"an unknown field", "2", `{"model":"delta-1-pro"}`, "model"},
		{"an empty prompt", "2", `{"prompt":" "}`, "prompt"},
		{"a prompt not a string", "2", `{"prompt":3}`, "prompt"},
		{"a prompt too long", "1", `{"prompt":"` + strings.Repeat("a", MaxScenePrompt+1) + `"}`, "prompt"},
		{"a prompt spoken over the scene too long to fit it", "2", `{"prompt":"` + strings.Repeat("gulls ", 60) + `"}`, "prompt"},
		{"an empty narration", "1", `{"narration":""}`, "narration"},
		{"a narration too long to fit the scene", "1", `{"narration":"` + strings.Repeat("words ", 60) + `"}`, "narration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseRegenerate(regenerateVideo(true), tt.scene, []byte(tt.body))
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
	if _, err := parseRegenerate(regenerateVideo(true), "2", []byte(`["prompt"]`)); !errors.As(err, new(*catalog.ValidationError)) {
		t.Errorf("a body that is no object = %v, want a validation error", err)
	}
}
