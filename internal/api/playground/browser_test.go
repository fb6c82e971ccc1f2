package playground_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/local/runtime"
	"github.com/mediagen-dev/mediagen/internal/testkit/runtimetest"

	"github.com/shopspring/decimal"
)

// TestThePlaygroundMakesAnImageAVideoAndALongVideoInChromium drives the
// page in Debian's Chromium, headless, through playwright-core
// (testdata/browser.cjs): the image must be displayed, a picked file must
// be uploaded and fill its image field with its file URL, both videos must
// play, a scene of the long video re-rendered must show its new revision,
// a bad request must show its fields, the key must survive a reload;
// the long video's scene 2, given its own model and narration in the form,
// must be priced by it in the estimate and the preview, and made by it.
// Screenshots are kept in test-output/playground/.
func TestThePlaygroundMakesAnImageAVideoAndALongVideoInChromium(t *testing.T) {
	pw := browserTools(t)
	out := screenshotDir(t, "playground")
	rt := runtimetest.Start(t, runtime.Config{SimulatorLatency: 300 * time.Millisecond})

	checks, err := runBrowserScript(t, pw, "browser.cjs", "BASE_URL="+rt.BaseURL, "API_KEY="+rt.Dev.APIKey, "OUT_DIR="+out)
	t.Logf("screenshots in %s", out)
	if err != nil {
		t.Fatalf("the browser run failed (%v)\n(see %s/failure.png)", err, out)
	}

	num := func(check, field string) float64 { f, _ := checks.last(check)[field].(float64); return f }
	if w, h := num("image", "naturalWidth"), num("image", "naturalHeight"); w <= 0 || w <= h {
		t.Errorf("the image is not displayed as a 16:9 picture: %v", checks.last("image"))
	}
	if f, _ := checks.last("upload")["field"].(string); !strings.HasPrefix(f, "mediagen://files/") || num("upload", "shown") != 1 {
		t.Errorf("the file picker did not upload the image and fill the field with its file URL: %v", checks.last("upload"))
	}
	for _, v := range []string{"video", "story"} {
		if num(v, "readyState") < 2 || num(v, "currentTime") <= 0 || num(v, "videoWidth") <= 0 {
			t.Errorf("%s: the video element does not play: %v", v, checks[v])
		}
	}
	if checks.last("video")["imageCountShown"] != false {
		t.Error("the image count is offered for a video variant")
	}
	if d := num("story", "duration"); d < 14.5 || d > 15.5 {
		t.Errorf("the long-form video lasts %v s, want 15 (3 scenes of 5 s, crossfaded)", d)
	}
	// The studio options reached the video: portrait, and captions beside it.
	if w, h := num("story", "videoWidth"), num("story", "videoHeight"); w != 720 || h != 1280 {
		t.Errorf("the long-form video is %vx%v, want portrait 720x1280", w, h)
	}
	if c, _ := checks.last("story")["captions"].(string); !strings.HasSuffix(c, "/captions.vtt") {
		t.Errorf("the long-form video's captions link is %q, want its captions.vtt", c)
	}
	opts, _ := checks.last("story")["options"].(string)
	voice, _ := checks.last("voices")["chosen"].(string)
	for _, want := range []string{"portrait 720x1280", "crossfade", "voice " + voice, "captions burned", "narration ×1.2", "music at 0.4 (file)"} {
		if !strings.Contains(opts, want) {
			t.Errorf("the status view shows %q, want %q in it", opts, want)
		}
	}
	// The voices of the language were listed from the API, and the chosen
	// one's preview played.
	if voices, _ := checks.last("voices")["voices"].([]any); len(voices) < 2 || voice == "" {
		t.Errorf("voices offered: %v, want the language's voices", checks.last("voices"))
	}
	if p, _ := checks.last("voices")["preview"].(map[string]any); p["duration"] == nil || p["duration"].(float64) <= 0 {
		t.Errorf("the voice preview did not play: %v", checks.last("voices"))
	}
	// The estimate checks the options: a narration speed out of range
	// shows the service's message, a valid set keeps the price.
	if e, _ := checks.last("bad option")["text"].(string); !strings.Contains(e, "No estimate") || !strings.Contains(e, "narration_speed") {
		t.Errorf("an estimate with narration speed 2 shows %q, want the service's message naming narration_speed", e)
	}
	// Scene 2 by delta-1-pro (7.8 credits a second by prices.json, against
	// beta-2's 13): 65 + 39 + 65 = 169 credits, whatever the options.
	if e, _ := checks.last("studio estimate")["text"].(string); !strings.Contains(e, "3 scenes × 5 s = 15 s · 169 credits") {
		t.Errorf("the estimate with every option and scene 2 by delta-1-pro shows %q, want 3 scenes × 5 s = 15 s · 169 credits", e)
	}
	if m, _ := checks.last("scene model")["models"].([]any); fmt.Sprint(m) != fmt.Sprint(append([]string{""}, catalog.VideoVersions()...)) {
		t.Errorf("a scene's model select offers %v, want the video's model (\"\") then the catalog's video models", m)
	}
	if e, _ := checks.last("scene model")["text"].(string); !strings.Contains(e, "169 credits (11.2667 per second on average)") {
		t.Errorf("the estimate with scene 2 by delta-1-pro shows %q, want 169 credits at 11.2667 per second on average", e)
	}
	// The preview says what will be made before the create.
	preview, _ := checks.last("preview")["text"].(string)
	for _, want := range []string{"Preview: 3 scenes, 15 s", "portrait 720x1280", "crossfade", "voice " + voice, "captions burned",
		"narration ×1.2", "music at 0.4 (file)", "Total: 169 credits"} {
		if !strings.Contains(preview, want) {
			t.Errorf("the preview %q lacks %q", preview, want)
		}
	}
	wantScenes := []any{"Scene 1 · beta-2 · 5 s · its prompt spoken",
		"Scene 2 · delta-1-pro (its own) · 5 s · narration: “The gulls call over the pier.”",
		"Scene 3 · beta-2 · 5 s · its prompt spoken"}
	if got, _ := checks.last("preview")["scenes"].([]any); fmt.Sprint(got) != fmt.Sprint(wantScenes) {
		t.Errorf("the preview's scenes %q, want %q", got, wantScenes)
	}
	// The service received scene 2's model and narration: the simulator
	// made it by delta-1-pro, the others by beta-2.
	id, _ := checks.last("story")["id"].(string)
	v, err := rt.Store.GetLongVideo(context.Background(), id)
	if err != nil {
		t.Fatalf("the long video %q: %v", id, err)
	}
	if sc := v.Scenes[1]; sc.Model != "delta-1-pro" || sc.Narration != "The gulls call over the pier." || v.Scenes[0].Model != "" {
		t.Errorf("the service received scenes %+v; want scene 2 with its own model and narration", v.Scenes)
	}
	for n, want := range map[int]string{1: "provider-b/beta-2", 2: "provider-e/delta-1-pro", 3: "provider-b/beta-2"} {
		if p, ok := rt.Simulator.Lookup(v.SceneStatus[n].ID); !ok || p.Model != want {
			t.Errorf("scene %d was made by %q (found: %v), want %s", n, p.Model, ok, want)
		}
	}
	if !v.CreditsHeld.Equal(decimal.NewFromInt(169)) {
		t.Errorf("the video held %s credits, want the estimate's 169", v.CreditsHeld)
	}
	if e, _ := checks.last("bad input")["error"].(string); !strings.Contains(e, "input.seconds: is required") {
		t.Errorf("a bad request shows %q, want the envelope's field message", e)
	}
	if marked, _ := checks.last("bad input")["marked"].([]any); len(marked) != 1 || marked[0] != "seconds" {
		t.Errorf("fields marked invalid: %v, want [seconds]", checks.last("bad input")["marked"])
	}
	if checks.last("key kept")["kept"] != true {
		t.Error("the API key was not kept across a reload")
	}
	if e, _ := checks.last("estimate")["text"].(string); !strings.Contains(e, "3 scenes × 5 s = 15 s · 195 credits") {
		t.Errorf("the estimate shows %q, want 3 scenes × 5 s = 15 s · 195 credits", e)
	}
	// Re-rendering scene 2 of the completed video shows its new revision.
	if src, _ := checks.last("story regen")["src"].(string); !strings.HasSuffix(src, "/r2/final.mp4") || num("story regen", "currentTime") <= 0 {
		t.Errorf("after the re-render of scene 2 the page plays %v; want revision 2's final video", checks.last("story regen"))
	}
	if s, _ := checks.last("story regen")["status"].(string); !strings.Contains(s, "revision 2: scene 2 re-rendered") {
		t.Errorf("after the re-render the status says %q, want revision 2: scene 2 re-rendered", s)
	}
	// The page follows each job on its event stream (fetch and a
	// ReadableStream: EventSource cannot send the key), never polling.
	if f := checks.last("follows"); num("follows", "streams") < 4 || num("follows", "statusReads") != 0 {
		t.Errorf("the page followed its jobs with %v; want a stream each for the image, the video, the long video and its re-render, and no status reads", f)
	}
	for _, shot := range []string{"image.png", "video.png", "story-estimate.png", "story-preview.png", "story.png", "story-regen.png"} {
		if info, err := os.Stat(filepath.Join(out, shot)); err != nil || info.Size() == 0 {
			t.Errorf("screenshot %s missing: %v", shot, err)
		}
	}
}
