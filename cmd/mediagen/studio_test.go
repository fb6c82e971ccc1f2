package main

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mediagen-dev/mediagen/internal/adapters/ffmpeg"
	"github.com/mediagen-dev/mediagen/internal/local/runtime"
	"github.com/mediagen-dev/mediagen/internal/testkit/runtimetest"
)

// Every studio flag of story create reaches the video: story status prints
// the options the service applied, one line each, defaults written out.
func TestStoryCreateStudioFlagsShowInStoryStatus(t *testing.T) {
	song := filepath.Join(t.TempDir(), "song.wav")
	// 8 s of 16-bit 8 kHz: 128 KB, more than a data: URI holds (96 KiB),
	// which the upload takes.
	if err := (ffmpeg.Runner{}).Run(context.Background(), "-f", "lavfi", "-i", "sine=frequency=220:sample_rate=8000:duration=8", "-ac", "1", song); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(song)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "audio/wav")
		w.Write(raw)
	}))
	defer srv.Close()
	rt := runtimetest.Start(t, runtime.Config{UpstreamCAs: []*x509.Certificate{srv.Certificate()}})
	t.Setenv(envBaseURL, rt.BaseURL)
	t.Setenv(envAPIKey, rt.Dev.APIKey)
	scene := []string{"story", "create", "--prompt", "A day at the seaside", "--scene", "waves on the beach", "--json"}
	tests := []struct {
		name  string
		flags []string
		want  []string // lines of story status ("…" at the end: a line that starts so)
		not   []string // labels story status leaves out
	}{
		{"every flag, music from a file, uploaded",
			[]string{"--captions", "burned", "--voice", "matthew", "--portrait", "--transition", "crossfade",
				"--music", "@" + song, "--music-volume", "0.4", "--narration-speed", "1.1"},
			[]string{"captions burned", "aspect_ratio portrait", "transition crossfade", "language en",
				"voice matthew", "narration_speed 1.1", "music_url mediagen://files/…", "music_volume 0.4"}, nil},
		{"music from a URL at its default volume, sidecar captions",
			[]string{"--music", srv.URL + "/song.wav", "--captions", "sidecar"},
			[]string{"captions sidecar", "aspect_ratio landscape", "transition cut", "voice joanna",
				"narration_speed 1", "music_url " + srv.URL + "/song.wav", "music_volume 0.3"}, nil},
		{"no narration, cut, in French",
			[]string{"--no-narration", "--language", "fr", "--transition", "cut"},
			[]string{"captions none", "transition cut", "language fr"},
			[]string{"voice", "narration_speed", "music_url", "music_volume"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := mediagen(t, append(scene, tt.flags...)...)
			var created struct {
				VideoID string `json:"video_id"`
			}
			if code != 0 || json.Unmarshal([]byte(stdout), &created) != nil || created.VideoID == "" {
				t.Fatalf("story create %v: exit %d, stdout %q, stderr %q", tt.flags, code, stdout, stderr)
			}
			code, stdout, stderr = mediagen(t, "story", "status", created.VideoID)
			if code != 0 {
				t.Fatalf("story status: exit %d, stderr %q", code, stderr)
			}
			lines := strings.Split(stdout, "\n")
			for _, want := range tt.want {
				found := false
				for _, l := range lines {
					line := strings.Join(strings.Fields(l), " ")
					prefix, isPrefix := strings.CutSuffix(want, "…")
					found = found || line == want || isPrefix && strings.HasPrefix(line, prefix) && len(line) > len(prefix)
				}
				if !found {
					t.Errorf("story status lacks the line %q:\n%s", want, stdout)
				}
			}
			for _, label := range tt.not {
				for _, l := range lines {
					if strings.HasPrefix(l, label+" ") {
						t.Errorf("story status prints %q; want no %s", l, label)
					}
				}
			}
		})
	}
}
