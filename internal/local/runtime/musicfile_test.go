package runtime_test

import (
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// sineMP3 is an MP3 of 3 s of a sine tone of hz, made by ffmpeg.
func sineMP3(t *testing.T, hz int) []byte {
	t.Helper()
	song := filepath.Join(t.TempDir(), "song.mp3")
	if out, err := exec.Command("ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-f", "lavfi",
		"-i", fmt.Sprintf("sine=frequency=%d:sample_rate=22050:duration=3", hz), "-ac", "1", "-codec:a", "libmp3lame", song).CombinedOutput(); err != nil {
		t.Fatalf("make the song: %v %s", err, out)
	}
	raw, err := os.ReadFile(song)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// music_url may name an uploaded audio file (mediagen://files/<id>): the
// create copies it for the video and checks the copy before any credit
// moves (the caller's, uploaded as audio, its bytes audio by ffprobe), and
// Assemble reads that copy from the bucket and lays it under the
// narration, heard in the result, though other bytes were PUT to the
// file's upload_url right after the create. A file
// whose bytes are no audio, another account's file, an image file, or a
// file URL naming no file is a 400 naming music_url with nothing held; an
// audio file in an image field is a 400 naming that field.
func TestMusicFromAnUploadedFile(t *testing.T) {
	const tone = 60
	raw := sineMP3(t, tone)
	rt := start(t, storyConfig())
	owner := newAccount(t, rt, domain.PlanEnterprise, 10000)
	other := newAccount(t, rt, domain.PlanEnterprise, 10000)
	songFile := upload(t, rt, owner.APIKey, "audio/mpeg", len(raw))
	if status, answer := put(t, songFile.str("upload_url"), "audio/mpeg", raw); status != http.StatusOK {
		t.Fatalf("PUT: HTTP %d %s", status, answer)
	}
	songURL := songFile.str("url")
	body := map[string]any{"prompt": "A day at the seaside", "language_code": "en", "model": "beta-2",
		"scenes":    []any{map[string]any{"scene_number": 1, "prompt": "waves", "narration": "The sea comes in."}},
		"music_url": songURL, "music_volume": 0.5}

	before := account(t, rt, owner.UserID)
	for name, u := range map[string]string{
		"bytes that are no audio": uploaded(t, rt, owner.APIKey, "audio/mpeg", []byte("not a sound at all, just text that claims to be one")),
		"another account's file":  uploaded(t, rt, other.APIKey, "audio/mpeg", raw),
		"an image file":           uploaded(t, rt, owner.APIKey, "image/png", noisePNG(t, 16)),
		"a file never uploaded":   domain.FileURL(domain.NewFileID(time.Now())),
		"not a file id":           "mediagen://files/song.mp3",
	} {
		b := maps.Clone(body)
		b["music_url"] = u
		a := call(t, rt, http.MethodPost, "/api/long-story/videos", owner.APIKey, malformed(b))
		if a.status != http.StatusBadRequest || !strings.Contains(string(a.body), `"field":"music_url"`) {
			t.Errorf("%s (%s): HTTP %d %s, want a 400 naming music_url", name, u, a.status, a.body)
		}
	}
	gen := map[string]any{"model": "provider-a", "model_version": "zeta", "input": map[string]any{"prompt": "the harbour", "image_input": []any{songURL}}}
	if a := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, malformed(gen)); a.status != http.StatusBadRequest ||
		!strings.Contains(string(a.body), "input.image_input[0]") || !strings.Contains(string(a.body), "is audio") {
		t.Errorf("an audio file in an image field: HTTP %d %s, want a 400 naming input.image_input[0]", a.status, a.body)
	}
	if after := account(t, rt, owner.UserID); !after.Balance.Equal(before.Balance) || !after.Held.Equal(before.Held) {
		t.Errorf("refused music moved credits: balance %s held %s, was %s and %s", after.Balance, after.Held, before.Balance, before.Held)
	}

	a := call(t, rt, http.MethodPost, "/api/long-story/videos", owner.APIKey, body)
	if a.status != http.StatusOK {
		t.Fatalf("create: HTTP %d %s", a.status, a.body)
	}
	if status, answer := put(t, songFile.str("upload_url"), "audio/mpeg", make([]byte, len(raw))); status != http.StatusOK {
		t.Fatalf("the second PUT to the upload_url: HTTP %d %s", status, answer)
	}
	final := waitStory(t, rt, owner.APIKey, a.str("video_id"))
	if final.str("status") != "completed" {
		t.Fatalf("video: %s", final.body)
	}
	path, ok := download(t, final.str("final_video_url"), t.TempDir(), "studio.mp4")
	if !ok {
		t.FailNow()
	}
	music := filteredLevels(t, path, fmt.Sprintf("bandpass=f=%d:width_type=q:w=8,bandpass=f=%d:width_type=q:w=8", tone, tone))
	if level := meanLevel(music, 3.5, 4.0); level < -40 {
		t.Errorf("music %.1f dB after the narration, want the uploaded song heard", level)
	}
	studio, _ := final.decoded["studio"].(map[string]any)
	if studio["music_url"] != songURL {
		t.Errorf("the status view's studio music_url %v, want the file URL %s", studio["music_url"], songURL)
	}
}
