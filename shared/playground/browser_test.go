package playground_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/shared/local/runtime"
	"github.com/mediagen-dev/mediagen/shared/local/runtime/runtimetest"
)

// TestThePlaygroundMakesAnImageAVideoAndALongVideoInChromium drives the
// page in Debian's Chromium, headless, through playwright-core
// (testdata/browser.cjs): the image must be displayed, both videos must
// play, a bad request must show its fields, the key must survive a reload.
// Screenshots are kept in test-output/playground/.
func TestThePlaygroundMakesAnImageAVideoAndALongVideoInChromium(t *testing.T) {
	pw := browserTools(t)
	out := screenshotDir(t, "playground")
	rt := runtimetest.Start(t, runtime.Config{SimulatorLatency: 300 * time.Millisecond})

	checks, err := runBrowserScript(t, pw, 4*time.Minute, "browser.cjs", "BASE_URL="+rt.BaseURL, "API_KEY="+rt.Dev.APIKey, "OUT_DIR="+out)
	t.Logf("screenshots in %s", out)
	if err != nil {
		t.Fatalf("the browser run failed (%v)\n(see %s/failure.png)", err, out)
	}

	num := func(check, field string) float64 { f, _ := checks.last(check)[field].(float64); return f }
	if w, h := num("image", "naturalWidth"), num("image", "naturalHeight"); w <= 0 || w <= h {
		t.Errorf("the image is not displayed as a 16:9 picture: %v", checks.last("image"))
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
		t.Errorf("the long-form video lasts %v s, want 15 (3 scenes of 5 s)", d)
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
	// The page follows each job on its event stream (fetch and a
	// ReadableStream: EventSource cannot send the key), never polling.
	if f := checks.last("follows"); num("follows", "streams") < 3 || num("follows", "statusReads") != 0 {
		t.Errorf("the page followed its jobs with %v; want a stream each for the image, the video and the long video, and no status reads", f)
	}
	for _, shot := range []string{"image.png", "video.png", "story-estimate.png", "story.png"} {
		if info, err := os.Stat(filepath.Join(out, shot)); err != nil || info.Size() == 0 {
			t.Errorf("screenshot %s missing: %v", shot, err)
		}
	}
}
