package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
)

// A long video's status view carries the studio it is made with; the
// client reads it as LongVideoStudio, nulls as nil.
func TestLongVideoReadsItsStudio(t *testing.T) {
	views := map[string]string{
		"every option": `{"id":"8d54aa5c-d4be-4204-922e-4d6e4d2df4a8","status":"completed","final_video_url":"","total_duration":10,"error":null,"progress":100,"scenes":[],"model":"beta-2",` +
			`"studio":{"captions":"burned","voice":"matthew","aspect_ratio":"portrait","transition":"crossfade","music_url":"https://music.example/loop.mp3","music_volume":0.4,"narration_speed":1.1,"language":"en"},"created_at":"2026-12-01T17:43:38Z","data_removed":false}`,
		"unnarrated": `{"id":"8d54aa5c-d4be-4204-922e-4d6e4d2df4a8","status":"processing","final_video_url":"","total_duration":0,"error":null,"progress":0,"scenes":[],"model":"beta-2",` +
			`"studio":{"captions":"none","voice":null,"aspect_ratio":"landscape","transition":"cut","music_url":null,"music_volume":null,"narration_speed":null,"language":"fr"},"created_at":"2026-12-01T17:43:38Z","data_removed":false}`,
	}
	for name, view := range views {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(view))
			}))
			defer srv.Close()
			v, err := New(srv.URL, "mgk_test_key").LongVideo(context.Background(), "8d54aa5c-d4be-4204-922e-4d6e4d2df4a8")
			if err != nil {
				t.Fatal(err)
			}
			var st LongVideoStudio = v.Studio
			switch name {
			case "every option":
				if st.Captions != "burned" || st.Voice == nil || *st.Voice != "matthew" || st.AspectRatio != "portrait" || st.Transition != "crossfade" ||
					st.MusicURL == nil || *st.MusicURL != "https://music.example/loop.mp3" || st.MusicVolume == nil || *st.MusicVolume != 0.4 ||
					st.NarrationSpeed == nil || *st.NarrationSpeed != 1.1 || st.Language != "en" {
					t.Errorf("studio %+v", st)
				}
			default:
				if st.Captions != "none" || st.Voice != nil || st.MusicURL != nil || st.MusicVolume != nil || st.NarrationSpeed != nil || st.Language != "fr" {
					t.Errorf("studio %+v, want no voice, speed nor music", st)
				}
			}
		})
	}
}
