package main

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/client"
	"github.com/mediagen-dev/mediagen/internal/adapters/ffmpeg"
	"github.com/mediagen-dev/mediagen/internal/local/runtime"
	"github.com/mediagen-dev/mediagen/internal/local/simulator"
	"github.com/mediagen-dev/mediagen/internal/testkit/clocktest"
	"github.com/mediagen-dev/mediagen/internal/testkit/runtimetest"
)

// clientEnv points the client commands at a fresh local runtime through
// the environment, as a user's shell would.
func clientEnv(t *testing.T) *runtime.Runtime {
	t.Helper()
	rt := runtimetest.Start(t, runtime.Config{})
	t.Setenv(envBaseURL, rt.BaseURL)
	t.Setenv(envAPIKey, rt.Dev.APIKey)
	return rt
}

func TestGenerateWaitsAndDownloadsTheImages(t *testing.T) {
	clientEnv(t)
	out := t.TempDir()
	code, stdout, stderr := mediagen(t, "generate", "--model", "provider-a", "--version", "zeta-pro",
		"--input", "prompt=a lighthouse at dawn", "--input", "aspect_ratio=16:9", "--input", "enable_web_search=false",
		"--image-count", "2", "--wait", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	// --wait asks Prefer: wait first: a quick image is answered completed.
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "completed, 36.40 credits") {
		t.Fatalf("stdout %q, want the completed record's line (Prefer: wait) and two file paths", stdout)
	}
	for _, path := range lines[1:] {
		raw, err := os.ReadFile(path)
		if err != nil || filepath.Dir(path) != out || filepath.Ext(path) != ".png" {
			t.Fatalf("%s: %v", path, err)
		}
		if cfg, err := png.DecodeConfig(bytes.NewReader(raw)); err != nil || cfg.Width <= cfg.Height {
			t.Errorf("%s: %v %dx%d, want a 16:9 PNG", path, err, cfg.Width, cfg.Height)
		}
	}
	// Not a terminal: plain progress lines, no carriage returns.
	if !strings.Contains(stderr, "(Prefer: wait) (") || !strings.Contains(stderr, "completed (") || strings.Contains(stderr, "\r") {
		t.Errorf("stderr %q, want plain progress lines", stderr)
	}
}

// generate --wait shows, while a video runs, the time left by the
// variant's typical duration (GET /api/models' typical_seconds, a minute),
// and the final state on one line, the last. The video outlasts the
// Prefer: wait (its clock moved past the 25 s cap), so the command follows
// the generation's event stream for the rest.
func TestGenerateWaitShowsTimeLeftAndOneFinalLine(t *testing.T) {
	waitClock := clocktest.New(time.Now())
	rt := runtimetest.Start(t, runtime.Config{WaitClock: waitClock, SimulatorLatency: 3 * time.Second})
	t.Setenv(envBaseURL, rt.BaseURL)
	t.Setenv(envAPIKey, rt.Dev.APIKey)
	go func() {
		// Each Prefer: wait arms a timer on its clock: move it past the cap.
		for waitClock.WaitForTimers(1, 2*time.Minute) {
			waitClock.Advance(time.Minute)
		}
	}()
	tests := []struct {
		name     string
		args     []string
		timeLeft *regexp.Regexp
	}{
		{"video", []string{"--model", "provider-b", "--version", "beta-2", "--input", "prompt=waves",
			"--input", "seconds=4", "--input", "aspect_ratio=landscape"}, regexp.MustCompile(`^processing, about (1m0s|[1-5]?[0-9]s) left +[0-9]+% \(`)},
		// An image may be done by the first look (its time left is
		// TestGenerationLineSaysTheTimeLeft's).
		{"image", []string{"--model", "provider-a", "--version", "theta-4-fast", "--input", "prompt=an owl"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := mediagen(t, append(append([]string{"generate"}, tt.args...), "--wait", "--out", t.TempDir())...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			final := 0
			timeLeft := false
			for _, l := range lines {
				if strings.HasPrefix(l, "completed") {
					final++
				}
				timeLeft = timeLeft || tt.timeLeft == nil || tt.timeLeft.MatchString(l)
			}
			if final != 1 || !regexp.MustCompile(`^completed \([0-9.]+m?s\)$`).MatchString(lines[len(lines)-1]) {
				t.Errorf("stderr %q: want one final line, \"completed (elapsed)\", the last", stderr)
			}
			if !timeLeft {
				t.Errorf("stderr %q: want a line with the time left (%s)", stderr, tt.timeLeft)
			}
		})
	}
}

func TestFlagsOverrideTheEnvironment(t *testing.T) {
	rt := runtimetest.Start(t, runtime.Config{})
	t.Setenv(envBaseURL, "http://127.0.0.1:1") // nothing listens there
	t.Setenv(envAPIKey, "mgk_aaaaaaaaaa_not-a-key")
	code, stdout, stderr := mediagen(t, "generate", "--base-url", rt.BaseURL, "--api-key", rt.Dev.APIKey,
		"--model", "provider-a", "--version", "theta-4-fast", "--input", "prompt=a fox")
	if code != 0 || !strings.Contains(stdout, "processing, 2.60 credits held") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

func TestCommandsPrintTheEnvelopesMessageAndExitNonZero(t *testing.T) {
	clientEnv(t)
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"missing fields", []string{"generate", "--model", "provider-b", "--version", "beta-2", "--input", "prompt=waves"},
			[]string{"mediagen generate: the request has several invalid fields", "input.aspect_ratio: is required", "input.seconds: is required"}},
		{"bad boolean", []string{"generate", "--model", "provider-a", "--version", "alpha-3.1-fast", "--input", "prompt=p", "--input", "generate_audio=maybe"},
			[]string{"--input generate_audio: want true or false"}},
		{"unknown generation", []string{"status", "6f1c2a8e-3b7d-4e2f-9a51-0c8d7e6b5a43"}, []string{"mediagen status: no such resource"}},
		{"too many scenes", []string{"story", "estimate", "--scenes", "21"}, []string{"mediagen story estimate:", "scene_count"}},
		{"unsupported language", []string{"story", "create", "--prompt", "p", "--scene", "s", "--language", "xx"},
			[]string{"language_code", "not a supported narration language"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := mediagen(t, tt.args...)
			if code == 0 {
				t.Fatalf("exit 0, stdout %q", stdout)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q lacks %q", stderr, w)
				}
			}
		})
	}
	t.Run("wrong key", func(t *testing.T) {
		t.Setenv(envAPIKey, "mgk_aaaaaaaaaa_not-a-real-key-at-all-not-a-real-key-at-all")
		if code, _, stderr := mediagen(t, "status", "1"); code != 1 || stderr != "mediagen status: invalid API key\n" {
			t.Errorf("exit %d, stderr %q", code, stderr)
		}
	})
}

func TestStatusShowsAGenerationAndALongVideo(t *testing.T) {
	clientEnv(t)
	code, stdout, _ := mediagen(t, "generate", "--model", "provider-a", "--version", "theta-4-fast", "--input", "prompt=a fox", "--json")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	uuid := decode[struct{ UUID string }](t, stdout).UUID
	code, stdout, stderr := mediagen(t, "status", uuid)
	if code != 0 || !strings.Contains(stdout, "id          "+uuid) || !strings.Contains(stdout, "model       provider-a/theta-4-fast") {
		t.Errorf("status: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, stdout, _ = mediagen(t, "story", "create", "--prompt", "A quiet harbour", "--scene", "boats at anchor", "--json")
	if code != 0 {
		t.Fatalf("story create: exit %d", code)
	}
	video := decode[struct {
		VideoID string `json:"video_id"`
	}](t, stdout).VideoID
	// status finds a long video too; story status reads one directly.
	for _, args := range [][]string{{"status", video}, {"story", "status", video}} {
		code, stdout, stderr = mediagen(t, args...)
		if code != 0 || !strings.Contains(stdout, video) || !strings.Contains(stdout, "status") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
}

func TestDeleteOutputDeletesTheFilesAndStatusSaysSo(t *testing.T) {
	clientEnv(t)
	code, stdout, stderr := mediagen(t, "generate", "--model", "provider-a", "--version", "theta-4-fast", "--input", "prompt=a fox",
		"--wait", "--out", t.TempDir(), "--json")
	if code != 0 {
		t.Fatalf("generate: exit %d, stderr %q", code, stderr)
	}
	uuid := decode[struct{ UUID string }](t, strings.SplitN(stdout, "\n", 2)[0]).UUID
	if code, stdout, _ = mediagen(t, "status", uuid); code != 0 || !strings.Contains(stdout, "expires_at") {
		t.Errorf("status before: exit %d, stdout %q; want when the files expire", code, stdout)
	}
	for range 2 { // a repeat answers the same
		if code, stdout, stderr = mediagen(t, "delete-output", uuid); code != 0 || stdout != uuid+": the outputs are deleted\n" {
			t.Errorf("delete-output: exit %d, stdout %q, stderr %q", code, stdout, stderr)
		}
	}
	if code, stdout, _ = mediagen(t, "status", uuid); code != 0 || !strings.Contains(stdout, "data_removed") || strings.Contains(stdout, "output ") {
		t.Errorf("status after: exit %d, stdout %q; want data_removed and no output", code, stdout)
	}
	if code, _, stderr = mediagen(t, "story", "delete-output", "6f1c2a8e-3b7d-4e2f-9a51-0c8d7e6b5a43"); code != 1 ||
		stderr != "mediagen story delete-output: no such resource\n" {
		t.Errorf("story delete-output of an unknown video: exit %d, stderr %q", code, stderr)
	}
}

func TestStoryEstimateAndCreateDownloadTheVideo(t *testing.T) {
	clientEnv(t)
	code, stdout, stderr := mediagen(t, "story", "estimate", "--model", "beta-2", "--scenes", "4")
	if want := "beta-2: 4 scenes × 5 s = 20 s, 13 credits per second: 260 credits\n"; code != 0 || stdout != want {
		t.Errorf("estimate: exit %d, stdout %q (want %q), stderr %q", code, stdout, want, stderr)
	}
	out := t.TempDir()
	code, stdout, stderr = mediagen(t, "story", "create", "--prompt", "A day at the seaside",
		"--scene", "waves rolling onto the sand", "--scene", "gulls over the pier", "--narration", "The sea comes in.",
		"--language", "en", "--wait", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "2 scenes, about 10 seconds; 130.00 credits are held") || !strings.HasSuffix(lines[1], ".mp4 (10.0 s)") ||
		filepath.Ext(lines[2]) != ".vtt" {
		t.Fatalf("stdout %q, want the record line, the video and its captions", stdout)
	}
	if raw, err := os.ReadFile(lines[2]); err != nil || !strings.HasPrefix(string(raw), "WEBVTT\n") || !strings.Contains(string(raw), "The sea comes in.") {
		t.Errorf("%s is not the video's WebVTT captions: %q, %v", lines[2], raw, err)
	}
	path := strings.TrimSuffix(lines[1], " (10.0 s)")
	if raw, err := os.ReadFile(path); err != nil || len(raw) < 12 || string(raw[4:8]) != "ftyp" {
		t.Errorf("%s is not an MP4 file: %v", path, err)
	}
	if !strings.Contains(stderr, "2 scenes processing (") || !strings.Contains(stderr, "completed (") {
		t.Errorf("stderr %q, want the progress lines", stderr)
	}
	// The final state once, on the last line.
	progress := strings.Split(strings.TrimSpace(stderr), "\n")
	if last := progress[len(progress)-1]; strings.Count(stderr, "completed") != 1 || !strings.HasPrefix(last, "scene 1 ✓ · scene 2 ✓ completed (") {
		t.Errorf("stderr %q: want the final state once, \"scene 1 ✓ · scene 2 ✓ completed (elapsed)\", the last line", stderr)
	}
}

func TestStoryCreatePortraitWithMusicMakesAnUprightVideoWithSound(t *testing.T) {
	clientEnv(t)
	out := t.TempDir()
	song := filepath.Join(t.TempDir(), "song.wav")
	if err := (ffmpeg.Runner{}).Run(context.Background(), "-f", "lavfi", "-i", "sine=frequency=220:sample_rate=8000:duration=1", "-ac", "1", song); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := mediagen(t, "story", "create", "--prompt", "A day at the seaside",
		"--scene", "a lighthouse on the cliff", "--no-narration", "--portrait", "--music", "@"+song, "--wait", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	path := strings.TrimSuffix(lines[len(lines)-1], " (5.0 s)")
	info, err := ffmpeg.Runner{}.Probe(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := info.Video(); !ok || v.Width != 720 || v.Height != 1280 {
		t.Errorf("%s: video %+v, want 720x1280", path, v)
	}
	// Without narration, the music is the sound.
	if _, ok := info.Audio(); !ok {
		t.Errorf("%s has no audio; want --music's song", path)
	}
}

func TestModelsListsVariantsFieldsAndPrices(t *testing.T) {
	clientEnv(t)
	t.Setenv(envAPIKey, "") // the catalog is public
	code, stdout, stderr := mediagen(t, "models")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"provider-a/alpha-3.1-fast  video  13.00 credits per second; 26.00 if generate_audio=true, resolution=1080p;",
		"provider-b/beta-2  video  13.00 credits per second\n",
		"  seconds (required)       4|8|12",
		"provider-a/zeta-pro  image  18.20 credits per image; 36.40 if resolution=4K; 18.20 at defaults",
		"provider-g/iota-v3-turbo  image",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("models output lacks %q", want)
		}
	}
}

func TestClientCommandsHaveHelpThatHidesTheKey(t *testing.T) {
	t.Setenv(envAPIKey, "mgk_secretsecr_do-not-print-me")
	for _, args := range [][]string{{"generate", "--help"}, {"story", "create", "-h"}, {"models", "-h"}} {
		code, out, errOut := mediagen(t, args...)
		if code != 0 || !strings.Contains(out, "usage: mediagen") || !strings.Contains(out, "-base-url") || errOut != "" ||
			strings.Contains(out, "do-not-print-me") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
}

// account keys create, list and revoke call the key routes with the
// caller's key; the admin commands keep their names (keys create --user,
// keys revoke --prefix) and a client-looking `keys list` says where to go.
func TestAccountKeysCommandsManageTheCallersKeys(t *testing.T) {
	clientEnv(t)
	code, stdout, stderr := mediagen(t, "account", "keys", "create", "--name", "ci", "--scopes", "read", "--daily-credit-limit", "12.5")
	secret := strings.TrimSpace(stdout)
	if code != 0 || !strings.HasPrefix(secret, "mgk_") || !strings.Contains(stderr, "shown this once") {
		t.Fatalf("create: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	prefix := secret[:len("mgk_")+10]
	code, stdout, stderr = mediagen(t, "account", "keys", "list")
	if code != 0 || !strings.Contains(stdout, prefix) || !strings.Contains(stdout, "12.50") || strings.Contains(stdout, secret) {
		t.Fatalf("list: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	// The new key lacks admin: it cannot list keys.
	code, _, stderr = mediagen(t, "account", "keys", "list", "--api-key", secret)
	if code == 0 || !strings.Contains(stderr, "admin scope") {
		t.Errorf("list with a read key: exit %d, stderr %q", code, stderr)
	}
	code, stdout, stderr = mediagen(t, "account", "keys", "revoke", prefix, "--json")
	if code != 0 || decode[map[string]any](t, stdout)["prefix"] != prefix {
		t.Fatalf("revoke: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, _, stderr = mediagen(t, "account", "keys", "create")
	if code == 0 || !strings.Contains(stderr, "name: must be 1 to 64 characters") {
		t.Errorf("create without a name: exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = mediagen(t, "keys", "list")
	if code != exitUsage || !strings.Contains(stderr, "account keys list") {
		t.Errorf("keys list: exit %d, stderr %q; want a pointer to account keys", code, stderr)
	}
}

// TestARefusedGenerateIsSentOnce: the provider's refusal of the input is
// its final word (502 upstream_refused): one mediagen generate makes one
// failed record and one create at the provider, charges nothing, and
// names the failed record so it can be found in the list.
func TestARefusedGenerateIsSentOnce(t *testing.T) {
	rt := clientEnv(t)
	code, stdout, stderr := mediagen(t, "generate", "--model", "provider-a", "--version", "theta-4-fast",
		"--input", "prompt=a fox "+simulator.MarkerRefuse)
	if code == 0 || !strings.Contains(stderr, simulator.SimulatedRefusal) {
		t.Fatalf("exit %d, stdout %q, stderr %q; want the provider's refusal", code, stdout, stderr)
	}
	if n := rt.Simulator.Creates("provider-a/theta-4-fast"); n != 1 {
		t.Errorf("the provider received %d creates, want 1", n)
	}
	list, err := client.New(rt.BaseURL, rt.Dev.APIKey).Generations(context.Background(), client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Data) != 1 || list.Data[0].Status != client.StatusFailed {
		t.Fatalf("the account holds %d generations (%+v), want the one failed", len(list.Data), list.Data)
	}
	if want := "generation " + list.Data[0].ID + " (failed, nothing charged)"; !strings.Contains(stderr, want) {
		t.Errorf("stderr %q does not name the failed record (%q)", stderr, want)
	}
	if a, err := rt.Store.GetAccount(context.Background(), rt.Dev.UserID); err != nil || !a.Held.IsZero() || !a.Captured.IsZero() {
		t.Errorf("account %+v, %v: want nothing held or captured", a, err)
	}
}

func TestStoryVoicesListsAndStoryCreateTakesAVoice(t *testing.T) {
	clientEnv(t)
	code, stdout, stderr := mediagen(t, "story", "voices", "--language", "fr")
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if code != 0 || len(lines) != 2 || !strings.HasPrefix(lines[0], "lea (default)") || !strings.HasPrefix(lines[1], "remi ") ||
		!strings.Contains(lines[1], "male") || !strings.Contains(lines[1], "/voices/fr/remi/preview.") {
		t.Fatalf("story voices: exit %d, stdout %q, stderr %q; want lea (default) and remi with their clips", code, stdout, stderr)
	}
	code, stdout, stderr = mediagen(t, "story", "create", "--prompt", "Un jour à la mer", "--scene", "les vagues sur le sable",
		"--language", "fr", "--voice", "remi", "--narration-speed", "1.2", "--json")
	if code != 0 || !strings.Contains(stdout, `"video_id"`) {
		t.Errorf("story create --voice remi: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, _, stderr = mediagen(t, "story", "create", "--prompt", "Un jour à la mer", "--scene", "les vagues sur le sable",
		"--language", "fr", "--voice", "hal")
	if code != 1 || !strings.Contains(stderr, "voice") || !strings.Contains(stderr, "lea, remi") {
		t.Errorf("story create --voice hal: exit %d, stderr %q; want the voices of fr named", code, stderr)
	}
	code, _, stderr = mediagen(t, "story", "create", "--prompt", "Un jour à la mer", "--scene", "les vagues sur le sable",
		"--language", "fr", "--narration-speed", "2")
	if code != 1 || !strings.Contains(stderr, "narration_speed") {
		t.Errorf("story create --narration-speed 2: exit %d, stderr %q; want the service's narration_speed refusal", code, stderr)
	}
}
