package httpapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/longform"
)

// oneVideoStore holds one long video for WebhookRecords.
type oneVideoStore struct{ v domain.LongVideo }

func (s oneVideoStore) GetGeneration(context.Context, string) (domain.Generation, error) {
	return domain.Generation{}, domain.ErrNotFound
}

func (s oneVideoStore) GetLongVideo(context.Context, string) (domain.LongVideo, error) {
	return s.v, nil
}

// The status view (the status routes', the list's and the long_video.*
// webhooks' body) shows the studio a video was created with, every default
// written out, and never the bytes of a data: URI of music.
func TestTheLongVideoViewShowsTheStudioItIsMadeWith(t *testing.T) {
	wav := append([]byte("RIFF\x00\x00\x00\x00WAVEfmt "), make([]byte, 1000)...)
	dataURI := "data:audio/wav;base64," + base64.StdEncoding.EncodeToString(wav)
	tests := []struct {
		name, fields string
		want         string // the studio object, as JSON
	}{
		{"the spec's request", ``,
			`{"captions":"sidecar","voice":"joanna","aspect_ratio":"landscape","transition":"cut","music_url":null,"music_volume":null,"narration_speed":1,"language":"en"}`},
		{"without narration", `,"enable_narration":false`,
			`{"captions":"none","voice":null,"aspect_ratio":"landscape","transition":"cut","music_url":null,"music_volume":null,"narration_speed":null,"language":"en"}`},
		{"another language's default voice", `,"language_code":"es"`,
			`{"captions":"sidecar","voice":"lucia","aspect_ratio":"landscape","transition":"cut","music_url":null,"music_volume":null,"narration_speed":1,"language":"es"}`},
		{"every option", `,"captions":"burned","voice":"matthew","aspect_ratio":"portrait","transition":"crossfade","music_url":"https://music.example/loop.mp3","music_volume":0.5,"narration_speed":1.25`,
			`{"captions":"burned","voice":"matthew","aspect_ratio":"portrait","transition":"crossfade","music_url":"https://music.example/loop.mp3","music_volume":0.5,"narration_speed":1.25,"language":"en"}`},
		{"music at its default volume", `,"music_url":"https://music.example/loop.mp3"`,
			`{"captions":"sidecar","voice":"joanna","aspect_ratio":"landscape","transition":"cut","music_url":"https://music.example/loop.mp3","music_volume":0.3,"narration_speed":1,"language":"en"}`},
		{"music as a data: URI", `,"music_url":"` + dataURI + `"`,
			fmt.Sprintf(`{"captions":"sidecar","voice":"joanna","aspect_ratio":"landscape","transition":"cut","music_url":"data:audio/wav (%d bytes)","music_volume":0.3,"narration_speed":1,"language":"en"}`, len(wav))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lang := `"language_code":"en",`
			if strings.Contains(tt.fields, "language_code") {
				lang = ""
			}
			body := fmt.Sprintf(`{"prompt":"the sea","model":"beta-2",%s"scenes":[{"scene_number":1,"prompt":"a harbour at dawn"}]%s}`, lang, tt.fields)
			req, err := longform.ParseCreate([]byte(body), catalog.Options{})
			if err != nil {
				t.Fatalf("create %s: %v", body, err)
			}
			v := domain.LongVideo{ID: "v1", UserID: "u1", Model: req.Model, LanguageCode: req.LanguageCode,
				EnableNarration: req.EnableNarration, Studio: req.Studio, Scenes: req.Scenes, Status: domain.StatusProcessing}
			rec, err := WebhookRecords{Store: oneVideoStore{v}, Now: func() time.Time { return time.Unix(0, 0) }}.
				WebhookRecord(context.Background(), domain.WorkLongVideo, v.ID)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := json.Marshal(rec.Data)
			if err != nil {
				t.Fatal(err)
			}
			var view struct{ Studio json.RawMessage }
			if err := json.Unmarshal(raw, &view); err != nil {
				t.Fatal(err)
			}
			if got := string(view.Studio); got != tt.want {
				t.Errorf("studio =\n %s\nwant\n %s", got, tt.want)
			}
			if strings.Contains(string(raw), "base64") {
				t.Errorf("the view holds the music's bytes: %s", raw)
			}
		})
	}
}
