package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	_ "image/jpeg"
	_ "image/png"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/adapters/ffmpeg"
	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/pricing"
	"github.com/mediagen-dev/mediagen/internal/local/runtime"
)

// variantCase is one generate request of the spec and what its outputs must be.
type variantCase struct {
	model, version string
	input          map[string]any
	imageCount     int
	// videos: seconds and frame size; images: format, aspect and count.
	seconds       float64
	width, height int
	format        string
	aspect        float64
	count         int
}

var variantCases = []variantCase{
	{model: "provider-a", version: "alpha-3.1-fast", input: map[string]any{"prompt": "a red fox running through snow", "duration": "4", "resolution": "720p", "aspect_ratio": "9:16", "generate_audio": true, "auto_fix": true, "negative_prompt": "blur"}, seconds: 4, width: 720, height: 1280},
	{model: "provider-b", version: "beta-2-enchanted", input: map[string]any{"prompt": "paper boats on a river", "duration": 10, "n_frames": "10", "aspect_ratio": "landscape", "remove_watermark": true}, seconds: 10, width: 1280, height: 720},
	{model: "provider-b", version: "beta-2", input: map[string]any{"prompt": "a city at night from above", "seconds": "4", "aspect_ratio": "portrait"}, seconds: 4, width: 720, height: 1280},
	{model: "provider-c", version: "gamma-v2.1", input: map[string]any{"mode": "standard", "prompt": "a dancer in the rain", "duration": "5", "start_image": "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="}, seconds: 5, width: 1280, height: 720},
	{model: "provider-d", version: "video-01", input: map[string]any{"prompt": "waves on a beach"}, seconds: 6, width: 1280, height: 720},
	{model: "provider-e", version: "delta-1-pro", input: map[string]any{"prompt": "a train through mountains", "duration": "5", "resolution": "480p", "aspect_ratio": "4:3", "fps": "24", "camera_fixed": false}, seconds: 5, width: 640, height: 480},
	{model: "provider-d", version: "epsilon-02", input: map[string]any{"prompt": "a hot air balloon", "duration": "6", "resolution": "512p"}, seconds: 6, width: 910, height: 512},
	{model: "provider-a", version: "zeta-pro", input: map[string]any{"prompt": "a watercolor of a harbor", "num_images": "2", "resolution": "1K", "aspect_ratio": "16:9", "output_format": "webp", "enable_web_search": false}, format: "webp", aspect: 16.0 / 9, count: 2},
	{model: "provider-a", version: "zeta", input: map[string]any{"prompt": "a bowl of ramen"}, imageCount: 2, format: "png", aspect: 1, count: 2},
	{model: "provider-f", version: "eta-context-max", input: map[string]any{"prompt": "the same cat as a sculpture", "aspect_ratio": "16:9"}, format: "png", aspect: 16.0 / 9, count: 1},
	{model: "provider-a", version: "theta-4-fast", input: map[string]any{"prompt": "a robot reading a book", "aspect_ratio": "9:16"}, format: "png", aspect: 9.0 / 16, count: 1},
	{model: "provider-g", version: "iota-v3-turbo", input: map[string]any{"prompt": "a mountain cabin poster", "aspect_ratio": "4:3"}, imageCount: 3, format: "png", aspect: 4.0 / 3, count: 3},
}

func TestEveryVariantCompletesWithRealFilesAndIsBilledItsPrice(t *testing.T) {
	rt := start(t, runtimeConfig())
	owner := newAccount(t, rt, domain.PlanEnterprise, 10000)
	before := account(t, rt, owner.UserID)
	dir := t.TempDir()
	ff := ffmpeg.Runner{}

	type created struct {
		c    variantCase
		id   string
		cost decimal.Decimal
	}
	var made []created
	for _, c := range variantCases {
		body := map[string]any{"model": c.model, "model_version": c.version, "input": c.input}
		if c.imageCount > 0 {
			body["image_count"] = c.imageCount
		}
		a := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, body)
		if a.status != http.StatusOK {
			t.Fatalf("%s: HTTP %d %s", c.version, a.status, a.body)
		}
		checkRecord(t, a, owner.UserID, c)
		cost := decimal.RequireFromString(a.str("credits_used"))
		want := quote(t, body)
		if !cost.Equal(want) {
			t.Errorf("%s: credits_used %s, the price file says %s", c.version, cost, want)
		}
		made = append(made, created{c: c, id: a.str("uuid"), cost: cost})
	}

	total := decimal.Zero
	var wg sync.WaitGroup
	for _, m := range made {
		total = total.Add(m.cost)
		wg.Add(1)
		go func() {
			defer wg.Done()
			checkOutputs(t, rt, ff, owner.APIKey, m.id, m.c, dir)
		}()
	}
	wg.Wait()
	after := settledAccount(t, rt, owner.UserID)
	if !after.Balance.Equal(before.Balance.Sub(total)) || !after.Held.IsZero() || !after.Captured.Equal(total) {
		t.Errorf("after 12 completed generations: balance %s held %s captured %s; want balance %s, nothing held, %s captured",
			after.Balance, after.Held, after.Captured, before.Balance.Sub(total), total)
	}
}

// runtimeConfig is the configuration the tests share: no simulator latency.
func runtimeConfig() runtime.Config { return runtime.Config{} }

// quote prices a body with the default price file, as the service must.
func quote(t *testing.T, body map[string]any) decimal.Decimal {
	t.Helper()
	raw, _ := json.Marshal(body)
	req, err := catalog.ParseGenerate(raw, catalog.Options{AllowLoopbackURLs: true})
	if err != nil {
		t.Fatalf("parse %s: %v", raw, err)
	}
	q, err := pricing.Default().Quote(req)
	if err != nil {
		t.Fatal(err)
	}
	return q.Credits
}

func checkRecord(t *testing.T, a answer, userID string, c variantCase) {
	t.Helper()
	d := a.decoded
	if id, ok := d["id"].(float64); !ok || id < 1 || id != math.Trunc(id) {
		t.Errorf("%s: id %v is not a positive integer", c.version, d["id"])
	}
	for field, want := range map[string]string{"user_id": userID, "model": c.model, "model_version": c.version, "status": "processing"} {
		if got := a.str(field); got != want {
			t.Errorf("%s: %s = %q, want %q", c.version, field, got, want)
		}
	}
	if a.str("upstream_id") == "" || len(a.str("uuid")) != 36 {
		t.Errorf("%s: upstream_id %q uuid %q", c.version, a.str("upstream_id"), a.str("uuid"))
	}
	if in, _ := d["input_parameters"].(map[string]any); in["prompt"] != c.input["prompt"] {
		t.Errorf("%s: input_parameters %v do not echo the input", c.version, d["input_parameters"])
	}
	if od, _ := d["output_data"].(map[string]any); od == nil || od["urls"] == nil {
		t.Errorf("%s: output_data %v has no urls", c.version, d["output_data"])
	}
	for _, f := range []string{"created_at", "updated_at"} {
		if _, err := time.Parse("2006-01-02T15:04:05.000Z", a.str(f)); err != nil || len(a.str(f)) != 24 {
			t.Errorf("%s: %s %q is not ISO 8601 with milliseconds and Z", c.version, f, a.str(f))
		}
	}
	if _, err := decimal.NewFromString(a.str("credits_used")); err != nil || !strings.Contains(a.str("credits_used"), ".") {
		t.Errorf("%s: credits_used %q is not a decimal string", c.version, a.str("credits_used"))
	}
}

func checkOutputs(t *testing.T, rt *runtime.Runtime, ff ffmpeg.Runner, key, id string, c variantCase, dir string) {
	a, ok := waitFinal(t, rt, key, id, 3*time.Minute)
	if !ok {
		return
	}
	if a.str("status") != "completed" {
		t.Errorf("%s: status %q error %q, want completed", c.version, a.str("status"), a.str("error"))
		return
	}
	if a.str("model") != c.model+"/"+c.version || a.str("id") != id {
		t.Errorf("%s: view id %q model %q", c.version, a.str("id"), a.str("model"))
	}
	if _, err := time.Parse("2006-01-02T15:04:05.000000", a.str("created_at")); err != nil || strings.HasSuffix(a.str("created_at"), "Z") {
		t.Errorf("%s: created_at %q, want fractional seconds and no zone", c.version, a.str("created_at"))
	}
	if _, present := a.decoded["error"]; present {
		t.Errorf("%s: a completed view carries error %v", c.version, a.decoded["error"])
	}
	urls, _ := a.decoded["output"].([]any)
	want := 1
	if c.count > 0 {
		want = c.count
	}
	if len(urls) != want {
		t.Errorf("%s: %d output URLs, want %d", c.version, len(urls), want)
		return
	}
	ctx := context.Background()
	for i, u := range urls {
		url := u.(string)
		if !strings.HasPrefix(url, rt.FilesURL+"/generations/") {
			t.Errorf("%s: output %s is not the service's own URL on its file origin %s", c.version, url, rt.FilesURL)
		}
		path, ok := download(t, url, dir, fmt.Sprintf("%s-%d", c.version, i))
		if !ok {
			continue
		}
		info, err := ff.Probe(ctx, path)
		if err != nil {
			t.Errorf("%s: probe %s: %v", c.version, url, err)
			continue
		}
		v, ok := info.Video()
		if !ok {
			t.Errorf("%s: %s has no picture", c.version, url)
			continue
		}
		if c.count == 0 { // a video
			if !strings.HasSuffix(url, ".mp4") || v.Codec != "h264" {
				t.Errorf("%s: %s codec %s, want an h264 .mp4", c.version, url, v.Codec)
			}
			if math.Abs(info.Duration-c.seconds) > 0.5 {
				t.Errorf("%s: duration %.2f s, want %.0f ± 0.5", c.version, info.Duration, c.seconds)
			}
			if v.Width != c.width || v.Height != c.height {
				t.Errorf("%s: frame %dx%d, want %dx%d", c.version, v.Width, v.Height, c.width, c.height)
			}
			_, hasAudio := info.Audio()
			if wantAudio := c.input["generate_audio"] == true; hasAudio != wantAudio {
				t.Errorf("%s: audio stream %v, want %v", c.version, hasAudio, wantAudio)
			}
			continue
		}
		ext := map[string]string{"png": ".png", "jpeg": ".jpg", "webp": ".webp"}[c.format]
		if !strings.HasSuffix(url, ext) {
			t.Errorf("%s: %s, want a %s file", c.version, url, ext)
		}
		raw, _ := os.ReadFile(path)
		if c.format == "webp" {
			if !bytes.HasPrefix(raw, []byte("RIFF")) || !bytes.Contains(raw[:16], []byte("WEBP")) {
				t.Errorf("%s: %s is not a webp file", c.version, url)
			}
		} else if _, format, err := image.Decode(bytes.NewReader(raw)); err != nil || format != c.format {
			t.Errorf("%s: %s decodes as %q, %v; want %s", c.version, url, format, err, c.format)
		}
		if got := float64(v.Width) / float64(v.Height); math.Abs(got-c.aspect) > 0.02 {
			t.Errorf("%s: %dx%d has aspect %.3f, want %.3f", c.version, v.Width, v.Height, got, c.aspect)
		}
	}
}

func TestFailedGenerationIsReportedAndRefunded(t *testing.T) {
	// Long enough a job that the hold can be seen before the provider's
	// callback ends it.
	rt := start(t, runtime.Config{SimulatorLatency: 500 * time.Millisecond})
	owner := newAccount(t, rt, domain.PlanPro, 100)
	body := map[string]any{"model": "provider-a", "model_version": "theta-4-fast",
		"input": map[string]any{"prompt": "this one fails [simulate:fail]"}}
	a := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, body)
	if a.status != http.StatusOK {
		t.Fatalf("HTTP %d %s", a.status, a.body)
	}
	if held := account(t, rt, owner.UserID); held.Held.IsZero() {
		t.Error("nothing is held while the generation runs")
	}
	final, ok := waitFinal(t, rt, owner.APIKey, a.str("uuid"), time.Minute)
	if !ok {
		return
	}
	if final.str("status") != "failed" || !strings.Contains(final.str("error"), "simulated failure") {
		t.Errorf("status %q error %q, want failed with the upstream's reason", final.str("status"), final.str("error"))
	}
	if urls, _ := final.decoded["output"].([]any); len(urls) != 0 {
		t.Errorf("a failed generation lists outputs %v", urls)
	}
	after := settledAccount(t, rt, owner.UserID)
	if !after.Balance.Equal(decimal.NewFromInt(100)) || !after.Held.IsZero() || !after.Captured.IsZero() {
		t.Errorf("after a failed generation: balance %s held %s captured %s; want 100 back", after.Balance, after.Held, after.Captured)
	}
	// The integer id reads the same generation.
	byID := call(t, rt, http.MethodGet, "/api/generations/status/"+strconv.Itoa(int(a.decoded["id"].(float64))), owner.APIKey, nil)
	if byID.status != http.StatusOK || byID.str("id") != a.str("uuid") {
		t.Errorf("status by integer id: HTTP %d id %q", byID.status, byID.str("id"))
	}
}

func TestRestartResumesGenerationsInFlight(t *testing.T) {
	dir := t.TempDir()
	cfg := runtimeConfig()
	cfg.DataDir = dir
	cfg.SimulatorLatency = 500 * time.Millisecond
	rt := start(t, cfg)
	owner := newAccount(t, rt, domain.PlanPro, 100)
	a := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey,
		gen("theta-4-fast", map[string]any{"prompt": "made across a restart"}))
	if a.status != http.StatusOK {
		t.Fatalf("HTTP %d %s", a.status, a.body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := rt.Close(ctx); err != nil { // stopped while the job is still upstream
		t.Fatal(err)
	}
	// make run restarts on the same address; the file origin's and the S3
	// API's are given too, as the runtime would derive them from a fixed
	// API port, and another test may hold those.
	cfg.Addr = strings.TrimPrefix(rt.BaseURL, "http://")
	cfg.FilesAddr = strings.TrimPrefix(rt.FilesURL, "http://")
	cfg.S3Addr = strings.TrimPrefix(rt.Objects.Endpoint, "http://")
	again := start(t, cfg)
	final, ok := waitFinal(t, again, owner.APIKey, a.str("uuid"), time.Minute)
	if !ok {
		return
	}
	if final.str("status") != "completed" {
		t.Fatalf("after a restart: %s %q, want completed", final.str("status"), final.str("error"))
	}
	urls, _ := final.decoded["output"].([]any)
	if len(urls) != 1 {
		t.Fatalf("outputs %v", urls)
	}
	if _, ok := download(t, urls[0].(string), t.TempDir(), "after-restart.png"); !ok {
		return
	}
	acct := account(t, again, owner.UserID)
	if !acct.Held.IsZero() || !acct.Captured.Equal(decimal.RequireFromString(a.str("credits_used"))) {
		t.Errorf("after a restart: held %s captured %s", acct.Held, acct.Captured)
	}
}
