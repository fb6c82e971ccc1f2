package runtime_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/adapters/ffmpeg"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/longform"
	"github.com/mediagen-dev/mediagen/internal/local/espeak"
	"github.com/mediagen-dev/mediagen/internal/local/runtime"
	"github.com/mediagen-dev/mediagen/internal/local/simulator"
	"github.com/mediagen-dev/mediagen/internal/testkit/testsupport"
	"github.com/mediagen-dev/mediagen/internal/testkit/waitfor"
)

// storyConfig runs the workflow's waits and retries at 1/20 of real time.
func storyConfig() runtime.Config {
	cfg := runtimeConfig()
	cfg.WorkflowWaitScale = 0.05
	return cfg
}

type storyScene struct {
	n      int
	prompt string
}

func storyBody(prompt, lang string, narrate bool, style string, scenes []storyScene) map[string]any {
	list := []any{}
	for _, s := range scenes {
		list = append(list, map[string]any{"scene_number": s.n, "prompt": s.prompt})
	}
	return map[string]any{"prompt": prompt, "language_code": lang, "model": "beta-2", "enable_narration": narrate,
		"video_style": style, "scenes": list}
}

// waitStory polls the long-form status route until the video is final.
func waitStory(t *testing.T, rt *runtime.Runtime, key, id string) answer {
	t.Helper()
	a, ok := waitfor.Value(t, 3*time.Minute, "video "+id+" to end", func() (answer, bool) {
		a := call(t, rt, http.MethodGet, "/api/long-story/videos/"+id, key, nil)
		return a, a.status != http.StatusOK || a.str("status") != "processing"
	})
	if !ok {
		t.FailNow()
	}
	if a.status != http.StatusOK {
		t.Fatalf("status of %s: HTTP %d %s", id, a.status, a.body)
	}
	return a
}

func TestEstimateMatchesTheSpecsSample(t *testing.T) {
	rt := start(t, storyConfig())
	owner := newAccount(t, rt, domain.PlanPro, 100)
	a := call(t, rt, http.MethodPost, "/api/long-story/videos/estimate", owner.APIKey, map[string]any{"model": "beta-2", "scene_count": 3})
	if a.status != http.StatusOK {
		t.Fatalf("HTTP %d %s", a.status, a.body)
	}
	d := a.decoded
	credits, _ := d["credits"].(map[string]any)
	info, _ := d["scene_info"].(map[string]any)
	pricing, _ := d["pricing"].(map[string]any)
	for path, v := range map[string]any{
		"success": d["success"], "model": d["model"], "duration": d["duration"], "scene_count_mode": d["scene_count_mode"],
		"scene_info.total_scenes": info["total_scenes"], "scene_info.duration_per_scene": info["duration_per_scene"],
		"scene_info.scene_duration_note": info["scene_duration_note"], "credits.required": credits["required"],
		"credits.per_second": credits["per_second"], "credits.total": credits["total"],
		"pricing.base_cost_usd_per_second": pricing["base_cost_usd_per_second"],
		"pricing.total_base_cost_usd":      pricing["total_base_cost_usd"], "pricing.profit_margin": pricing["profit_margin"],
	} {
		want := map[string]string{"success": "bool", "scene_count_mode": "bool", "model": "string",
			"scene_info.scene_duration_note": "string", "pricing.profit_margin": "string"}[path]
		if want == "" {
			want = "float64"
		}
		if got := fmt.Sprintf("%T", v); got != want {
			t.Errorf("%s is %s (%v), want a %s", path, got, v, want)
		}
	}
	if d["duration"] != 15.0 || d["model"] != "beta-2" || d["success"] != true {
		t.Errorf("estimate %s", a.body)
	}
	per, total := credits["per_second"].(float64), credits["total"].(float64)
	if math.Abs(total-per*15) > 1e-9 || credits["required"] != total {
		t.Errorf("total %v required %v, want per_second %v × 15", total, credits["required"], per)
	}
	for _, body := range []map[string]any{{"model": "zeta", "scene_count": 3}, {"model": "beta-2", "scene_count": 0}, {"model": "beta-2", "scene_count": 21}} {
		checkEnvelope(t, call(t, rt, http.MethodPost, "/api/long-story/videos/estimate", owner.APIKey, malformed(body)), http.StatusBadRequest)
	}
}

func TestNarratedLongVideoIsAssembledInSceneOrder(t *testing.T) {
	rt := start(t, storyConfig())
	owner := newAccount(t, rt, domain.PlanEnterprise, 10000)
	scenes := []storyScene{{2, "gulls circle over the pier"}, {1, "waves roll onto an empty beach"}, {3, "the sun sets behind the lighthouse"}}
	body := storyBody("A day at the seaside", "en", true, "documentary", scenes)
	est := call(t, rt, http.MethodPost, "/api/long-story/videos/estimate", owner.APIKey, map[string]any{"model": "beta-2", "scene_count": 3})
	price := decimal.NewFromFloat(est.decoded["credits"].(map[string]any)["total"].(float64))
	before := account(t, rt, owner.UserID)
	a := call(t, rt, http.MethodPost, "/api/long-story/videos", owner.APIKey, body)
	if a.status != http.StatusOK || a.str("status") != "processing" || a.str("id") == "" || a.str("video_id") != a.str("id") || a.str("message") == "" {
		t.Fatalf("create: HTTP %d %s", a.status, a.body)
	}
	if held := account(t, rt, owner.UserID).Held; !held.Equal(price) {
		t.Errorf("held %s while it runs, want the estimate %s", held, price)
	}
	final := waitStory(t, rt, owner.APIKey, a.str("video_id"))
	if final.str("status") != "completed" || final.decoded["error"] != nil {
		t.Fatalf("video: %s", final.body)
	}
	url := final.str("final_video_url")
	if !strings.HasPrefix(url, rt.FilesURL+"/long-videos/") || !strings.HasSuffix(url, "/final.mp4") {
		t.Errorf("final_video_url %q is not the service's own mp4 URL on its file origin %s", url, rt.FilesURL)
	}
	path, ok := download(t, url, t.TempDir(), "story.mp4")
	if !ok {
		return
	}
	ff := ffmpeg.Runner{}
	info, err := ff.Probe(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	videos, audios := testsupport.StreamCounts(info)
	total := final.decoded["total_duration"].(float64)
	if videos != 1 || audios != 1 {
		t.Errorf("%d video and %d audio streams, want one of each", videos, audios)
	}
	if math.Abs(info.Duration-total) > 1 || math.Abs(total-15) > 1 {
		t.Errorf("file %.2f s, total_duration %.2f s, scenes 15 s: want all within 1 s", info.Duration, total)
	}
	// Each scene's middle frame shows the colour the simulator gave that
	// scene's prompt: the scenes are in scene_number order.
	for i := 1; i <= 3; i++ {
		var prompt string
		for _, s := range scenes {
			if s.n == i {
				prompt = longform.ScenePrompt("documentary", "A day at the seaside", domain.Scene{SceneNumber: i, Prompt: s.prompt})
			}
		}
		want := simulator.ColorFor(prompt)
		got, err := ff.PixelAt(context.Background(), path, float64(i-1)*5+2.5, 10, 10)
		if err != nil {
			t.Fatal(err)
		}
		if diff(got.R, want.R) > 12 || diff(got.G, want.G) > 12 || diff(got.B, want.B) > 12 {
			t.Errorf("second %.1f shows %v, want scene %d's colour %v", float64(i-1)*5+2.5, got, i, want)
		}
	}
	after := settledAccount(t, rt, owner.UserID)
	if !after.Balance.Equal(before.Balance.Sub(price)) || !after.Held.IsZero() || !after.Captured.Equal(price) {
		t.Errorf("after the video: balance %s held %s captured %s; want %s spent", after.Balance, after.Held, after.Captured, price)
	}
	// Another owner sees nothing.
	other := newAccount(t, rt, domain.PlanPro, 10)
	checkEnvelope(t, call(t, rt, http.MethodGet, "/api/long-story/videos/"+a.str("video_id"), other.APIKey, nil), http.StatusNotFound)
}

func diff(a, b uint8) int {
	if a > b {
		return int(a - b)
	}
	return int(b - a)
}

func TestUnnarratedVideoHasNoAudioAndSpanishIsSpokenInSpanish(t *testing.T) {
	rt := start(t, storyConfig())
	owner := newAccount(t, rt, domain.PlanEnterprise, 10000)
	silent := call(t, rt, http.MethodPost, "/api/long-story/videos", owner.APIKey,
		storyBody("Quiet", "en", false, "auto", []storyScene{{1, "a still lake"}}))
	spanish := call(t, rt, http.MethodPost, "/api/long-story/videos", owner.APIKey,
		storyBody("El mar", "es", true, "cinematic", []storyScene{{1, "las olas del mar"}}))
	ff := ffmpeg.Runner{}
	for _, c := range []struct {
		a         answer
		wantAudio bool
	}{{silent, false}, {spanish, true}} {
		if c.a.status != http.StatusOK {
			t.Fatalf("create: HTTP %d %s", c.a.status, c.a.body)
		}
		final := waitStory(t, rt, owner.APIKey, c.a.str("id"))
		if final.str("status") != "completed" {
			t.Fatalf("video: %s", final.body)
		}
		path, ok := download(t, final.str("final_video_url"), t.TempDir(), "v.mp4")
		if !ok {
			return
		}
		info, _ := ff.Probe(context.Background(), path)
		if _, has := info.Audio(); has != c.wantAudio {
			t.Errorf("audio stream %v, want %v", has, c.wantAudio)
		}
	}
	// The narration kept for the Spanish video is exactly what the Spanish
	// voice says for the scene's script.
	lang, _ := longform.LookupLanguage("es")
	dir := t.TempDir()
	want, _, err := espeak.Narrator{}.Speak(context.Background(), lang, "las olas del mar", dir)
	if err != nil {
		t.Fatal(err)
	}
	// Scratch files are not served: read it through the S3 API.
	kept := dir + "/kept.wav"
	tracks, err := rt.Objects.MediaBucket().Keys(context.Background(), "long-videos/"+spanish.str("id")+"/narration/001-")
	speech := slices.IndexFunc(tracks, func(k string) bool { return strings.HasSuffix(k, ".wav") })
	if err != nil || len(tracks) != 2 || speech < 0 {
		t.Fatalf("scene 1's narration: %v, %v; want its speech (wav) and its marks", tracks, err)
	}
	if err := rt.Objects.MediaBucket().GetFile(context.Background(), tracks[speech], kept); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(want)
	b, _ := os.ReadFile(kept)
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Errorf("the kept narration (%d bytes) is not the Spanish voice's reading (%d bytes)", len(b), len(a))
	}
	english, _, _ := espeak.Narrator{}.Speak(context.Background(), longform.Languages[0], "las olas del mar", dir)
	if e, _ := os.ReadFile(english); bytes.Equal(e, b) {
		t.Error("the narration is the English voice's reading")
	}
}

func TestEightScenesRunInParallel(t *testing.T) {
	cfg := storyConfig()
	cfg.SimulatorLatency = 1500 * time.Millisecond
	rt := start(t, cfg)
	owner := newAccount(t, rt, domain.PlanEnterprise, 10000)
	// Watch the provider: how many of the video's scene jobs run at once.
	var peak atomic.Int64
	stop, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		for {
			if n := int64(rt.Simulator.Active("provider-b/beta-2")); n > peak.Load() {
				peak.Store(n)
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	var scenes []storyScene
	for i := 1; i <= 8; i++ {
		scenes = append(scenes, storyScene{i, fmt.Sprintf("scene number %d of eight", i)})
	}
	eight := call(t, rt, http.MethodPost, "/api/long-story/videos", owner.APIKey, storyBody("Timing", "en", false, "auto", scenes))
	f := waitStory(t, rt, owner.APIKey, eight.str("id"))
	close(stop)
	<-watched
	if f.str("status") != "completed" {
		t.Fatalf("eight scenes: %s", f.body)
	}
	// One after another, never more than one job would run at a time; the
	// scenes' jobs each wait 1.5 s upstream, so overlapping ones show here.
	if got := peak.Load(); got < 4 {
		t.Errorf("at most %d of the 8 scenes ran upstream at once; want them to overlap (the Map runs them together)", got)
	}
}

func TestFailedSceneFailsTheVideoAndRefunds(t *testing.T) {
	rt := start(t, storyConfig())
	owner := newAccount(t, rt, domain.PlanEnterprise, 10000)
	before := account(t, rt, owner.UserID)
	a := call(t, rt, http.MethodPost, "/api/long-story/videos", owner.APIKey,
		storyBody("Doomed", "en", true, "auto", []storyScene{{1, "fine"}, {2, "this scene fails [simulate:fail]"}, {3, "fine too"}}))
	if a.status != http.StatusOK {
		t.Fatalf("HTTP %d %s", a.status, a.body)
	}
	final := waitStory(t, rt, owner.APIKey, a.str("id"))
	msg, _ := final.decoded["error"].(string)
	if final.str("status") != "failed" || !strings.Contains(msg, "scene 2") {
		t.Errorf("video: %s; want failed with an error naming scene 2", final.body)
	}
	after := settledAccount(t, rt, owner.UserID)
	if !after.Balance.Equal(before.Balance) || !after.Held.IsZero() || !after.Captured.Equal(before.Captured) {
		t.Errorf("after a failed video: balance %s→%s held %s", before.Balance, after.Balance, after.Held)
	}
}

func TestBadLongVideoRequestsAnswer400AndChangeNothing(t *testing.T) {
	rt := start(t, storyConfig())
	owner := newAccount(t, rt, domain.PlanEnterprise, 10000)
	before := account(t, rt, owner.UserID)
	scene := []storyScene{{1, "a scene"}}
	var many []storyScene
	for i := 1; i <= 21; i++ {
		many = append(many, storyScene{i, "s"})
	}
	bodies := map[string]map[string]any{
		"no scenes":               storyBody("p", "en", true, "auto", nil),
		"duplicate scene numbers": storyBody("p", "en", true, "auto", []storyScene{{1, "a"}, {1, "b"}}),
		"21 scenes":               storyBody("p", "en", true, "auto", many),
		"unknown language":        storyBody("p", "xx", true, "auto", scene),
		"empty prompt":            storyBody("", "en", true, "auto", scene),
	}
	image := storyBody("p", "en", true, "auto", scene)
	image["model"] = "zeta"
	bodies["image model"] = image
	sceneImage := storyBody("p", "en", true, "auto", scene)
	sceneImage["scenes"] = []any{map[string]any{"scene_number": 1, "prompt": "a scene", "model": "zeta"}}
	bodies["a scene's own image model"] = sceneImage
	delete(bodies["no scenes"], "scenes")
	for name, body := range bodies {
		t.Run(name, func(t *testing.T) {
			checkEnvelope(t, call(t, rt, http.MethodPost, "/api/long-story/videos", owner.APIKey, malformed(body)), http.StatusBadRequest)
		})
	}
	poor := newAccount(t, rt, domain.PlanPro, 1)
	checkEnvelope(t, call(t, rt, http.MethodPost, "/api/long-story/videos", poor.APIKey, storyBody("p", "en", true, "auto", scene)), http.StatusPaymentRequired)
	checkEnvelope(t, call(t, rt, http.MethodGet, "/api/long-story/videos/00000000-0000-4000-8000-000000000000", owner.APIKey, nil), http.StatusNotFound)
	checkEnvelope(t, call(t, rt, http.MethodGet, "/api/long-story/videos/nope", owner.APIKey, nil), http.StatusBadRequest)
	after := account(t, rt, owner.UserID)
	if !after.Balance.Equal(before.Balance) || !after.Held.IsZero() {
		t.Errorf("refused requests moved credits: %s → %s", before.Balance, after.Balance)
	}
	if p := account(t, rt, poor.UserID); !p.Balance.Equal(decimal.NewFromInt(1)) || !p.Held.IsZero() {
		t.Errorf("a 402 moved credits: balance %s held %s", p.Balance, p.Held)
	}
}

func TestRestartRunsLongVideosInFlightAgain(t *testing.T) {
	cfg := storyConfig()
	cfg.DataDir = t.TempDir()
	cfg.SimulatorLatency = time.Second
	rt := start(t, cfg)
	owner := newAccount(t, rt, domain.PlanEnterprise, 10000)
	a := call(t, rt, http.MethodPost, "/api/long-story/videos", owner.APIKey,
		storyBody("Across a restart", "en", false, "auto", []storyScene{{1, "before"}, {2, "after"}}))
	if a.status != http.StatusOK {
		t.Fatalf("HTTP %d %s", a.status, a.body)
	}
	// Stop once the scenes' jobs are recorded upstream: the restarted
	// workflow watches them again. (A stop that cuts a create off leaves
	// its outcome unknown, and the scene fails rather than create twice.)
	if !waitfor.Condition(t, time.Minute, "both scenes submitted", func() bool {
		v, err := rt.Store.GetLongVideo(context.Background(), a.str("id"))
		return err == nil && v.SceneStatus[1].ID != "" && v.SceneStatus[2].ID != ""
	}) {
		t.FailNow()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := rt.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// The same addresses again (the runtime derives the file origin's and
	// the S3 API's from a fixed API port, and another test may hold those).
	cfg.Addr = strings.TrimPrefix(rt.BaseURL, "http://")
	cfg.FilesAddr = strings.TrimPrefix(rt.FilesURL, "http://")
	cfg.S3Addr = strings.TrimPrefix(rt.Objects.Endpoint, "http://")
	again := start(t, cfg)
	final := waitStory(t, again, owner.APIKey, a.str("id"))
	if final.str("status") != "completed" || math.Abs(final.decoded["total_duration"].(float64)-10) > 1 {
		t.Errorf("after a restart: %s", final.body)
	}
	if acct := account(t, again, owner.UserID); !acct.Held.IsZero() {
		t.Errorf("held %s after the video completed", acct.Held)
	}
}

// TestAnExecutionStoppedOutsideItsCatchStillFailsTheVideo: the safety net.
// An execution aborted behind the service's back (StopExecution from the
// console, say) never reaches MarkFailed; the execution-ended event does,
// as the EventBridge rule delivers it in AWS: the video fails, its hold is
// released and its scene jobs are canceled upstream.
func TestAnExecutionStoppedOutsideItsCatchStillFailsTheVideo(t *testing.T) {
	cfg := storyConfig()
	cfg.SimulatorLatency = time.Minute // the scenes are still running when the execution stops
	rt := start(t, cfg)
	owner := newAccount(t, rt, domain.PlanEnterprise, 10000)
	before := account(t, rt, owner.UserID)
	a := call(t, rt, http.MethodPost, "/api/long-story/videos", owner.APIKey,
		storyBody("Stopped", "en", false, "auto", []storyScene{{1, "waves"}, {2, "gulls"}}))
	if a.status != http.StatusOK {
		t.Fatalf("HTTP %d %s", a.status, a.body)
	}
	id := a.str("id")
	jobs, ok := waitfor.Value(t, time.Minute, "both scenes submitted", func() ([]string, bool) {
		v, err := rt.Store.GetLongVideo(context.Background(), id)
		if err != nil {
			return nil, false
		}
		var jobs []string
		for _, sc := range v.SceneStatus {
			if sc.ID != "" {
				jobs = append(jobs, sc.ID)
			}
		}
		return jobs, len(jobs) == 2
	})
	if !ok {
		t.FailNow()
	}
	if err := rt.Workflow.Stop(context.Background(), id, "stopped by an operator"); err != nil {
		t.Fatal(err)
	}
	final := waitStory(t, rt, owner.APIKey, id)
	if final.str("status") != "failed" || !strings.Contains(final.str("error"), "stopped") {
		t.Errorf("video: %s; want failed, saying its workflow was stopped", final.body)
	}
	after := settledAccount(t, rt, owner.UserID)
	if !after.Balance.Equal(before.Balance) || !after.Held.IsZero() {
		t.Errorf("after the stopped video: balance %s→%s held %s, want the hold released", before.Balance, after.Balance, after.Held)
	}
	// The jobs are canceled right after the video is marked failed.
	for _, job := range jobs {
		if p, ok := waitfor.Value(t, 30*time.Second, "scene job "+job+" canceled upstream", func() (simulator.Prediction, bool) {
			p, _ := rt.Simulator.Lookup(job)
			return p, p.Status == "canceled"
		}); !ok {
			t.Errorf("scene job %s is %q upstream, want canceled", job, p.Status)
		}
	}
}

// sceneStates reads each scene's status from a long-form status view.
func sceneStates(t *testing.T, a answer) map[int]string {
	t.Helper()
	list, _ := a.decoded["scenes"].([]any)
	states := map[int]string{}
	for _, item := range list {
		sc, _ := item.(map[string]any)
		n, _ := sc["scene_number"].(float64)
		st, _ := sc["status"].(string)
		states[int(n)] = st
	}
	return states
}

func TestScenesOfAStoppedVideoReadCanceledOrFailed(t *testing.T) {
	rt := start(t, storyConfig())
	owner := newAccount(t, rt, domain.PlanEnterprise, 10000)
	tests := []struct {
		name   string
		scenes []storyScene
		cancel bool
		video  string
		want   map[int]string
	}{
		{"canceled while its scenes wait or run", []storyScene{{1, "waves [simulate:slow]"}, {2, "gulls [simulate:slow]"}, {3, "a pier [simulate:slow]"}},
			true, "canceled", map[int]string{1: "canceled", 2: "canceled", 3: "canceled"}},
		{"failed by one scene while another runs", []storyScene{{1, "this scene fails [simulate:fail]"}, {2, "a slow one [simulate:slow]"}},
			false, "failed", map[int]string{1: "failed", 2: "canceled"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			created := call(t, rt, http.MethodPost, "/api/long-story/videos", owner.APIKey, storyBody("tides", "en", false, "auto", tt.scenes))
			if created.status != http.StatusOK {
				t.Fatalf("create: HTTP %d %s", created.status, created.body)
			}
			id := created.str("id")
			if tt.cancel {
				if a := call(t, rt, http.MethodPost, "/api/long-story/videos/"+id+"/cancel", owner.APIKey, nil); a.status != http.StatusOK {
					t.Fatalf("cancel: HTTP %d %s", a.status, a.body)
				}
			}
			final := waitStory(t, rt, owner.APIKey, id)
			if final.str("status") != tt.video {
				t.Fatalf("video: %s; want %s", final.body, tt.video)
			}
			if got := sceneStates(t, final); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("scenes of the %s video = %v, want %v", tt.video, got, tt.want)
			}
			// Later reads, after the workflow and the poller had their say,
			// tell the same.
			if e, ok := rt.Workflow.Execution(id); ok {
				select {
				case <-e.Done():
				case <-time.After(30 * time.Second):
					t.Error("the execution still runs after the video ended")
				}
			}
			later := call(t, rt, http.MethodGet, "/api/long-story/videos/"+id, owner.APIKey, nil)
			if got := sceneStates(t, later); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("scenes later = %v, want %v", got, tt.want)
			}
		})
	}
}

// A scene that names its own model is made by it and priced by it, as the
// estimate of the same body says; the other scenes keep the video's model.
func TestASceneMadeByItsOwnModelIsPricedByIt(t *testing.T) {
	rt := start(t, storyConfig())
	owner := newAccount(t, rt, domain.PlanEnterprise, 10000)
	body := storyBody("A day at the seaside", "en", false, "auto", []storyScene{{1, "waves"}, {2, "gulls"}})
	body["scenes"].([]any)[1].(map[string]any)["model"] = "delta-1-pro"
	estimate := map[string]any{"model": body["model"], "language_code": "en", "enable_narration": false, "scenes": body["scenes"]}
	est := call(t, rt, http.MethodPost, "/api/long-story/videos/estimate", owner.APIKey, estimate)
	plain := call(t, rt, http.MethodPost, "/api/long-story/videos/estimate", owner.APIKey, map[string]any{"model": "beta-2", "scene_count": 2})
	if est.status != http.StatusOK || plain.status != http.StatusOK {
		t.Fatalf("estimates: HTTP %d %s; HTTP %d %s", est.status, est.body, plain.status, plain.body)
	}
	price := decimal.NewFromFloat(est.decoded["credits"].(map[string]any)["total"].(float64))
	if all := decimal.NewFromFloat(plain.decoded["credits"].(map[string]any)["total"].(float64)); price.Equal(all) {
		t.Fatalf("the estimate %s is the all-beta-2 price: the scene's model was not priced", price)
	}
	before := account(t, rt, owner.UserID)
	a := call(t, rt, http.MethodPost, "/api/long-story/videos", owner.APIKey, body)
	if a.status != http.StatusOK {
		t.Fatalf("create: HTTP %d %s", a.status, a.body)
	}
	if held := account(t, rt, owner.UserID).Held; !held.Equal(price) {
		t.Errorf("held %s, want the estimate %s", held, price)
	}
	final := waitStory(t, rt, owner.APIKey, a.str("video_id"))
	if final.str("status") != "completed" {
		t.Fatalf("video: %s", final.body)
	}
	v, err := rt.Store.GetLongVideo(context.Background(), a.str("video_id"))
	if err != nil {
		t.Fatal(err)
	}
	for n, want := range map[int]string{1: "provider-b/beta-2", 2: "provider-e/delta-1-pro"} {
		p, ok := rt.Simulator.Lookup(v.SceneStatus[n].ID)
		if !ok || p.Model != want {
			t.Errorf("scene %d was made by %q (job %q found: %v), want %s", n, p.Model, v.SceneStatus[n].ID, ok, want)
		}
	}
	after := settledAccount(t, rt, owner.UserID)
	if !after.Balance.Equal(before.Balance.Sub(price)) || !after.Held.IsZero() || !after.Captured.Sub(before.Captured).Equal(price) {
		t.Errorf("after the video: balance %s held %s captured %s; want %s spent", after.Balance, after.Held, after.Captured, price)
	}
}
