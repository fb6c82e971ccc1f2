package runtime_test

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mediagen-dev/mediagen/internal/adapters/ffmpeg"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/longform"
	"github.com/mediagen-dev/mediagen/internal/local/runtime"
	"github.com/mediagen-dev/mediagen/internal/local/simulator"
)

// studioVideo makes a long video of body through the HTTP API and answers
// its final status and the downloaded mp4.
func studioVideo(t *testing.T, rt *runtime.Runtime, key string, body map[string]any) (answer, string) {
	t.Helper()
	a := call(t, rt, http.MethodPost, "/api/long-story/videos", key, body)
	if a.status != http.StatusOK {
		t.Fatalf("create: HTTP %d %s", a.status, a.body)
	}
	final := waitStory(t, rt, key, a.str("video_id"))
	if final.str("status") != "completed" {
		t.Fatalf("video: %s", final.body)
	}
	path, ok := download(t, final.str("final_video_url"), t.TempDir(), "studio.mp4")
	if !ok {
		t.FailNow()
	}
	return final, path
}

func TestPortraitLongVideoIs720x1280(t *testing.T) {
	rt := start(t, storyConfig())
	owner := newAccount(t, rt, domain.PlanEnterprise, 10000)
	scenes := []storyScene{{1, "a lighthouse on a cliff"}, {2, "a boat leaves the harbour"}}
	for _, model := range []string{"beta-2", "delta-1-pro"} {
		t.Run(model, func(t *testing.T) {
			body := storyBody("The coast", "en", false, "auto", scenes)
			body["model"], body["aspect_ratio"] = model, "portrait"
			_, path := studioVideo(t, rt, owner.APIKey, body)
			ff := ffmpeg.Runner{}
			info, err := ff.Probe(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			v, ok := info.Video()
			if !ok || v.Width != 720 || v.Height != 1280 {
				t.Fatalf("video stream %+v, want 720x1280", v)
			}
			// The scenes fill the upright frame: a pixel near the top
			// shows each scene's own colour, not a pad bar.
			for _, s := range scenes {
				want := simulator.ColorFor(longform.ScenePrompt("auto", "The coast", domain.Scene{SceneNumber: s.n, Prompt: s.prompt}))
				at := float64(s.n-1)*5 + 2.5
				got, err := ff.PixelAt(context.Background(), path, at, 360, 20)
				if err != nil {
					t.Fatal(err)
				}
				if diff(got.R, want.R) > 12 || diff(got.G, want.G) > 12 || diff(got.B, want.B) > 12 {
					t.Errorf("second %.1f at (360,20) shows %v, want scene %d's colour %v", at, got, s.n, want)
				}
			}
		})
	}
}

func TestPortraitOnAModelWithoutItIs400BeforeAnyCreditMoves(t *testing.T) {
	rt := start(t, storyConfig())
	owner := newAccount(t, rt, domain.PlanEnterprise, 10000)
	before := account(t, rt, owner.UserID)
	body := storyBody("The coast", "en", true, "auto", []storyScene{{1, "a lighthouse"}})
	body["model"], body["aspect_ratio"] = "video-01", "portrait"
	estimate := map[string]any{"model": "video-01", "scene_count": 1, "aspect_ratio": "portrait"}
	for route, body := range map[string]map[string]any{"/api/long-story/videos": body, "/api/long-story/videos/estimate": estimate} {
		a := call(t, rt, http.MethodPost, route, owner.APIKey, body)
		checkEnvelope(t, a, http.StatusBadRequest)
		if !strings.Contains(string(a.body), `"field":"aspect_ratio"`) || !strings.Contains(string(a.body), "beta-2") {
			t.Errorf("%s: %s, want a 400 naming aspect_ratio and the models that make portrait", route, a.body)
		}
	}
	bad := storyBody("The coast", "en", true, "auto", []storyScene{{1, "a lighthouse"}})
	bad["aspect_ratio"] = "square"
	checkEnvelope(t, call(t, rt, http.MethodPost, "/api/long-story/videos", owner.APIKey, malformed(bad)), http.StatusBadRequest)
	after := account(t, rt, owner.UserID)
	if !after.Balance.Equal(before.Balance) || !after.Held.IsZero() {
		t.Errorf("refused requests moved credits: balance %s → %s, held %s", before.Balance, after.Balance, after.Held)
	}
}

// levelWindow is the span of one audio level of audioLevels.
const levelWindow = 0.01

// audioLevels decodes the audio of the video at path to mono 16 kHz PCM and
// answers its RMS level in dBFS over each levelWindow seconds.
func audioLevels(t *testing.T, path string) []float64 {
	t.Helper()
	const rate = 16000
	out, err := exec.Command("ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-i", path, "-vn",
		"-ac", "1", "-ar", strconv.Itoa(rate), "-f", "s16le", "pipe:1").Output()
	if err != nil {
		t.Fatalf("decode the audio of %s: %v", path, err)
	}
	per := int(rate * levelWindow)
	var levels []float64
	for i := 0; i+2*per <= len(out); i += 2 * per {
		sum := 0.0
		for j := 0; j < per; j++ {
			s := float64(int16(binary.LittleEndian.Uint16(out[i+2*j:]))) / 32768
			sum += s * s
		}
		levels = append(levels, 10*math.Log10(sum/float64(per)+1e-12))
	}
	return levels
}

// heard is where the audio is above threshold dBFS between from and to
// seconds: its first and last such window.
func heard(levels []float64, from, to, threshold float64) (start, end float64, ok bool) {
	for i := int(from / levelWindow); i < len(levels) && float64(i)*levelWindow < to; i++ {
		if levels[i] > threshold {
			if !ok {
				start, ok = float64(i)*levelWindow, true
			}
			end = float64(i+1) * levelWindow
		}
	}
	return start, end, ok
}

// sentencesHeard is where each of n sentences spoken between from and to
// seconds is heard: a sentence starts where sound resumes after one of
// the n-1 longest silences (below threshold dBFS) inside the speech, the
// pauses a narrator makes between sentences; end is where the sound ends.
func sentencesHeard(levels []float64, from, to, threshold float64, n int) (starts []float64, end float64, ok bool) {
	first, end, ok := heard(levels, from, to, threshold)
	if !ok {
		return nil, 0, false
	}
	type gap struct{ length, resume float64 }
	var gaps []gap
	quiet := -1.0
	for i := int(first / levelWindow); float64(i)*levelWindow < end && i < len(levels); i++ {
		at := float64(i) * levelWindow
		switch {
		case levels[i] <= threshold && quiet < 0:
			quiet = at
		case levels[i] > threshold && quiet >= 0:
			gaps = append(gaps, gap{at - quiet, at})
			quiet = -1
		}
	}
	if len(gaps) < n-1 {
		return nil, 0, false
	}
	slices.SortFunc(gaps, func(a, b gap) int { return cmp.Compare(b.length, a.length) })
	starts = []float64{first}
	for _, g := range gaps[:n-1] {
		starts = append(starts, g.resume)
	}
	slices.Sort(starts)
	return starts, end, true
}

// vttCue is a cue read back from a WebVTT file.
type vttCue struct {
	start, end float64
	text       string
}

// parseVTT reads the cues of a WebVTT file (timestamps hh:mm:ss.ttt).
func parseVTT(t *testing.T, raw string) []vttCue {
	t.Helper()
	if !strings.HasPrefix(raw, "WEBVTT") {
		t.Fatalf("captions do not start with WEBVTT: %q", raw)
	}
	stamp := func(s string) float64 {
		var h, m int
		var sec float64
		if _, err := fmt.Sscanf(s, "%d:%d:%f", &h, &m, &sec); err != nil {
			t.Fatalf("timestamp %q: %v", s, err)
		}
		return float64(h*3600+m*60) + sec
	}
	var cues []vttCue
	for _, block := range strings.Split(strings.TrimSpace(raw), "\n\n")[1:] {
		lines := strings.Split(block, "\n")
		for i, l := range lines {
			if from, to, ok := strings.Cut(l, " --> "); ok {
				cues = append(cues, vttCue{start: stamp(from), end: stamp(to), text: strings.Join(lines[i+1:], " ")})
				if n := len(lines[i+1:]); n < 1 || n > 2 {
					t.Errorf("cue %q has %d lines, want 1 or 2", block, n)
				}
				break
			}
		}
	}
	return cues
}

func TestCaptionsAreTimedFromTheNarration(t *testing.T) {
	rt := start(t, storyConfig())
	owner := newAccount(t, rt, domain.PlanEnterprise, 10000)
	// Each scene's narration, a sentence at a time: one cue a sentence, as
	// Polly's speech marks give in AWS.
	narrations := [][]string{
		{"The sea comes in.", "The tide turns."},
		{"Gulls circle over the old pier.", "They call to each other.", "Night falls."},
		{"And the day ends as it began."},
	}
	list := []any{}
	for i, n := range narrations {
		list = append(list, map[string]any{"scene_number": i + 1, "prompt": fmt.Sprintf("scene %d of the seaside", i+1), "narration": strings.Join(n, " ")})
	}
	// captions is left out: a narrated video has them by default.
	body := map[string]any{"prompt": "A day at the seaside", "language_code": "en", "model": "beta-2", "scenes": list}
	final, path := studioVideo(t, rt, owner.APIKey, body)
	url := final.str("captions_url")
	if want := strings.TrimSuffix(final.str("final_video_url"), "final.mp4") + "captions.vtt"; url != want {
		t.Fatalf("captions_url %q, want %q beside the final video", url, want)
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/vtt" {
		t.Fatalf("GET %s: HTTP %d, type %q, %v", url, resp.StatusCode, resp.Header.Get("Content-Type"), err)
	}
	cues := parseVTT(t, string(raw))
	var sentences []string
	for _, n := range narrations {
		sentences = append(sentences, n...)
	}
	if len(cues) != len(sentences) {
		t.Fatalf("%d cues, want one per sentence (%d):\n%s", len(cues), len(sentences), raw)
	}
	levels := audioLevels(t, path)
	k := 0
	for i, n := range narrations {
		from := float64(i * longform.SceneSeconds)
		starts, end, ok := sentencesHeard(levels, from, from+longform.SceneSeconds, -45, len(n))
		if !ok {
			t.Fatalf("scene %d: no narration of %d sentences heard in the video", i+1, len(n))
		}
		for j, sentence := range n {
			c := cues[k]
			k++
			t.Logf("cue %d %q: %.2f–%.2f s, its sentence heard from %.2f s", k, c.text, c.start, c.end, starts[j])
			if c.text != sentence {
				t.Errorf("cue %d says %q, want the sentence %q", k, c.text, sentence)
			}
			if math.Abs(c.start-starts[j]) > 0.3 {
				t.Errorf("cue %d starts at %.2f s; its sentence is heard from %.2f s (want within 0.3 s)", k, c.start, starts[j])
			}
			if j == len(n)-1 && math.Abs(c.end-end) > 0.3 {
				t.Errorf("cue %d, the scene's last, ends at %.2f s; its narration is heard until %.2f s (want within 0.3 s)", k, c.end, end)
			}
		}
	}

	// captions none, and a video without narration, have no file.
	for name, extra := range map[string]map[string]any{
		"none":       {"captions": "none"},
		"unnarrated": {"enable_narration": false},
	} {
		b := maps.Clone(body)
		maps.Copy(b, extra)
		a, _ := studioVideo(t, rt, owner.APIKey, b)
		if _, has := a.decoded["captions_url"]; has {
			t.Errorf("%s: captions_url %v, want none", name, a.decoded["captions_url"])
		}
	}
	bad := maps.Clone(body)
	bad["enable_narration"], bad["captions"] = false, "sidecar"
	if a := call(t, rt, http.MethodPost, "/api/long-story/videos", owner.APIKey, bad); !strings.Contains(checkEnvelope(t, a, http.StatusBadRequest)+string(a.body), `"field":"captions"`) {
		t.Errorf("sidecar captions without narration: %s, want a 400 naming captions", a.body)
	}
}

func TestCrossfadeBlendsTwoScenesAndKeepsTheLength(t *testing.T) {
	rt := start(t, storyConfig())
	owner := newAccount(t, rt, domain.PlanEnterprise, 10000)
	scenes := []storyScene{{1, "a red barn in a field"}, {2, "a blue lake under the moon"}, {3, "a green forest in spring"}}
	body := storyBody("The country", "en", true, "auto", scenes)
	body["transition"] = "crossfade"
	final, path := studioVideo(t, rt, owner.APIKey, body)
	ff := ffmpeg.Runner{}
	ctx := context.Background()
	info, err := ff.Probe(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if total := final.decoded["total_duration"].(float64); math.Abs(info.Duration-15) > 0.1 || math.Abs(total-info.Duration) > 0.01 {
		t.Errorf("file %.3f s, total_duration %.3f s; want 3 scenes × 5 s, as with cuts", info.Duration, total)
	}
	colour := func(n int) [3]float64 {
		c := simulator.ColorFor(longform.ScenePrompt("auto", "The country", domain.Scene{SceneNumber: n, Prompt: scenes[n-1].prompt}))
		return [3]float64{float64(c.R), float64(c.G), float64(c.B)}
	}
	pixel := func(at float64) [3]float64 {
		c, err := ff.PixelAt(ctx, path, at, 10, 10)
		if err != nil {
			t.Fatal(err)
		}
		return [3]float64{float64(c.R), float64(c.G), float64(c.B)}
	}
	far := func(a, b [3]float64) float64 {
		return math.Max(math.Abs(a[0]-b[0]), math.Max(math.Abs(a[1]-b[1]), math.Abs(a[2]-b[2])))
	}
	for n := 1; n <= 3; n++ {
		if got := pixel(float64(n-1)*5 + 2.5); far(got, colour(n)) > 12 {
			t.Errorf("second %.1f shows %v, want scene %d's own colour %v", float64(n-1)*5+2.5, got, n, colour(n))
		}
	}
	// Halfway through each fade (0.25 s after the next scene starts) the
	// frame is the two scenes' colours mixed about half and half.
	for n := 2; n <= 3; n++ {
		at := float64(n-1)*5 + 0.25
		a, b, got := colour(n-1), colour(n), pixel(at)
		var mix [3]float64
		for i := range mix {
			mix[i] = (a[i] + b[i]) / 2
		}
		if far(a, b) < 40 {
			t.Fatalf("scenes %d and %d have colours too close to tell apart: %v %v", n-1, n, a, b)
		}
		if far(got, mix) > 0.3*far(a, b) || far(got, a) < 0.2*far(a, b) || far(got, b) < 0.2*far(a, b) {
			t.Errorf("second %.2f shows %v; want a blend of scene %d's %v and scene %d's %v (about %v)", at, got, n-1, a, n, b, mix)
		}
	}
}

// filteredLevels is audioLevels of the video's audio passed through the
// ffmpeg audio filter af.
func filteredLevels(t *testing.T, path, af string) []float64 {
	t.Helper()
	band := filepath.Join(t.TempDir(), "band.wav")
	out, err := exec.Command("ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-i", path, "-vn", "-af", af, band).CombinedOutput()
	if err != nil {
		t.Fatalf("filter %s of %s: %v %s", af, path, err, out)
	}
	return audioLevels(t, band)
}

// meanLevel is the mean of the levels from one second to another.
func meanLevel(levels []float64, from, to float64) float64 {
	sum, n := 0.0, 0
	for i := int(from / levelWindow); i < len(levels) && float64(i)*levelWindow < to; i++ {
		sum += levels[i]
		n++
	}
	return sum / float64(max(n, 1))
}

func TestMusicIsDuckedUnderTheNarration(t *testing.T) {
	rt := start(t, storyConfig())
	owner := newAccount(t, rt, domain.PlanEnterprise, 10000)
	// The music is a 2 s loop of a 60 Hz tone, below the voice's pitch, so
	// a narrow band at 60 Hz hears the music and little of the voice.
	const tone = 60
	song := filepath.Join(t.TempDir(), "song.wav")
	if out, err := exec.Command("ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-f", "lavfi",
		"-i", fmt.Sprintf("sine=frequency=%d:sample_rate=8000:duration=2", tone), "-ac", "1", song).CombinedOutput(); err != nil {
		t.Fatalf("make the song: %v %s", err, out)
	}
	raw, err := os.ReadFile(song)
	if err != nil {
		t.Fatal(err)
	}
	narrations := []string{"The sea comes in.", "Gulls circle over the pier.", "The day ends by the quiet sea."}
	list := []any{}
	for i, n := range narrations {
		list = append(list, map[string]any{"scene_number": i + 1, "prompt": fmt.Sprintf("scene %d", i+1), "narration": n})
	}
	body := map[string]any{"prompt": "A day at the seaside", "language_code": "en", "model": "beta-2", "scenes": list,
		"music_url": "data:audio/wav;base64," + base64.StdEncoding.EncodeToString(raw), "music_volume": 0.5}
	final, path := studioVideo(t, rt, owner.APIKey, body)
	info, err := ffmpeg.Runner{}.Probe(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := info.Audio(); !ok || math.Abs(info.Duration-15) > 0.1 || math.Abs(final.decoded["total_duration"].(float64)-15) > 0.1 {
		t.Fatalf("video of %.3f s with audio %v; want 15 s with the music looped under it", info.Duration, ok)
	}
	// The voice above 200 Hz (the tone filtered out); the music in a
	// narrow band at its tone.
	voice := filteredLevels(t, path, "highpass=f=200,highpass=f=200,highpass=f=200")
	music := filteredLevels(t, path, fmt.Sprintf("bandpass=f=%d:width_type=q:w=8,bandpass=f=%d:width_type=q:w=8", tone, tone))
	for i := range narrations {
		from := float64(i * longform.SceneSeconds)
		start, end, ok := heard(voice, from, from+longform.SceneSeconds, -35)
		if !ok || end-start < 0.8 || from+longform.SceneSeconds-end < 2 {
			t.Fatalf("scene %d: narration heard %.2f–%.2f s; want a line of at least 0.8 s and 2 s of pause after it", i+1, start, end)
		}
		// Away from the compressor's attack and release and the fades.
		during := meanLevel(music, start+0.3, end-0.2)
		between := meanLevel(music, end+0.8, from+longform.SceneSeconds-1.1)
		t.Logf("scene %d: music %.1f dB during the narration, %.1f dB between lines", i+1, during, between)
		if between-during < 10 || between < -40 {
			t.Errorf("scene %d: music %.1f dB during the narration and %.1f dB between lines; want it audible between lines and at least 10 dB lower under the voice", i+1, during, between)
		}
	}
	bad := maps.Clone(body)
	bad["music_url"] = "data:audio/wav;base64," + base64.StdEncoding.EncodeToString([]byte("not a sound at all, just text"))
	if a := call(t, rt, http.MethodPost, "/api/long-story/videos", owner.APIKey, malformed(bad)); !strings.Contains(checkEnvelope(t, a, http.StatusBadRequest)+string(a.body), `"field":"music_url"`) {
		t.Errorf("music that is not audio: %s, want a 400 naming music_url", a.body)
	}
}

// grayStrip is the bottom fifth of the frame shown at at seconds of the
// video at path, in 8-bit gray.
func grayStrip(t *testing.T, path string, at float64) []byte {
	t.Helper()
	out, err := exec.Command("ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-ss", strconv.FormatFloat(at, 'f', 3, 64),
		"-i", path, "-frames:v", "1", "-vf", "crop=iw:ih/5:0:ih*4/5,format=gray", "-f", "rawvideo", "pipe:1").Output()
	if err != nil || len(out) == 0 {
		t.Fatalf("frame at %.2f s of %s: %v", at, path, err)
	}
	return out
}

// changedShare is the share of pixels that differ by more than 40 levels.
func changedShare(a, b []byte) float64 {
	if len(a) != len(b) || len(a) == 0 {
		return 1
	}
	n := 0
	for i := range a {
		if d := int(a[i]) - int(b[i]); d > 40 || d < -40 {
			n++
		}
	}
	return float64(n) / float64(len(a))
}

func TestBurnedCaptionsChangeTheFramesWhereCuesAre(t *testing.T) {
	rt := start(t, storyConfig())
	owner := newAccount(t, rt, domain.PlanEnterprise, 10000)
	list := []any{
		map[string]any{"scene_number": 1, "prompt": "waves on the beach", "narration": "The sea comes in."},
		map[string]any{"scene_number": 2, "prompt": "gulls over the pier", "narration": "Gulls circle over the old pier, calling to each other in the wind."},
	}
	// Portrait: the text must fit the narrower frame too.
	body := map[string]any{"prompt": "A day at the seaside", "language_code": "en", "model": "beta-2", "scenes": list,
		"captions": "sidecar", "aspect_ratio": "portrait"}
	_, plain := studioVideo(t, rt, owner.APIKey, body)
	burnedBody := maps.Clone(body)
	burnedBody["captions"] = "burned"
	final, burned := studioVideo(t, rt, owner.APIKey, burnedBody)
	resp, err := http.Get(final.str("captions_url"))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	cues := parseVTT(t, string(raw))
	if len(cues) != 2 {
		t.Fatalf("burned video's captions: %s", raw)
	}
	for i, c := range cues {
		mid := (c.start + c.end) / 2
		if share := changedShare(grayStrip(t, plain, mid), grayStrip(t, burned, mid)); share < 0.01 {
			t.Errorf("cue %d at %.2f s: %.2f%% of the bottom strip differs from the video without burned captions; want the text drawn there", i+1, mid, 100*share)
		}
		// After the cue, before the next scene: no text.
		after := c.end + 0.5
		if after < float64((i+1)*longform.SceneSeconds)-0.2 {
			if share := changedShare(grayStrip(t, plain, after), grayStrip(t, burned, after)); share > 0.001 {
				t.Errorf("%.2f s, after cue %d: %.2f%% of the bottom strip differs; want nothing drawn between cues", after, i+1, 100*share)
			}
		}
	}
}

// Japanese and Hindi captions are burned too, each in a font of its script
// (the glyph coverage and the shaping are checked in internal/core/longform):
// the frames differ from the same video with a sidecar where each cue
// shows.
func TestBurnedCaptionsInJapaneseAndHindiChangeTheFrames(t *testing.T) {
	rt := start(t, storyConfig())
	owner := newAccount(t, rt, domain.PlanEnterprise, 10000)
	for lang, narration := range map[string]string{
		"ja": "うみの おとが きこえる。",
		"hi": "समुद्र की लहरें किनारे पर आती हैं।",
	} {
		t.Run(lang, func(t *testing.T) {
			body := map[string]any{"prompt": "the sea", "language_code": lang, "model": "beta-2", "captions": "sidecar",
				"scenes": []any{map[string]any{"scene_number": 1, "prompt": "waves on the beach", "narration": narration}}}
			_, plain := studioVideo(t, rt, owner.APIKey, body)
			burnedBody := maps.Clone(body)
			burnedBody["captions"] = "burned"
			final, burned := studioVideo(t, rt, owner.APIKey, burnedBody)
			resp, err := http.Get(final.str("captions_url"))
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			cues := parseVTT(t, string(raw))
			if len(cues) != 1 || strings.ReplaceAll(cues[0].text, " ", "") != strings.ReplaceAll(narration, " ", "") {
				t.Fatalf("%s captions: %s, want one cue of %q", lang, raw, narration)
			}
			mid := (cues[0].start + cues[0].end) / 2
			if share := changedShare(grayStrip(t, plain, mid), grayStrip(t, burned, mid)); share < 0.01 {
				t.Errorf("%s cue at %.2f s: %.2f%% of the bottom strip differs from the video without burned captions; want the text drawn there", lang, mid, 100*share)
			}
		})
	}
}
