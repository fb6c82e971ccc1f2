package longstory

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mediagen-dev/mediagen/shared/domain"
	"github.com/mediagen-dev/mediagen/shared/ffmpeg"
)

// captionLineRunes is the longest caption line: at most two lines show at
// once, and a scene's narration is at most 90 characters.
const captionLineRunes = 46

// Cue is one caption: a scene's spoken text, shown while it is heard, in
// seconds of the final video.
type Cue struct {
	Start, End float64
	Lines      []string
}

// script is what the narrator says over a scene: its narration, else its
// prompt.
func script(sc domain.Scene) string {
	if sc.Narration != "" {
		return sc.Narration
	}
	return sc.Prompt
}

// speechSpans measures where each scene's narration track sounds
// (ffmpeg.SoundSpans), keyed by scene number.
func (s *Steps) speechSpans(ctx context.Context, sources []sceneSource) (map[int][]ffmpeg.Span, error) {
	out := map[int][]ffmpeg.Span{}
	for _, src := range sources {
		if src.speech == "" {
			continue
		}
		spans, err := s.FFmpeg.SoundSpans(ctx, src.speech, src.speechSeconds)
		if err != nil {
			return nil, &TransientError{Msg: fmt.Sprintf("assemble: narration timing of scene %d: %v", src.n, err)}
		}
		out[src.n] = spans
	}
	return out, nil
}

// cues times each narrated scene's captions from its own narration, as the
// assembly lays it (at the scene's start, sped up by narrationTempo, never
// past the scene). With speech marks (Polly's), each sentence is a cue from
// its sentence mark to the next one's, the last one to where the speech's
// sound ends; without, the scene's script is one cue from where its speech
// starts to where it ends (spans). starts are the scenes' start times in
// the final video.
func cues(v domain.LongVideo, sources []sceneSource, starts []float64, spans map[int][]ffmpeg.Span) []Cue {
	texts := map[int]string{}
	for _, sc := range v.Scenes {
		texts[sc.SceneNumber] = script(sc)
	}
	var out []Cue
	for i, src := range sources {
		sp := spans[src.n]
		if src.speech == "" {
			continue
		}
		tempo := narrationTempo(src.speechSeconds, src.speed)
		at := func(speech float64) float64 { return math.Min(starts[i]+speech/tempo, starts[i]+SceneSeconds) }
		if sentences := sentenceMarks(src.marks); len(sentences) > 0 {
			soundEnd := src.speechSeconds
			if len(sp) > 0 {
				soundEnd = sp[len(sp)-1].End
			}
			for k, m := range sentences {
				to := soundEnd
				if k+1 < len(sentences) {
					to = float64(sentences[k+1].Time) / 1000
				}
				if start, end := at(float64(m.Time)/1000), at(to); end > start {
					out = append(out, Cue{Start: start, End: end, Lines: captionLines(m.Value)})
				}
			}
			continue
		}
		if len(sp) == 0 {
			continue
		}
		if start, end := at(sp[0].Start), at(sp[len(sp)-1].End); end > start {
			out = append(out, Cue{Start: start, End: end, Lines: captionLines(texts[src.n])})
		}
	}
	return out
}

// captionLines breaks text into at most two lines of about
// captionLineRunes each: at the space nearest the middle, or (a script
// without spaces, such as Japanese) at the middle. Control characters
// become spaces.
func captionLines(text string) []string {
	text = strings.Join(strings.FieldsFunc(text, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
	runes := []rune(text)
	if len(runes) <= captionLineRunes {
		return []string{text}
	}
	mid := len(runes) / 2
	cut := -1
	for d := 0; d <= mid; d++ {
		if mid-d > 0 && runes[mid-d] == ' ' {
			cut = mid - d
			break
		}
		if mid+d < len(runes)-1 && runes[mid+d] == ' ' {
			cut = mid + d
			break
		}
	}
	if cut < 0 {
		return []string{string(runes[:mid]), string(runes[mid:])}
	}
	return []string{string(runes[:cut]), string(runes[cut+1:])}
}

// WebVTT writes cues as a WebVTT file (W3C WebVTT: a cue's text escapes &,
// < and >, and holds no blank line).
func WebVTT(cues []Cue) []byte {
	var b strings.Builder
	b.WriteString("WEBVTT\n")
	esc := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
	for i, c := range cues {
		fmt.Fprintf(&b, "\n%d\n%s --> %s\n", i+1, vttTime(c.Start), vttTime(c.End))
		for _, l := range c.Lines {
			if strings.TrimSpace(l) != "" && utf8.ValidString(l) {
				b.WriteString(esc.Replace(l) + "\n")
			}
		}
	}
	return []byte(b.String())
}

// vttTime is a WebVTT timestamp, hh:mm:ss.ttt.
func vttTime(sec float64) string {
	ms := int64(math.Round(sec * 1000))
	return fmt.Sprintf("%02d:%02d:%02d.%03d", ms/3600000, ms/60000%60, ms/1000%60, ms%1000)
}

// Burned captions' style, relative to the frame so a portrait video's text
// is as readable as a landscape one's: the font is 1/20 of the frame's
// shorter side, smaller when a line would not fit in 90 % of the width
// (DejaVu Sans averages about 0.6 em a character), outlined in black
// (1/12 of the font); each line centred, the last one's baseline area 8 %
// of the frame's height above the bottom (inside the title-safe area).
const (
	captionFontShare   = 0.05
	captionWidthShare  = 0.9
	captionEmPerRune   = 0.6
	captionBottomShare = 0.08
)

// burnedLanguages are the narration languages whose script the caption
// font (DejaVu Sans) draws: not Devanagari (hi) nor Japanese (ja).
var burnedLanguages = map[string]bool{"en": true, "es": true, "fr": true, "de": true, "it": true, "pt": true, "nl": true, "pl": true}

// captionFontSize is the font size of a cue's lines in a width×height frame.
func captionFontSize(lines []string, width, height int) int {
	longest := 1
	for _, l := range lines {
		longest = max(longest, utf8.RuneCountInString(l))
	}
	size := math.Min(float64(min(width, height))*captionFontShare, float64(width)*captionWidthShare/(float64(longest)*captionEmPerRune))
	return max(12, int(size))
}

// burnCaptions draws the cues on the picture of the video at final
// (width×height): one drawtext per line of each cue, enabled while the cue
// shows, its text read from a file (no escaping, expansion none). The
// sound is copied.
func (s *Steps) burnCaptions(ctx context.Context, dir, final string, cues []Cue, width, height int) error {
	if len(cues) == 0 {
		return nil
	}
	font := s.CaptionFont
	if font == "" {
		font = ffmpeg.DefaultFontFile
	}
	bottom := int(math.Round(float64(height) * captionBottomShare))
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) }
	var filters []string
	for i, c := range cues {
		size := captionFontSize(c.Lines, width, height)
		lineHeight := size * 5 / 4
		enable := ffmpeg.EscapeFilterValue(fmt.Sprintf("between(t,%s,%s)", f(c.Start), f(c.End)))
		for j, line := range c.Lines {
			text := filepath.Join(dir, fmt.Sprintf("cue-%03d-%d.txt", i+1, j+1))
			if err := os.WriteFile(text, []byte(line), 0o600); err != nil {
				return &TransientError{Msg: fmt.Sprintf("assemble: captions: %v", err)}
			}
			filters = append(filters, fmt.Sprintf("drawtext=fontfile=%s:textfile=%s:expansion=none:fontsize=%d:fontcolor=white:borderw=%d:bordercolor=black:x=(w-text_w)/2:y=h-%d:enable=%s",
				ffmpeg.EscapeFilterValue(font), ffmpeg.EscapeFilterValue(text), size, max(2, size/12), bottom+(len(c.Lines)-j)*lineHeight, enable))
		}
	}
	burned := filepath.Join(dir, "burned.mp4")
	args := []string{"-i", final, "-vf", strings.Join(filters, ","), "-map", "0:v", "-map", "0:a?",
		"-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p", "-r", strconv.Itoa(outputFPS), "-c:a", "copy",
		"-movflags", "+faststart", burned}
	if err := s.FFmpeg.Run(ctx, args...); err != nil {
		return &TransientError{Msg: fmt.Sprintf("assemble: burn captions: %v", err)}
	}
	if err := os.Rename(burned, final); err != nil {
		return &TransientError{Msg: fmt.Sprintf("assemble: burn captions: %v", err)}
	}
	return nil
}
