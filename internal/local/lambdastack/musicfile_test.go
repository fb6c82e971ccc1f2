package lambdastack

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Music from an uploaded file on the deployed shape: the long-form create
// function, under its role, finds the caller's file by listing uploads/,
// copies it to the video's own key under inputs/, reads the copy and
// probes it as audio before any credit moves (a file whose bytes are no
// audio is a 400 naming music_url, nothing held); Assemble, under its
// role, reads that copy from the bucket by its key and lays it under the
// narration, heard in the final video. moto denies nothing.
func TestMusicFromAnUploadedFileThroughTheBucket(t *testing.T) {
	l := shared(t)
	acct := newAccount(t, l, 1000)
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
	request := func(music string) string {
		b, _ := json.Marshal(map[string]any{"prompt": "A day at the seaside", "language_code": "en", "model": "beta-2",
			"scenes":    []any{map[string]any{"scene_number": 1, "prompt": "waves", "narration": "The sea comes in."}},
			"music_url": music, "music_volume": 0.5})
		return string(b)
	}

	balBefore, heldBefore := balance(t, l, acct.APIKey)
	noise := uploadFile(t, l, acct.APIKey, "audio/mpeg", []byte("not a sound at all, just text that claims to be one"))
	if status, out := callAs(t, l, acct.APIKey, http.MethodPost, "/api/long-story/videos", request(noise)); status != http.StatusBadRequest || !strings.Contains(toJSON(out), `"field":"music_url"`) {
		t.Errorf("a file whose bytes are no audio: HTTP %d %v, want a 400 naming music_url", status, out)
	}
	if bal, held := balance(t, l, acct.APIKey); !bal.Equal(balBefore) || !held.Equal(heldBefore) {
		t.Errorf("refused music moved credits: balance %s held %s, was %s and %s", bal, held, balBefore, heldBefore)
	}

	created := mustCall(t, l, acct.APIKey, http.MethodPost, "/api/long-story/videos", request(uploadFile(t, l, acct.APIKey, "audio/mpeg", raw)), http.StatusOK)
	id, _ := created["video_id"].(string)
	view := waitStatusAs(t, l, acct.APIKey, "/api/long-story/videos/"+id, 4*time.Minute)
	if view["status"] != "completed" {
		t.Fatalf("the video ended %v: %v\n%s", view["status"], view, l.workflowLogs())
	}
	if level := musicLevel(t, l, fmt.Sprint(view["final_video_url"]), tone); level < -40 {
		t.Errorf("music %.1f dB after the narration, want the uploaded song heard", level)
	}
	if d := l.Moto.Denials(); len(d) > 0 {
		t.Errorf("moto denied %d calls: %+v", len(d), d)
	}
}

// musicLevel is the mean level, in dB, of the tone of hz in the final
// video at finalURL after its narration (3.5 s to 4 s; the narration ends
// before 3 s), measured by ffmpeg's volumedetect in a narrow band at the
// tone.
func musicLevel(t *testing.T, l *Local, finalURL string, hz int) float64 {
	t.Helper()
	resp, err := l.Media.Client().Get(finalURL)
	if err != nil {
		t.Fatal(err)
	}
	video, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	path := filepath.Join(t.TempDir(), "final.mp4")
	if err := os.WriteFile(path, video, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("ffmpeg", "-hide_banner", "-nostdin", "-ss", "3.5", "-t", "0.5", "-i", path, "-vn",
		"-af", fmt.Sprintf("bandpass=f=%d:width_type=q:w=8,bandpass=f=%d:width_type=q:w=8,volumedetect", hz, hz), "-f", "null", "-").CombinedOutput()
	m := regexp.MustCompile(`mean_volume: (-?[0-9.]+|-inf) dB`).FindSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("measure the music of %s: %v %s", path, err, out)
	}
	level, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		return math.Inf(-1) // "-inf": silence
	}
	return level
}
