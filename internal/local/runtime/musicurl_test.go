package runtime_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/longform"
)

// music_url may be an https URL: the create fetches it through the egress
// guard and checks it as audio with ffprobe before any credit moves (a
// file that is not audio, one over the size limit or a host the guard
// refuses is a 400 naming music_url, nothing held); Assemble fetches it
// again and lays it under the narration. The completion webhook carries
// captions_url beside final_video_url.
func TestMusicFromAnHTTPSURLAndCaptionsInTheWebhook(t *testing.T) {
	const tone = 60
	song := filepath.Join(t.TempDir(), "song.mp3")
	if out, err := exec.Command("ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-f", "lavfi",
		"-i", fmt.Sprintf("sine=frequency=%d:sample_rate=22050:duration=3", tone), "-ac", "1", "-codec:a", "libmp3lame", song).CombinedOutput(); err != nil {
		t.Fatalf("make the song: %v %s", err, out)
	}
	raw, err := os.ReadFile(song)
	if err != nil {
		t.Fatal(err)
	}
	var fetches atomic.Int64
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		switch r.URL.Path {
		case "/song.mp3":
			w.Header().Set("Content-Type", "audio/mpeg")
			w.Write(raw)
		case "/big.mp3":
			w.Header().Set("Content-Length", fmt.Sprint(longform.MaxMusicURLBytes+1))
			w.Write(raw)
		default:
			w.Write([]byte("<html>not a song</html>"))
		}
	}))
	defer srv.Close()
	recv := newHookReceiver(t, 0)
	cfg := storyConfig()
	cfg.WebhookAllow = []string{hostPort(t, recv.srv.URL)}
	cfg.UpstreamCAs = append(cfg.UpstreamCAs, srv.Certificate())
	rt := start(t, cfg)
	owner := newAccount(t, rt, domain.PlanEnterprise, 10000)
	body := map[string]any{"prompt": "A day at the seaside", "language_code": "en", "model": "beta-2", "webhook_url": recv.srv.URL,
		"scenes":    []any{map[string]any{"scene_number": 1, "prompt": "waves", "narration": "The sea comes in."}},
		"music_url": srv.URL + "/song.mp3", "music_volume": 0.5}

	before := account(t, rt, owner.UserID)
	for name, u := range map[string]string{
		"not audio":       srv.URL + "/page.html",
		"over the limit":  srv.URL + "/big.mp3",
		"a private host":  "https://10.0.0.1/song.mp3",
		"not https":       "ftp://example.com/song.mp3",
		"the cloud's own": "https://169.254.169.254/latest/meta-data/",
		// A WAV header over junk: the header alone passed once, and the
		// video failed (refunded) at assembly after its scenes were made.
		"inline junk": "data:audio/wav;base64," + base64.StdEncoding.EncodeToString(append([]byte("RIFF\x24\x00\x00\x00WAVEfmt "), bytes.Repeat([]byte{0x5a}, 512)...)),
	} {
		b := maps.Clone(body)
		b["music_url"] = u
		a := call(t, rt, http.MethodPost, "/api/long-story/videos", owner.APIKey, malformed(b))
		if a.status != http.StatusBadRequest || !strings.Contains(string(a.body), `"field":"music_url"`) {
			t.Errorf("%s (%s): HTTP %d %s, want a 400 naming music_url", name, u, a.status, a.body)
		}
	}
	if after := account(t, rt, owner.UserID); !after.Balance.Equal(before.Balance) || !after.Held.Equal(before.Held) {
		t.Errorf("refused music moved credits: balance %s held %s, was %s and %s", after.Balance, after.Held, before.Balance, before.Held)
	}

	fetchesBefore := fetches.Load()
	final, path := studioVideo(t, rt, owner.APIKey, body)
	if n := fetches.Load() - fetchesBefore; n != 2 {
		t.Errorf("the song was fetched %d times, want twice (checked at create, laid at assembly)", n)
	}
	music := filteredLevels(t, path, fmt.Sprintf("bandpass=f=%d:width_type=q:w=8,bandpass=f=%d:width_type=q:w=8", tone, tone))
	if level := meanLevel(music, 3.5, 4.0); level < -40 {
		t.Errorf("music %.1f dB after the narration, want the song heard", level)
	}
	hooks := recv.wait(t, 1)
	var p struct {
		Type string         `json:"type"`
		Data map[string]any `json:"data"`
	}
	if err := json.Unmarshal(hooks[0].body, &p); err != nil {
		t.Fatal(err)
	}
	if p.Type != "long_video.completed" || p.Data["captions_url"] != final.str("captions_url") || p.Data["final_video_url"] != final.str("final_video_url") || final.str("captions_url") == "" {
		t.Errorf("webhook %s %v; want long_video.completed with captions_url %q and final_video_url %q", p.Type, p.Data, final.str("captions_url"), final.str("final_video_url"))
	}
	// The status view and the webhook (the same view) show the studio the
	// video was made with: the URL and volume given, every default written
	// out.
	want := map[string]any{"captions": "sidecar", "voice": "joanna", "aspect_ratio": "landscape", "transition": "cut",
		"music_url": srv.URL + "/song.mp3", "music_volume": 0.5, "narration_speed": 1.0, "language": "en"}
	for name, got := range map[string]any{"status view": final.decoded["studio"], "webhook": p.Data["studio"]} {
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s studio %v, want %v", name, got, want)
		}
	}
}
