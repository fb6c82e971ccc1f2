package runtime_test

import (
	"context"
	"math"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mediagen-dev/mediagen/internal/adapters/ffmpeg"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// GET /api/long-story/voices lists a language's voices, the default first,
// each with a preview clip that downloads as speech; another language
// lists its own.
func TestVoicesListsALanguagesVoicesWithAPreviewClip(t *testing.T) {
	rt := start(t, storyConfig())
	owner := newAccount(t, rt, domain.PlanEnterprise, 100)
	a := call(t, rt, http.MethodGet, "/api/long-story/voices?language_code=en", owner.APIKey, nil)
	if a.status != http.StatusOK {
		t.Fatalf("HTTP %d %s", a.status, a.body)
	}
	list, _ := a.decoded["voices"].([]any)
	var ids []string
	genders := map[string]bool{}
	for i, raw := range list {
		v, _ := raw.(map[string]any)
		id, _ := v["id"].(string)
		ids = append(ids, id)
		g, _ := v["gender"].(string)
		genders[g] = true
		if def, _ := v["default"].(bool); def != (i == 0) {
			t.Errorf("voice %s: default %v, want only the first", id, def)
		}
		if name, _ := v["name"].(string); name == "" || v["language_code"] != "en" {
			t.Errorf("voice %s: name %q, language_code %v", id, name, v["language_code"])
		}
		url, _ := v["preview_url"].(string)
		path, ok := download(t, url, t.TempDir(), id+filepath.Ext(url))
		if !ok {
			continue
		}
		info, err := ffmpeg.Runner{}.Probe(context.Background(), path)
		if _, audio := info.Audio(); err != nil || !audio || info.Duration < 1 || info.Duration > 10 {
			t.Errorf("voice %s: preview %s is %+v (%v), want a short audio clip", id, url, info, err)
		}
	}
	if strings.Join(ids, ",") != "joanna,matthew,ruth" || !genders["female"] || !genders["male"] {
		t.Errorf("en voices %v (genders %v), want joanna (default), matthew, ruth, of both genders", ids, genders)
	}
	// A second list finds the clips already spoken: the same URLs.
	again := call(t, rt, http.MethodGet, "/api/long-story/voices?language_code=en", owner.APIKey, nil)
	if string(again.body) != string(a.body) {
		t.Errorf("second list %s, want the first %s", again.body, a.body)
	}
	ja := call(t, rt, http.MethodGet, "/api/long-story/voices?language_code=ja", owner.APIKey, nil)
	if ja.status != http.StatusOK || !strings.Contains(string(ja.body), `"id":"takumi"`) || strings.Contains(string(ja.body), `"id":"joanna"`) {
		t.Errorf("ja: HTTP %d %s, want Japanese voices only", ja.status, ja.body)
	}
	for _, q := range []string{"", "?language_code=xx", "?language_code=en&voice=matthew"} {
		checkEnvelope(t, call(t, rt, http.MethodGet, "/api/long-story/voices"+q, owner.APIKey, malformed(nil)), http.StatusBadRequest)
	}
}

// A video narrated in a voice other than the default is heard in that
// voice: the loudness contour of its narration follows espeak-ng's
// en-us+m3 (the voice's variant) more closely than the default en-us, and
// a video without voice the other way round. (The narration track itself
// is scratch the API never serves; what a viewer hears is the final mp4.)
func TestAVideoIsNarratedInItsVoice(t *testing.T) {
	rt := start(t, storyConfig())
	owner := newAccount(t, rt, domain.PlanEnterprise, 10000)
	const line = "a lighthouse on a cliff above the grey winter sea"
	heardIn := func(voice string) []float64 {
		body := storyBody("The coast", "en", true, "auto", []storyScene{{1, line}})
		body["captions"] = "none"
		if voice != "" {
			body["voice"] = voice
		}
		_, path := studioVideo(t, rt, owner.APIKey, body)
		return audioLevels(t, path)
	}
	espeak := func(v string) []float64 {
		path := filepath.Join(t.TempDir(), "speech.wav")
		cmd := exec.Command("espeak-ng", "-v", v, "-s", "165", "-w", path, "--stdin")
		cmd.Stdin = strings.NewReader(line)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("espeak-ng -v %s: %v: %s", v, err, out)
		}
		return audioLevels(t, path)
	}
	male, plain := espeak("en-us+m3"), espeak("en-us")
	for _, tt := range []struct{ voice, want string }{{"matthew", "en-us+m3"}, {"", "en-us"}} {
		got := heardIn(tt.voice)
		toMale, toPlain := likeness(got, male), likeness(got, plain)
		t.Logf("voice %q: likeness to en-us+m3 %.3f, to en-us %.3f", tt.voice, toMale, toPlain)
		if closer := map[bool]string{true: "en-us+m3", false: "en-us"}[toMale > toPlain]; closer != tt.want {
			t.Errorf("voice %q sounds like espeak-ng %s (likeness %.3f vs %.3f), want %s", tt.voice, closer, toMale, toPlain, tt.want)
		}
	}
}

// likeness is the best correlation of the loudness contour ref (dBFS per
// levelWindow) with got, over shifts of up to half a second: 1 for the
// same speech at any gain.
func likeness(got, ref []float64) float64 {
	best := -1.0
	for lag := 0; lag <= 50 && lag+len(ref) <= len(got); lag++ {
		best = max(best, correlation(got[lag:lag+len(ref)], ref))
	}
	return best
}

func correlation(a, b []float64) float64 {
	floor := func(x float64) float64 { return max(x, -60) } // silence is silence, however deep
	var ma, mb float64
	for i := range a {
		ma += floor(a[i])
		mb += floor(b[i])
	}
	ma, mb = ma/float64(len(a)), mb/float64(len(b))
	var ab, aa, bb float64
	for i := range a {
		x, y := floor(a[i])-ma, floor(b[i])-mb
		ab, aa, bb = ab+x*y, aa+x*x, bb+y*y
	}
	if aa == 0 || bb == 0 {
		return 0
	}
	return ab / math.Sqrt(aa*bb)
}

// An unknown voice, or another language's, is a 400 naming the language's
// voices, at creation and estimate alike, and moves no credits.
func TestAnUnknownVoiceIs400NamingTheChoices(t *testing.T) {
	rt := start(t, storyConfig())
	owner := newAccount(t, rt, domain.PlanEnterprise, 10000)
	before := account(t, rt, owner.UserID)
	for _, voice := range []string{"hal", "lucia"} {
		body := storyBody("The coast", "en", true, "auto", []storyScene{{1, "a lighthouse"}})
		body["voice"] = voice
		estimate := map[string]any{"model": "beta-2", "scenes": body["scenes"], "language_code": "en", "voice": voice}
		for route, b := range map[string]map[string]any{"/api/long-story/videos": body, "/api/long-story/videos/estimate": estimate} {
			a := call(t, rt, http.MethodPost, route, owner.APIKey, malformed(b))
			checkEnvelope(t, a, http.StatusBadRequest)
			if !strings.Contains(string(a.body), `"field":"voice"`) || !strings.Contains(string(a.body), "joanna, matthew, ruth") {
				t.Errorf("%s with voice %s: %s, want a 400 naming voice and the choices", route, voice, a.body)
			}
		}
	}
	after := account(t, rt, owner.UserID)
	if !after.Balance.Equal(before.Balance) || !after.Held.IsZero() {
		t.Errorf("refused requests moved credits: balance %s → %s, held %s", before.Balance, after.Balance, after.Held)
	}
}

// narration_speed 1.5 reads a short line in two thirds of the time it
// takes at the default speed: measured where the narration is heard in the
// final video's audio.
func TestNarrationSpeedSetsTheTempoOfTheNarration(t *testing.T) {
	rt := start(t, storyConfig())
	owner := newAccount(t, rt, domain.PlanEnterprise, 10000)
	spoken := func(speed any) float64 {
		body := storyBody("The coast", "en", true, "auto", []storyScene{{1, "a lighthouse on a cliff"}})
		body["captions"] = "none"
		if speed != nil {
			body["narration_speed"] = speed
		}
		_, path := studioVideo(t, rt, owner.APIKey, body)
		start, end, ok := heard(audioLevels(t, path), 0, 5, -45)
		if !ok {
			t.Fatalf("no narration heard at speed %v", speed)
		}
		return end - start
	}
	normal, fast := spoken(nil), spoken(1.5)
	t.Logf("heard for %.2f s at the default speed, %.2f s at 1.5", normal, fast)
	if ratio := fast / normal; ratio < 0.6 || ratio > 0.73 {
		t.Errorf("at narration_speed 1.5 the line lasts %.2f s, %.2f of the default's %.2f s; want about 0.67", fast, ratio, normal)
	}
}
