package runtime_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/mediagen-dev/mediagen/shared/domain"
	"github.com/mediagen-dev/mediagen/shared/ffmpeg"
	"github.com/mediagen-dev/mediagen/shared/local/runtime"
	"github.com/mediagen-dev/mediagen/shared/local/simulator"
	"github.com/mediagen-dev/mediagen/shared/longstory"
)

// studioVideo makes a long video of body through the HTTP API and answers
// its final status and the downloaded mp4.
func studioVideo(t *testing.T, rt *runtime.Runtime, key string, body map[string]any) (answer, string) {
	t.Helper()
	a := call(t, rt, http.MethodPost, "/api/long-story/videos", key, body)
	if a.status != http.StatusOK {
		t.Fatalf("create: HTTP %d %s", a.status, a.body)
	}
	final := waitStory(t, rt, key, a.str("video_id"))
	if final.str("status") != "completed" {
		t.Fatalf("video: %s", final.body)
	}
	path, ok := download(t, final.str("final_video_url"), t.TempDir(), "studio.mp4")
	if !ok {
		t.FailNow()
	}
	return final, path
}

func TestPortraitLongVideoIs720x1280(t *testing.T) {
	rt := start(t, storyConfig())
	owner := newAccount(t, rt, domain.PlanEnterprise, 10000)
	scenes := []storyScene{{1, "a lighthouse on a cliff"}, {2, "a boat leaves the harbour"}}
	for _, model := range []string{"beta-2", "delta-1-pro"} {
		t.Run(model, func(t *testing.T) {
			body := storyBody("The coast", "en", false, "auto", scenes)
			body["model"], body["aspect_ratio"] = model, "portrait"
			_, path := studioVideo(t, rt, owner.APIKey, body)
			ff := ffmpeg.Runner{}
			info, err := ff.Probe(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			v, ok := info.Video()
			if !ok || v.Width != 720 || v.Height != 1280 {
				t.Fatalf("video stream %+v, want 720x1280", v)
			}
			// The scenes fill the upright frame: a pixel near the top
			// shows each scene's own colour, not a pad bar.
			for _, s := range scenes {
				want := simulator.ColorFor(longstory.ScenePrompt("auto", "The coast", domain.Scene{SceneNumber: s.n, Prompt: s.prompt}))
				at := float64(s.n-1)*5 + 2.5
				got, err := ff.PixelAt(context.Background(), path, at, 360, 20)
				if err != nil {
					t.Fatal(err)
				}
				if diff(got.R, want.R) > 12 || diff(got.G, want.G) > 12 || diff(got.B, want.B) > 12 {
					t.Errorf("second %.1f at (360,20) shows %v, want scene %d's colour %v", at, got, s.n, want)
				}
			}
		})
	}
}

func TestPortraitOnAModelWithoutItIs400BeforeAnyCreditMoves(t *testing.T) {
	rt := start(t, storyConfig())
	owner := newAccount(t, rt, domain.PlanEnterprise, 10000)
	before := account(t, rt, owner.UserID)
	body := storyBody("The coast", "en", true, "auto", []storyScene{{1, "a lighthouse"}})
	body["model"], body["aspect_ratio"] = "video-01", "portrait"
	estimate := map[string]any{"model": "video-01", "scene_count": 1, "aspect_ratio": "portrait"}
	for route, body := range map[string]map[string]any{"/api/long-story/videos": body, "/api/long-story/videos/estimate": estimate} {
		a := call(t, rt, http.MethodPost, route, owner.APIKey, body)
		checkEnvelope(t, a, http.StatusBadRequest)
		if !strings.Contains(string(a.body), `"field":"aspect_ratio"`) || !strings.Contains(string(a.body), "beta-2") {
			t.Errorf("%s: %s, want a 400 naming aspect_ratio and the models that make portrait", route, a.body)
		}
	}
	bad := storyBody("The coast", "en", true, "auto", []storyScene{{1, "a lighthouse"}})
	bad["aspect_ratio"] = "square"
	checkEnvelope(t, call(t, rt, http.MethodPost, "/api/long-story/videos", owner.APIKey, malformed(bad)), http.StatusBadRequest)
	after := account(t, rt, owner.UserID)
	if !after.Balance.Equal(before.Balance) || !after.Held.IsZero() {
		t.Errorf("refused requests moved credits: balance %s → %s, held %s", before.Balance, after.Balance, after.Held)
	}
}
