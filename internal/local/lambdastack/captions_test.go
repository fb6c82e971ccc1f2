package lambdastack

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/polly"

	"github.com/mediagen-dev/mediagen/internal/aws/narration"
	"github.com/mediagen-dev/mediagen/internal/core/longform"
)

// On the deployed shape the captions are timed from Polly's speech marks:
// Narrate asks the Polly endpoint (the stand-in, which answers marks as
// Polly does) for each scene's sentence and word marks, and every
// sentence of the narration is a cue that starts within 0.3 s of its
// sentence mark, laid at its scene's start. The captions are burned too,
// with the layer's fonts.
func TestCaptionsFollowPollysSpeechMarks(t *testing.T) {
	l := shared(t)
	narrations := []string{
		"The sea comes in. Gulls call.",
		"Boats rock by the pier. The tide turns.",
	}
	var scenes []string
	for i, n := range narrations {
		scenes = append(scenes, fmt.Sprintf(`{"scene_number":%d,"prompt":"scene %d: waves on a beach","narration":%q}`, i+1, i+1, n))
	}
	// Burned: Assemble also draws them with the layer's fonts
	// (CAPTION_FONT_DIR), and writes the same file.
	body := fmt.Sprintf(`{"prompt":"A day at the seaside","language_code":"en","model":"beta-2","captions":"burned","scenes":[%s]}`, strings.Join(scenes, ","))
	status, created := call(t, l, http.MethodPost, "/api/long-story/videos", body)
	id, _ := created["video_id"].(string)
	if status != http.StatusOK || id == "" {
		t.Fatalf("create: %d %v", status, created)
	}
	view := waitLong(t, l, id, 4*time.Minute)
	if view["status"] != "completed" {
		t.Fatalf("the video ended %v: %v\n%s", view["status"], view, l.workflowLogs())
	}
	captions, _ := view["captions_url"].(string)
	resp, err := l.Media.Client().Get(captions)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("captions_url %s: HTTP %d", captions, resp.StatusCode)
	}
	cues := vttStarts(t, string(raw))

	// The speech marks, asked of Polly as the narrator asks them.
	client := polly.NewFromConfig(l.AdminConfig())
	en, _ := longform.LookupLanguage("en")
	var want []float64
	var texts []string
	for i, n := range narrations {
		in, err := narration.MarksInput(en, n)
		if err != nil {
			t.Fatal(err)
		}
		out, err := client.SynthesizeSpeech(context.Background(), in)
		if err != nil {
			t.Fatalf("speech marks of %q: %v", n, err)
		}
		if ct := aws.ToString(out.ContentType); ct != "application/x-json-stream" {
			t.Errorf("speech marks typed %q, want application/x-json-stream", ct)
		}
		body, _ := io.ReadAll(out.AudioStream)
		out.AudioStream.Close()
		marks, err := longform.ParseSpeechMarks(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range bytes.Split(bytes.TrimSpace(body), []byte("\n")) {
			if !json.Valid(line) {
				t.Errorf("speech marks line %q is not one JSON object", line)
			}
		}
		for _, m := range marks {
			if m.Type == longform.MarkSentence {
				want = append(want, float64(i*longform.SceneSeconds)+float64(m.Time)/1000)
				texts = append(texts, m.Value)
			}
		}
	}
	if len(cues) != len(want) || len(want) != 4 {
		t.Fatalf("cues %v; want one per sentence mark, at %v (%q)\n%s", cues, want, texts, raw)
	}
	for i, c := range cues {
		t.Logf("cue %d at %.3f s, its sentence mark at %.3f s: %q", i+1, c.start, want[i], c.text)
		if math.Abs(c.start-want[i]) > 0.3 || c.text != texts[i] {
			t.Errorf("cue %d %q starts at %.3f s; its sentence %q is marked at %.3f s (want within 0.3 s)", i+1, c.text, c.start, texts[i], want[i])
		}
	}
}

// cueStart is a WebVTT cue's start and text.
type cueStart struct {
	start float64
	text  string
}

// vttStarts reads the cues of a WebVTT file.
func vttStarts(t *testing.T, raw string) []cueStart {
	t.Helper()
	if !strings.HasPrefix(raw, "WEBVTT\n") {
		t.Fatalf("captions are not WebVTT: %q", raw)
	}
	var out []cueStart
	for _, block := range strings.Split(strings.TrimSpace(raw), "\n\n")[1:] {
		lines := strings.Split(block, "\n")
		for i, l := range lines {
			if from, _, ok := strings.Cut(l, " --> "); ok {
				var h, m int
				var s float64
				if _, err := fmt.Sscanf(from, "%d:%d:%f", &h, &m, &s); err != nil {
					t.Fatalf("cue time %q: %v", from, err)
				}
				out = append(out, cueStart{start: float64(h*3600+m*60) + s, text: strings.Join(lines[i+1:], " ")})
				break
			}
		}
	}
	return out
}
