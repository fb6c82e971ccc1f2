package simulator

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/adapters/ffmpeg"
	"github.com/mediagen-dev/mediagen/internal/testkit/clocktest"
	"github.com/mediagen-dev/mediagen/internal/testkit/waitfor"
)

const (
	videoModel = "sim/video"
	imageModel = "sim/image"
	testToken  = "test-token"
)

// harness is a simulator behind a real HTTP server.
type harness struct {
	t   *testing.T
	sim *Simulator
	srv *httptest.Server
	ff  ffmpeg.Runner
}

func start(t *testing.T, cfg Config) *harness {
	t.Helper()
	ff := ffmpeg.Runner{Timeout: 60 * time.Second}
	if err := ff.Available(); err != nil {
		t.Fatalf("ffmpeg is needed for this test: %v", err)
	}
	if cfg.Models == nil {
		cfg.Models = map[string]string{videoModel: kindVideo, imageModel: kindImage}
	}
	if cfg.Token == "" {
		cfg.Token = testToken
	}
	if cfg.WorkDir == "" {
		cfg.WorkDir = t.TempDir()
	}
	cfg.FFmpeg = ff
	srv := httptest.NewUnstartedServer(nil)
	cfg.BaseURL = "http://" + srv.Listener.Addr().String()
	sim, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = sim
	srv.Start()
	t.Cleanup(func() {
		sim.Close()
		srv.Close()
	})
	return &harness{t: t, sim: sim, srv: srv, ff: ff}
}

// call sends an authenticated request and decodes a JSON answer into out
// (when not nil), returning the status code.
func (h *harness) call(method, path string, body any, out any) int {
	h.t.Helper()
	var reader io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		reader = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			h.t.Fatal(err)
		}
		reader = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, h.srv.URL+path, reader)
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" && (resp.StatusCode < 400 || ct != "application/problem+json") {
		h.t.Errorf("%s %s: Content-Type %q, want application/json", method, path, ct)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			h.t.Fatalf("%s %s: answer %s: %v", method, path, raw, err)
		}
	}
	return resp.StatusCode
}

func (h *harness) create(model string, input map[string]any, webhook string) Prediction {
	h.t.Helper()
	body := map[string]any{"input": input}
	if webhook != "" {
		body["webhook"], body["webhook_events_filter"] = webhook, []string{eventCompleted}
	}
	var p Prediction
	if code := h.call("POST", "/v1/models/"+model+"/predictions", body, &p); code != http.StatusCreated {
		h.t.Fatalf("create %s: HTTP %d", model, code)
	}
	return p
}

func (h *harness) get(id string) Prediction {
	h.t.Helper()
	var p Prediction
	if code := h.call("GET", "/v1/predictions/"+id, nil, &p); code != http.StatusOK {
		h.t.Fatalf("get %s: HTTP %d", id, code)
	}
	return p
}

// waitFor polls until the prediction's status satisfies done.
func (h *harness) waitFor(id string, done func(status string) bool) Prediction {
	h.t.Helper()
	p, ok := waitfor.Value(h.t, time.Minute, "prediction "+id+" to change state", func() (Prediction, bool) {
		p := h.get(id)
		return p, done(p.Status)
	})
	if !ok {
		h.t.Fatalf("prediction %s still %s", id, p.Status)
	}
	return p
}

func (h *harness) waitFinal(id string) Prediction { h.t.Helper(); return h.waitFor(id, final) }

// download fetches an output without credentials (like a CDN) into a file.
func (h *harness) download(url string) (path, contentType string, body []byte) {
	h.t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		h.t.Fatalf("GET %s: HTTP %d: %s", url, resp.StatusCode, body)
	}
	path = filepath.Join(h.t.TempDir(), filepath.Base(url))
	if err := os.WriteFile(path, body, 0o600); err != nil {
		h.t.Fatal(err)
	}
	return path, resp.Header.Get("Content-Type"), body
}

// frame decodes the video frame shown at at seconds.
func (h *harness) frame(path string, at float64) *image.NRGBA {
	h.t.Helper()
	out := filepath.Join(h.t.TempDir(), "frame.png")
	if err := h.ff.Run(context.Background(), "-ss", strconv.FormatFloat(at, 'f', 3, 64), "-i", path, "-frames:v", "1", "-pix_fmt", "rgba", "-update", "1", out); err != nil {
		h.t.Fatal(err)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		h.t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		h.t.Fatal(err)
	}
	nrgba, ok := img.(*image.NRGBA)
	if !ok {
		h.t.Fatalf("decoded %T, want *image.NRGBA", img)
	}
	return nrgba
}

func (h *harness) succeeded(p Prediction, outputs int) {
	h.t.Helper()
	if p.Status != statusSucceeded {
		errText := ""
		if p.Error != nil {
			errText = *p.Error
		}
		h.t.Fatalf("status %s, error %q, logs:\n%s", p.Status, errText, p.Logs)
	}
	if len(outputURLs(p)) != outputs {
		h.t.Fatalf("output = %v, want %d URLs", p.Output, outputs)
	}
}

func TestVideoHasTheRequestedShapeAndColour(t *testing.T) {
	h := start(t, Config{})
	tests := []struct {
		name          string
		input         map[string]any
		width, height int
		seconds, fps  float64
		audio         bool
	}{
		{"720p 16:9 for 2 s", map[string]any{"resolution": "720p", "aspect_ratio": "16:9", "duration": "2"}, 1280, 720, 2, 24, false},
		{"generate_audio adds a track", map[string]any{"resolution": "480p", "duration": 1, "generate_audio": true}, 854, 480, 1, 24, true},
		{"portrait is 9:16", map[string]any{"aspect_ratio": "portrait", "seconds": "1"}, 720, 1280, 1, 24, false},
		{"fps 30 is honoured", map[string]any{"resolution": "480p", "aspect_ratio": "4:3", "duration": 1, "fps": "30"}, 640, 480, 1, 30, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := *h
			h.t = t
			prompt := "a lighthouse at dusk: " + tt.name
			tt.input["prompt"] = prompt
			p := h.waitFinal(h.create(videoModel, tt.input, "").ID)
			h.succeeded(p, 1)
			if !strings.HasSuffix(outputURLs(p)[0], "/files/"+p.ID+"/0.mp4") {
				t.Errorf("output URL %s, want .../files/%s/0.mp4", outputURLs(p)[0], p.ID)
			}
			path, ctype, _ := h.download(outputURLs(p)[0])
			if ctype != "video/mp4" {
				t.Errorf("Content-Type %q, want video/mp4", ctype)
			}
			info, err := h.ff.Probe(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			v, ok := info.Video()
			if !ok || v.Codec != "h264" || v.Width != tt.width || v.Height != tt.height || v.FPS != tt.fps {
				t.Errorf("video stream %+v, want h264 %dx%d at %g fps", v, tt.width, tt.height, tt.fps)
			}
			if math.Abs(info.Duration-tt.seconds) > 0.1 {
				t.Errorf("duration %.3f s, want %g within 0.1", info.Duration, tt.seconds)
			}
			a, hasAudio := info.Audio()
			if hasAudio != tt.audio || (hasAudio && a.Codec != "aac") {
				t.Errorf("audio stream %+v (present %t), want present %t and aac", a, hasAudio, tt.audio)
			}
			if a, b := h.frame(path, 0.1), h.frame(path, tt.seconds*0.6); bytes.Equal(a.Pix, b.Pix) {
				t.Error("frames at two times are identical: nothing moves")
			}
			for _, at := range []float64{0, tt.seconds / 2} {
				got, err := h.ff.PixelAt(context.Background(), path, at, cleanCorner/2, cleanCorner/2)
				if err != nil {
					t.Fatal(err)
				}
				if d := channelDiff(got, ColorFor(prompt)); d > 6 {
					t.Errorf("corner at %gs = %v, want ColorFor(prompt) = %v", at, got, ColorFor(prompt))
				}
			}
		})
	}
}

func TestImagesHaveTheRequestedFormatSizeAndCount(t *testing.T) {
	h := start(t, Config{})
	nasty := strings.ToValidUTF8(strings.Repeat("it's 100% \\ a:b, c;d [e] %{pts} \n\t ünïcødé 世界 ", 50000/40)[:50000], "")
	tests := []struct {
		name          string
		input         map[string]any
		count         int
		ext, ctype    string
		width, height int
	}{
		{"png 16:9 1K", map[string]any{"aspect_ratio": "16:9", "resolution": "1K"}, 1, ".png", "image/png", 1024, 576},
		{"jpeg by default square", map[string]any{"output_format": "jpeg"}, 1, ".jpg", "image/jpeg", 1024, 1024},
		{"webp portrait", map[string]any{"output_format": "webp", "aspect_ratio": "9:16"}, 1, ".webp", "image/webp", 576, 1024},
		{"num_outputs 3", map[string]any{"num_outputs": "3", "aspect_ratio": "4:3"}, 3, ".png", "image/png", 1024, 768},
		{"num_images as a number, jpg", map[string]any{"num_images": 2, "output_format": "jpg", "aspect_ratio": "match_input_image"}, 2, ".jpg", "image/jpeg", 1024, 1024},
		{"50,000-char prompt of special characters", map[string]any{"prompt": nasty, "aspect_ratio": "21:9"}, 1, ".png", "image/png", 1024, 438},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := *h
			h.t = t
			if _, ok := tt.input["prompt"]; !ok {
				tt.input["prompt"] = "a red fox in snow, " + tt.name
			}
			prompt := tt.input["prompt"].(string)
			p := h.waitFinal(h.create(imageModel, tt.input, "").ID)
			h.succeeded(p, tt.count)
			for i, url := range outputURLs(p) {
				if want := "/files/" + p.ID + "/" + string(rune('0'+i)) + tt.ext; !strings.HasSuffix(url, want) {
					t.Errorf("output %d = %s, want .../%s", i, url, want)
				}
				path, ctype, body := h.download(url)
				if ctype != tt.ctype {
					t.Errorf("Content-Type %q, want %q", ctype, tt.ctype)
				}
				checkImage(t, h.ff, path, tt.ctype, body, tt.width, tt.height, ColorFor(prompt))
			}
		})
	}
}

// checkImage checks magic bytes, size and the clean corner's colour.
func checkImage(t *testing.T, ff ffmpeg.Runner, path, ctype string, body []byte, width, height int, want color.RGBA) {
	t.Helper()
	var img image.Image
	var err error
	tolerance := 0
	switch ctype {
	case "image/png":
		if !bytes.HasPrefix(body, []byte("\x89PNG\r\n\x1a\n")) {
			t.Fatalf("not a PNG: % x", body[:8])
		}
		img, err = png.Decode(bytes.NewReader(body))
	case "image/jpeg":
		if !bytes.HasPrefix(body, []byte{0xff, 0xd8, 0xff}) {
			t.Fatalf("not a JPEG: % x", body[:3])
		}
		img, err = jpeg.Decode(bytes.NewReader(body))
		tolerance = 6
	case "image/webp":
		if len(body) < 12 || string(body[:4]) != "RIFF" || string(body[8:12]) != "WEBP" {
			t.Fatalf("not a WebP: % x", body[:12])
		}
		tolerance = 6
	}
	if err != nil {
		t.Fatalf("decode %s: %v", ctype, err)
	}
	if img != nil && (img.Bounds().Dx() != width || img.Bounds().Dy() != height) {
		t.Errorf("decoded size %v, want %dx%d", img.Bounds().Size(), width, height)
	}
	info, err := ff.Probe(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := info.Video(); !ok || v.Width != width || v.Height != height {
		t.Errorf("probed %+v, want %dx%d", v, width, height)
	}
	got, err := ff.PixelAt(context.Background(), path, 0, 5, 5)
	if err != nil {
		t.Fatal(err)
	}
	if d := channelDiff(got, want); d > tolerance {
		t.Errorf("corner = %v, want ColorFor(prompt) = %v within %d", got, want, tolerance)
	}
}

func TestPredictionFollowsTheProtocolShape(t *testing.T) {
	h := start(t, Config{Latency: 200 * time.Millisecond})
	var raw map[string]any
	body := map[string]any{"version": imageModel, "input": map[string]any{"prompt": "shape check", "resolution": "1K", "aspect_ratio": "1:1"}}
	if code := h.call("POST", "/v1/predictions", body, &raw); code != http.StatusCreated {
		t.Fatalf("create via /v1/predictions: HTTP %d", code)
	}
	for _, key := range []string{"id", "model", "version", "input", "status", "output", "error", "logs", "created_at", "started_at", "completed_at", "urls"} {
		if _, ok := raw[key]; !ok {
			t.Errorf("prediction lacks %q: %v", key, raw)
		}
	}
	if raw["status"] != statusStarting || raw["output"] != nil || raw["error"] != nil || raw["started_at"] != nil {
		t.Errorf("new prediction = %v, want starting with null output, error, started_at", raw)
	}
	id, _ := raw["id"].(string)
	if !regexp.MustCompile(`^[a-z2-7]{26}$`).MatchString(id) {
		t.Errorf("id %q is not 26 lowercase base32 characters", id)
	}
	if raw["model"] != imageModel {
		t.Errorf("model = %v, want %s", raw["model"], imageModel)
	}
	urls, _ := raw["urls"].(map[string]any)
	if urls["get"] != h.srv.URL+"/v1/predictions/"+id || urls["cancel"] != h.srv.URL+"/v1/predictions/"+id+"/cancel" {
		t.Errorf("urls = %v", urls)
	}
	if in, _ := raw["input"].(map[string]any); in["prompt"] != "shape check" {
		t.Errorf("input = %v, want the input echoed", raw["input"])
	}

	p := h.waitFinal(id)
	h.succeeded(p, 1)
	stamp := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`)
	for name, ts := range map[string]*string{"created_at": &p.CreatedAt, "started_at": p.StartedAt, "completed_at": p.CompletedAt} {
		if ts == nil || !stamp.MatchString(*ts) {
			t.Errorf("%s = %v, want RFC 3339 UTC with microseconds", name, ts)
		}
	}
	if *p.StartedAt < p.CreatedAt || *p.CompletedAt < *p.StartedAt {
		t.Errorf("timestamps out of order: created %s started %s completed %s", p.CreatedAt, *p.StartedAt, *p.CompletedAt)
	}
	if p.Error != nil || !strings.Contains(p.Logs, "rendering") {
		t.Errorf("error %v, logs %q", p.Error, p.Logs)
	}
}

func TestFailMarkerFailsThePredictionWithItsError(t *testing.T) {
	h := start(t, Config{})
	p := h.waitFinal(h.create(videoModel, map[string]any{"prompt": "a storm [simulate:fail] at sea"}, "").ID)
	if p.Status != statusFailed || p.Error == nil || *p.Error != SimulatedFailure || p.Output != nil {
		t.Fatalf("prediction = %+v, want failed with %q and no output", p, SimulatedFailure)
	}
	if p.CompletedAt == nil {
		t.Error("a failed prediction has no completed_at")
	}
}

func TestSlowMarkerAddsLatency(t *testing.T) {
	clk := clocktest.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	h := start(t, Config{Clock: clk})
	p := h.create(imageModel, map[string]any{"prompt": "[simulate:slow] [simulate:fail]"}, "")
	if !clk.WaitForTimers(1, time.Minute) {
		t.Fatal("the job never waited its latency")
	}
	clk.Advance(slowExtraLatency - time.Millisecond)
	if got := h.get(p.ID).Status; got != statusStarting {
		t.Errorf("status %v after the create = %s, want still starting", slowExtraLatency-time.Millisecond, got)
	}
	clk.Advance(time.Millisecond)
	done := h.waitFinal(p.ID)
	created, err := time.Parse(time.RFC3339Nano, p.CreatedAt)
	if err != nil {
		t.Fatal(err)
	}
	completed, err := time.Parse(time.RFC3339Nano, *done.CompletedAt)
	if err != nil {
		t.Fatal(err)
	}
	if took := completed.Sub(created); took != slowExtraLatency {
		t.Errorf("completed %v after it was created, want %v", took, slowExtraLatency)
	}
}

// A held prediction stays starting while one created with it completes,
// until its cancel.
func TestHoldMarkerKeepsThePredictionStartingUntilCanceled(t *testing.T) {
	h := start(t, Config{})
	held := h.create(imageModel, map[string]any{"prompt": "a lantern " + MarkerHold}, "")
	other := h.create(imageModel, map[string]any{"prompt": "a lantern"}, "")
	if p := h.waitFinal(other.ID); p.Status != statusSucceeded {
		t.Fatalf("the prediction created with the held one ended %s", p.Status)
	}
	if got := h.get(held.ID).Status; got != statusStarting {
		t.Fatalf("the held prediction is %s after the other one completed, want starting", got)
	}
	var canceled Prediction
	if code := h.call("POST", "/v1/predictions/"+held.ID+"/cancel", nil, &canceled); code != http.StatusOK || canceled.Status != StatusCanceled {
		t.Fatalf("cancel: %d %+v", code, canceled)
	}
	if p := h.waitFinal(held.ID); p.Status != StatusCanceled {
		t.Errorf("the held prediction ended %s after its cancel, want canceled", p.Status)
	}
}

func TestCancelStopsThePrediction(t *testing.T) {
	tests := []struct {
		name    string
		latency time.Duration
		input   map[string]any
		// waitFor is the status to reach before cancelling.
		waitFor string
	}{
		{"while starting", time.Minute, map[string]any{"prompt": "never starts", "duration": 1}, statusStarting},
		// A minute of 1080p takes long enough to cancel mid-render.
		{"while rendering", 0, map[string]any{"prompt": "long render", "duration": 60, "resolution": "1080p"}, statusProcessing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hooks := webhookReceiver(t)
			h := start(t, Config{Latency: tt.latency})
			p := h.create(videoModel, tt.input, hooks.URL)
			h.waitFor(p.ID, func(s string) bool { return s == tt.waitFor })

			var canceled Prediction
			if code := h.call("POST", "/v1/predictions/"+p.ID+"/cancel", nil, &canceled); code != http.StatusOK {
				t.Fatalf("cancel: HTTP %d", code)
			}
			if canceled.Status != StatusCanceled || canceled.CompletedAt == nil || canceled.Output != nil {
				t.Fatalf("cancel answered %+v, want canceled without output", canceled)
			}
			// The job notices, kills ffmpeg, removes its files and calls the hook.
			hook := hooks.next(t)
			if hook.ID != p.ID || hook.Status != StatusCanceled {
				t.Errorf("webhook got %s %s, want %s canceled", hook.ID, hook.Status, p.ID)
			}
			if _, err := os.Stat(filepath.Join(h.sim.WorkDir(), p.ID)); !os.IsNotExist(err) {
				t.Errorf("outputs of the canceled prediction still exist (stat: %v)", err)
			}
			if got := h.get(p.ID); got.Status != StatusCanceled {
				t.Errorf("status after cancel = %s, want canceled", got.Status)
			}
			// Cancelling a final prediction changes nothing.
			var again Prediction
			if code := h.call("POST", "/v1/predictions/"+p.ID+"/cancel", nil, &again); code != http.StatusOK || again.Status != StatusCanceled || *again.CompletedAt != *canceled.CompletedAt {
				t.Errorf("second cancel: HTTP %d %+v", code, again)
			}
		})
	}
}

func TestRendersBeyondTheLimitWaitInStarting(t *testing.T) {
	h := start(t, Config{MaxConcurrentRenders: 1})
	long := h.create(videoModel, map[string]any{"prompt": "hogs the slot", "duration": 60, "resolution": "1080p"}, "")
	h.waitFor(long.ID, func(s string) bool { return s == statusProcessing })
	queued := h.create(imageModel, map[string]any{"prompt": "waits its turn"}, "")
	if !waitfor.Condition(t, time.Minute, "the second job to wait for a render slot", func() bool { return h.sim.waitingForSlot.Load() == 1 }) {
		t.FailNow()
	}
	if got := h.get(queued.ID).Status; got != statusStarting {
		t.Errorf("second prediction is %s while the only slot is busy, want starting", got)
	}
	h.call("POST", "/v1/predictions/"+long.ID+"/cancel", nil, nil)
	h.succeeded(h.waitFinal(queued.ID), 1)
}

func TestCloseStopsRunningJobs(t *testing.T) {
	h := start(t, Config{})
	p := h.create(videoModel, map[string]any{"prompt": "interrupted", "duration": 60, "resolution": "1080p"}, "")
	h.waitFor(p.ID, func(s string) bool { return s == statusProcessing })
	begin := time.Now()
	h.sim.Close()
	if elapsed := time.Since(begin); elapsed > 5*time.Second {
		t.Errorf("Close took %v", elapsed)
	}
	if got := h.get(p.ID); got.Status != statusFailed {
		t.Errorf("status after Close = %s, want failed", got.Status)
	}
	var detail map[string]any
	if code := h.call("POST", "/v1/models/"+imageModel+"/predictions", map[string]any{"input": map[string]any{"prompt": "late"}}, &detail); code != http.StatusServiceUnavailable {
		t.Errorf("create after Close: HTTP %d %v, want 503", code, detail)
	}
}

func TestWebhookReceivesTheFinalPrediction(t *testing.T) {
	hooks := webhookReceiver(t)
	h := start(t, Config{})
	tests := []struct {
		name, prompt, status string
	}{
		{"succeeded", "a quiet harbour", statusSucceeded},
		{"failed", "a loud harbour [simulate:fail]", statusFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := h.create(imageModel, map[string]any{"prompt": tt.prompt}, hooks.URL)
			hook := hooks.next(t)
			if hook.ID != p.ID || hook.Status != tt.status {
				t.Fatalf("webhook got %s %s, want %s %s", hook.ID, hook.Status, p.ID, tt.status)
			}
			if got := h.get(p.ID); !equalJSON(t, got, hook.Prediction) {
				t.Errorf("webhook body differs from GET:\n%+v\n%+v", hook.Prediction, got)
			}
			if hook.contentType != "application/json" || hook.webhookID == "" {
				t.Errorf("webhook headers: Content-Type %q, webhook-id %q", hook.contentType, hook.webhookID)
			}
		})
	}
}

func TestWebhookEventsFilterIsHonoured(t *testing.T) {
	tests := []struct {
		name   string
		filter []string
		want   []string // the statuses the events carry, in order
	}{
		{"start only", []string{eventStart}, []string{statusStarting}},
		{"no filter: every event", nil, []string{statusStarting, statusFailed}},
		{"completed only", []string{eventCompleted}, []string{statusFailed}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hooks := webhookReceiver(t)
			h := start(t, Config{})
			var p Prediction
			body := map[string]any{"input": map[string]any{"prompt": "x [simulate:fail]"}, "webhook": hooks.URL}
			if tt.filter != nil {
				body["webhook_events_filter"] = tt.filter
			}
			if code := h.call("POST", "/v1/models/"+imageModel+"/predictions", body, &p); code != http.StatusCreated {
				t.Fatalf("create: HTTP %d", code)
			}
			for _, want := range tt.want {
				if got := hooks.next(t); got.Status != want {
					t.Errorf("event with status %s, want %s", got.Status, want)
				}
			}
			select {
			case got := <-hooks.received:
				t.Errorf("webhook called with %s beyond the filter", got.Status)
			case <-time.After(300 * time.Millisecond):
			}
		})
	}
}

func TestTokenIsRequiredOnTheAPIButNotOnFiles(t *testing.T) {
	h := start(t, Config{})
	p := h.waitFinal(h.create(imageModel, map[string]any{"prompt": "auth"}, "").ID)
	h.succeeded(p, 1)
	tests := []struct {
		name, method, path, auth string
		want                     int
	}{
		{"no header", "GET", "/v1/predictions/" + p.ID, "", 401},
		{"wrong token", "GET", "/v1/predictions/" + p.ID, "Bearer nope", 401},
		{"wrong scheme", "GET", "/v1/predictions/" + p.ID, "Token " + testToken, 401},
		{"create without token", "POST", "/v1/models/" + imageModel + "/predictions", "", 401},
		{"cancel without token", "POST", "/v1/predictions/" + p.ID + "/cancel", "", 401},
		{"right token", "GET", "/v1/predictions/" + p.ID, "Bearer " + testToken, 200},
		{"files need none", "GET", strings.TrimPrefix(outputURLs(p)[0], h.srv.URL), "", 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, h.srv.URL+tt.path, strings.NewReader(`{"input":{"prompt":"x"}}`))
			if tt.auth != "" {
				req.Header.Set("Authorization", tt.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Fatalf("HTTP %d, want %d", resp.StatusCode, tt.want)
			}
			if tt.want == 401 {
				var e struct{ Detail string }
				if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || e.Detail == "" {
					t.Errorf("401 body is not {\"detail\":...}: %v", err)
				}
			}
		})
	}
}

func TestBadRequestsAreRefused(t *testing.T) {
	h := start(t, Config{})
	model := "/v1/models/" + imageModel + "/predictions"
	tests := []struct {
		name, method, path string
		body               any
		want               int
	}{
		{"unknown model", "POST", "/v1/models/nobody/nothing/predictions", map[string]any{"input": map[string]any{"prompt": "x"}}, 404},
		{"unknown version", "POST", "/v1/predictions", map[string]any{"version": "nobody/nothing", "input": map[string]any{"prompt": "x"}}, 404},
		{"unknown prediction", "GET", "/v1/predictions/doesnotexist", nil, 404},
		{"cancel unknown prediction", "POST", "/v1/predictions/doesnotexist/cancel", nil, 404},
		{"unknown file", "GET", "/files/doesnotexist/0.png", nil, 404},
		{"unknown route", "GET", "/v2/things", nil, 404},
		{"bad JSON", "POST", model, `{"input": {"prompt": "x"`, 400},
		{"not an object", "POST", model, `[1, 2]`, 400},
		{"missing input", "POST", model, map[string]any{}, 422},
		{"missing prompt", "POST", model, map[string]any{"input": map[string]any{"aspect_ratio": "1:1"}}, 422},
		{"empty prompt", "POST", model, map[string]any{"input": map[string]any{"prompt": "  "}}, 422},
		{"prompt not a string", "POST", model, map[string]any{"input": map[string]any{"prompt": 7}}, 422},
		{"missing version", "POST", "/v1/predictions", map[string]any{"input": map[string]any{"prompt": "x"}}, 422},
		{"too many images", "POST", model, map[string]any{"input": map[string]any{"prompt": "x", "num_outputs": 5}}, 422},
		{"unknown format", "POST", model, map[string]any{"input": map[string]any{"prompt": "x", "output_format": "gif"}}, 422},
		{"bad aspect", "POST", model, map[string]any{"input": map[string]any{"prompt": "x", "aspect_ratio": "wide"}}, 422},
		{"bad video duration", "POST", "/v1/models/" + videoModel + "/predictions", map[string]any{"input": map[string]any{"prompt": "x", "duration": "forever"}}, 422},
		{"bad webhook", "POST", model, map[string]any{"input": map[string]any{"prompt": "x"}, "webhook": "not a url"}, 422},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e struct{ Detail string }
			if code := h.call(tt.method, tt.path, tt.body, &e); code != tt.want || e.Detail == "" {
				t.Errorf("HTTP %d detail %q, want %d with a detail", code, e.Detail, tt.want)
			}
		})
	}
}

func TestFrameSizesFollowResolutionAndAspect(t *testing.T) {
	tests := []struct {
		input         map[string]any
		width, height int
	}{
		{map[string]any{}, 1280, 720},
		{map[string]any{"resolution": "720p", "aspect_ratio": "9:16"}, 720, 1280},
		{map[string]any{"resolution": "1080p", "aspect_ratio": "21:9"}, 2520, 1080},
		{map[string]any{"resolution": "1080p", "aspect_ratio": "9:21"}, 1080, 2520},
		{map[string]any{"resolution": "480p"}, 854, 480},
		{map[string]any{"resolution": "512p", "aspect_ratio": "1:1"}, 512, 512},
		{map[string]any{"resolution": "768p", "aspect_ratio": "4:3"}, 1024, 768},
		{map[string]any{"aspect_ratio": "landscape"}, 1280, 720},
		{map[string]any{"aspect_ratio": "portrait"}, 720, 1280},
	}
	for _, tt := range tests {
		spec, err := parseVideoSpec(tt.input)
		if err != nil || spec.Width != tt.width || spec.Height != tt.height {
			t.Errorf("video %v = %dx%d (%v), want %dx%d", tt.input, spec.Width, spec.Height, err, tt.width, tt.height)
		}
	}
	images := []struct {
		input         map[string]any
		width, height int
	}{
		{map[string]any{}, 1024, 1024},
		{map[string]any{"resolution": "1K", "aspect_ratio": "16:9"}, 1024, 576},
		{map[string]any{"resolution": "2K", "aspect_ratio": "3:2"}, 2048, 1366},
		{map[string]any{"resolution": "4K", "aspect_ratio": "9:16"}, 2304, 4096},
		{map[string]any{"aspect_ratio": "1:3"}, 342, 1024},
		{map[string]any{"aspect_ratio": "match_input_image"}, 1024, 1024},
	}
	for _, tt := range images {
		spec, err := parseImageSpec(tt.input)
		if err != nil || spec.Width != tt.width || spec.Height != tt.height {
			t.Errorf("image %v = %dx%d (%v), want %dx%d", tt.input, spec.Width, spec.Height, err, tt.width, tt.height)
		}
	}
}

func TestColorForIsStableDistinctAndNotDark(t *testing.T) {
	if ColorFor("a fox") != ColorFor("a fox") {
		t.Fatal("ColorFor is not deterministic")
	}
	prompts := []string{"scene 1: a fox", "scene 2: a fox", "scene 3: a fox", "a red fox", "a blue whale", "the city at night"}
	for i, a := range prompts {
		c := ColorFor(a)
		if luma := 0.299*float64(c.R) + 0.587*float64(c.G) + 0.114*float64(c.B); luma < 40 {
			t.Errorf("ColorFor(%q) = %v is too dark", a, c)
		}
		for _, b := range prompts[i+1:] {
			if d := channelDiff(c, ColorFor(b)); d < 12 {
				t.Errorf("ColorFor(%q) = %v and ColorFor(%q) = %v differ by only %d", a, c, b, ColorFor(b), d)
			}
		}
	}
}

func TestNewRefusesABadConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"no models", Config{}},
		{"model without owner", Config{Models: map[string]string{"video": kindVideo}}},
		{"unknown kind", Config{Models: map[string]string{"a/b": "audio"}}},
		{"relative base URL", Config{Models: map[string]string{"a/b": kindImage}, BaseURL: "/sim"}},
		{"missing ffmpeg", Config{Models: map[string]string{"a/b": kindImage}, FFmpeg: ffmpeg.Runner{FFmpeg: "/nonexistent/ffmpeg"}}},
		{"missing font", Config{Models: map[string]string{"a/b": kindImage}, FontFile: "/nonexistent/font.ttf"}},
		{"version of no model", Config{Models: map[string]string{"a/b": kindImage}, Versions: map[string]string{"c/d": strings.Repeat("a", 64)}}},
		{"version not 64 hex digits", Config{Models: map[string]string{"a/b": kindImage}, Versions: map[string]string{"a/b": "v1"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if s, err := New(tt.cfg); err == nil {
				s.Close()
				t.Fatal("New accepted the config")
			}
		})
	}
}

// webhook is one call received by the webhook receiver.
type webhook struct {
	Prediction
	contentType, webhookID string
}

type hookReceiver struct {
	URL      string
	received chan webhook
}

func webhookReceiver(t *testing.T) *hookReceiver {
	t.Helper()
	h := &hookReceiver{received: make(chan webhook, 10)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p Prediction
		if err := json.NewDecoder(r.Body).Decode(&p); err != nil {
			t.Errorf("webhook body: %v", err)
		}
		h.received <- webhook{Prediction: p, contentType: r.Header.Get("Content-Type"), webhookID: r.Header.Get("webhook-id")}
	}))
	t.Cleanup(srv.Close)
	h.URL = srv.URL + "/hook"
	return h
}

func (h *hookReceiver) next(t *testing.T) webhook {
	t.Helper()
	select {
	case w := <-h.received:
		return w
	case <-time.After(30 * time.Second):
		t.Fatal("no webhook within 30 s")
		return webhook{}
	}
}

func equalJSON(t *testing.T, a, b any) bool {
	t.Helper()
	ja, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(ja, jb)
}

func channelDiff(a, b color.RGBA) int {
	d := 0
	for _, p := range [][2]uint8{{a.R, b.R}, {a.G, b.G}, {a.B, b.B}} {
		d = max(d, int(p[0])-int(p[1]), int(p[1])-int(p[0]))
	}
	return d
}

// outputURLs reads a prediction's output: a video's URL or images' URLs.
func outputURLs(p Prediction) []string {
	switch o := p.Output.(type) {
	case string:
		return []string{o}
	case []any:
		out := make([]string, len(o))
		for i, u := range o {
			out[i], _ = u.(string)
		}
		return out
	}
	return nil
}

// TestASlowBodyIsCutOffWithinTheBodyReadTimeout: a create whose body
// comes a byte at a time, on either face, is answered 408 within the body
// read timeout, long before the whole body would have arrived, and starts
// no job; a body that arrives in time still creates one.
func TestASlowBodyIsCutOffWithinTheBodyReadTimeout(t *testing.T) {
	h := start(t, Config{BodyReadTimeout: 500 * time.Millisecond})
	body := `{"input":{"prompt":"a slow drip of a request"}}`
	for _, tt := range []struct{ face, path, auth string }{
		{"replicate", "/v1/models/" + imageModel + "/predictions", "Bearer " + testToken},
		{"fal", "/fal/" + imageModel, "Key " + testToken},
	} {
		t.Run(tt.face, func(t *testing.T) {
			conn, err := net.Dial("tcp", h.srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n",
				tt.path, h.srv.Listener.Addr(), tt.auth, len(body))
			answered := make(chan string, 1)
			go func() {
				resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
				if err != nil {
					answered <- "no answer: " + err.Error()
					return
				}
				resp.Body.Close()
				answered <- resp.Status
			}()
			// One byte every 100 ms: the whole body would take about 5 s.
			var answer string
			sent := 0
		drip:
			for ; sent < len(body); sent++ {
				select {
				case answer = <-answered:
					break drip
				case <-time.After(100 * time.Millisecond):
				}
				if _, err := conn.Write([]byte{body[sent]}); err != nil {
					break
				}
			}
			if sent == len(body) {
				t.Fatalf("the whole %d-byte body was taken a byte at a time; the simulator never cut it off", len(body))
			}
			if answer == "" {
				answer = <-answered
			}
			if !strings.HasPrefix(answer, "408") {
				t.Errorf("after %d of %d bytes the simulator answered %q, want 408", sent, len(body), answer)
			}
		})
	}
	if n := h.sim.Jobs(imageModel); n != 0 {
		t.Errorf("%d jobs started by the cut-off requests, want none", n)
	}
	h.create(imageModel, map[string]any{"prompt": "in time"}, "")
	if n := h.sim.Jobs(imageModel); n != 1 {
		t.Errorf("%d jobs after a create in time, want 1", n)
	}
}
