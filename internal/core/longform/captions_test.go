package longform

import (
	"encoding/base64"
	"math"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mediagen-dev/mediagen/internal/adapters/ffmpeg"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

func TestCaptionLinesAreAtMostTwoShortLines(t *testing.T) {
	for name, text := range map[string]string{
		"short":          "The sea comes in.",
		"english, 90":    "And the day ends, as it began, with the sound of the sea on the sand below the old pier.",
		"japanese, 37":   "うみのおとがきこえるまちでこどもたちがあそんでいるゆうがたのひかりがしずかにひろがる",
		"hindi, 75":      "समुद्र की लहरें धीरे धीरे किनारे पर आती हैं और शाम का सूरज डूबता है, सब शांत है।",
		"newlines, tabs": "The sea\ncomes in\tand goes out again, over and over, all day and all night long.",
	} {
		t.Run(name, func(t *testing.T) {
			lines := captionLines(text)
			if len(lines) < 1 || len(lines) > 2 {
				t.Fatalf("%d lines %q", len(lines), lines)
			}
			for _, l := range lines {
				if n := utf8.RuneCountInString(l); n > captionLineRunes || strings.ContainsAny(l, "\n\t") || strings.TrimSpace(l) != l || l == "" {
					t.Errorf("line %q (%d characters): want 1 to %d characters, no control characters, trimmed", l, n, captionLineRunes)
				}
			}
			if got, want := strings.ReplaceAll(strings.Join(lines, ""), " ", ""), strings.Join(strings.Fields(text), ""); got != want {
				t.Errorf("lines %q lose text of %q", lines, text)
			}
		})
	}
}

func TestWebVTTEscapesAndTimesItsCues(t *testing.T) {
	got := string(webVTT([]cue{{Start: 0.0404, End: 3.25, Lines: []string{"Fish & chips"}}, {Start: 3725.5, End: 3726, Lines: []string{"a --> b", "<i>"}}}))
	want := "WEBVTT\n\n1\n00:00:00.040 --> 00:00:03.250\nFish &amp; chips\n\n2\n01:02:05.500 --> 01:02:06.000\na --&gt; b\n&lt;i&gt;\n"
	if got != want {
		t.Errorf("WebVTT:\n%s\nwant:\n%s", got, want)
	}
}

func TestDecodeMusicAcceptsOnlyAudioItCanRead(t *testing.T) {
	wav := "RIFF\x24\x00\x00\x00WAVEfmt "
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	for _, tc := range []struct {
		name, uri string
		ok        bool
	}{
		{"wav", "data:audio/wav;base64," + b64(wav), true},
		{"wav, other case and alias", "DATA:Audio/X-WAV;BASE64," + b64(wav), true},
		{"mp3 with ID3", "data:audio/mpeg;base64," + b64("ID3\x04\x00rest"), true},
		{"text as wav", "data:audio/wav;base64," + b64("hello, this is not sound"), false},
		{"ogg", "data:audio/ogg;base64," + b64("OggS\x00\x02"), false},
		{"not base64", "data:audio/wav," + wav, false},
		{"https", "https://example.com/song.mp3", false},
		{"too big", "data:audio/wav;base64," + b64(wav+strings.Repeat("\x00", maxMusicBytes)), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := decodeMusic(tc.uri); (err == nil) != tc.ok {
				t.Errorf("decodeMusic = %v, want ok %v", err, tc.ok)
			}
		})
	}
}

func TestCaptionFontSizeIsRelativeToTheFrameAndFitsItsWidth(t *testing.T) {
	long := []string{strings.Repeat("a", captionLineRunes), "b"}
	for _, tc := range []struct {
		name          string
		lines         []string
		width, height int
		want          int
	}{
		{"landscape, short", []string{"The sea comes in."}, 1280, 720, 36},
		{"portrait, short", []string{"The sea comes in."}, 720, 1280, 36},
		{"landscape 1080p", []string{"The sea comes in."}, 1920, 1080, 54},
		{"landscape, longest line", long, 1280, 720, 36},
		{"portrait, longest line", long, 720, 1280, 23}, // 720 × 0.9 / (46 × 0.6)
		// Japanese characters are about 1 em wide: 720 × 0.9 / 46.
		{"portrait, longest Japanese line", []string{strings.Repeat("う", captionLineRunes)}, 720, 1280, 14},
		{"landscape, short Japanese line", []string{"うみのおとがきこえる"}, 1280, 720, 36},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := captionFontSize(tc.lines, tc.width, tc.height)
			if got != tc.want {
				t.Errorf("font size %d, want %d", got, tc.want)
			}
			ems := 0.0
			for _, r := range tc.lines[0] {
				ems += map[bool]float64{false: captionEmPerRune, true: captionEmPerWide}[wide(r)]
			}
			if w := float64(got) * ems; w > float64(tc.width)*captionWidthShare {
				t.Errorf("a line of %d characters at %d px is about %.0f px wide, over 90%% of %d", utf8.RuneCountInString(tc.lines[0]), got, w, tc.width)
			}
		})
	}
}

// With speech marks, each sentence is its own cue from its sentence mark
// to the next one's, the last to where the speech's sound ends, laid as
// the narration is: at its scene's start and at its tempo (7.5 s of speech
// is laid at 1.5x), never past the scene.
func TestCuesFollowTheSpeechMarksOfEachSentence(t *testing.T) {
	v := domain.LongVideo{Scenes: []domain.Scene{
		{SceneNumber: 1, Narration: "The sea comes in. Gulls call."},
		{SceneNumber: 2, Narration: "A long line of words that runs on."},
	}}
	sources := []sceneSource{
		{n: 1, speech: "1.mp3", speechSeconds: 3, speed: 1, marks: []SpeechMark{
			{Time: 120, Type: MarkSentence, Start: 0, End: 17, Value: "The sea comes in."},
			{Time: 120, Type: MarkWord, Start: 0, End: 3, Value: "The"},
			{Time: 1650, Type: MarkSentence, Start: 18, End: 29, Value: "Gulls call."},
			{Time: 1650, Type: MarkWord, Start: 18, End: 23, Value: "Gulls"},
		}},
		{n: 2, speech: "2.mp3", speechSeconds: 7.5, speed: 1, marks: []SpeechMark{
			{Time: 300, Type: MarkSentence, Start: 0, End: 34, Value: "A long line of words that runs on."},
		}},
	}
	spans := map[int][]ffmpeg.Span{1: {{Start: 0.1, End: 1.2}, {Start: 1.6, End: 2.8}}, 2: {{Start: 0.25, End: 7.4}}}
	got := cues(v, sources, []float64{0, 5}, spans)
	want := []cue{
		{Start: 0.12, End: 1.65, Lines: []string{"The sea comes in."}},
		{Start: 1.65, End: 2.8, Lines: []string{"Gulls call."}},
		{Start: 5.2, End: 5 + 7.4/1.5, Lines: []string{"A long line of words that runs on."}},
	}
	if len(got) != len(want) {
		t.Fatalf("cues %+v, want %+v", got, want)
	}
	for i := range want {
		if math.Abs(got[i].Start-want[i].Start) > 1e-9 || math.Abs(got[i].End-want[i].End) > 1e-9 || !slices.Equal(got[i].Lines, want[i].Lines) {
			t.Errorf("cue %d: %+v, want %+v", i+1, got[i], want[i])
		}
	}
}

func TestParseSpeechMarksReadsPollysLines(t *testing.T) {
	raw := "{\"time\":6,\"type\":\"sentence\",\"start\":0,\"end\":23,\"value\":\"Mary had a little lamb.\"}\n\n{\"time\":373,\"type\":\"word\",\"start\":5,\"end\":8,\"value\":\"had\"}\n"
	marks, err := ParseSpeechMarks(strings.NewReader(raw))
	if err != nil || len(marks) != 2 || marks[1] != (SpeechMark{Time: 373, Type: MarkWord, Start: 5, End: 8, Value: "had"}) {
		t.Fatalf("marks %+v, %v", marks, err)
	}
	var b strings.Builder
	if err := WriteSpeechMarks(&b, marks); err != nil || b.String() != strings.ReplaceAll(raw, "\n\n", "\n") {
		t.Errorf("written back as %q, %v", b.String(), err)
	}
	if _, err := ParseSpeechMarks(strings.NewReader("{\"time\":\n")); err == nil {
		t.Error("a broken line: no error")
	}
}
