package longform

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mediagen-dev/mediagen/internal/adapters/ffmpeg"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// captionLineRunes is the longest caption line: at most two lines show at
// once, and a scene's narration is at most 90 characters.
const captionLineRunes = 46

// cue is one caption: a scene's spoken text, shown while it is heard, in
// seconds of the final video.
type cue struct {
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
func cues(v domain.LongVideo, sources []sceneSource, starts []float64, spans map[int][]ffmpeg.Span) []cue {
	texts := map[int]string{}
	for _, sc := range v.Scenes {
		texts[sc.SceneNumber] = script(sc)
	}
	var out []cue
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
					out = append(out, cue{Start: start, End: end, Lines: captionLines(m.Value)})
				}
			}
			continue
		}
		if len(sp) == 0 {
			continue
		}
		if start, end := at(sp[0].Start), at(sp[len(sp)-1].End); end > start {
			out = append(out, cue{Start: start, End: end, Lines: captionLines(texts[src.n])})
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

// webVTT writes cues as a webVTT file (W3C webVTT: a cue's text escapes &,
// < and >, and holds no blank line).
func webVTT(cues []cue) []byte {
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

// vttTime is a webVTT timestamp, hh:mm:ss.ttt.
func vttTime(sec float64) string {
	ms := int64(math.Round(sec * 1000))
	return fmt.Sprintf("%02d:%02d:%02d.%03d", ms/3600000, ms/60000%60, ms/1000%60, ms%1000)
}

// Burned captions' style, relative to the frame so a portrait video's text
// is as readable as a landscape one's: the font is 1/20 of the frame's
// shorter side, smaller when a line would not fit in 90 % of the width (a
// character averages about 0.6 em in a Latin, Devanagari, Arabic or Hebrew
// font and 1 em when East Asian wide), outlined in black (1/12 of the
// font); each line centred, the last one's baseline area 8 % of the
// frame's height above the bottom (inside the title-safe area).
const (
	captionFontShare   = 0.05
	captionWidthShare  = 0.9
	captionEmPerRune   = 0.6
	captionEmPerWide   = 1.0
	captionBottomShare = 0.08
)

// captionFont is a font burned captions are drawn in: its family name, by
// which libass finds it, and its file.
type captionFont struct {
	Family, File string
}

// Caption fonts, one per script the narration languages (and right-to-left
// text) are written in. Locally from Debian's fonts-dejavu-core,
// fonts-noto-core and fonts-wqy-microhei (scripts/install-deps.sh); in
// AWS from the same packages in the ffmpeg layer's fonts/ (Makefile,
// build-FfmpegLayer).
var (
	fontLatin      = captionFont{"DejaVu Sans", "DejaVuSans.ttf"}
	fontDevanagari = captionFont{"Noto Sans Devanagari", "NotoSansDevanagari-Regular.ttf"}
	fontCJK        = captionFont{"WenQuanYi Micro Hei", "wqy-microhei.ttc"}
	fontArabic     = captionFont{"Noto Sans Arabic", "NotoSansArabic-Regular.ttf"}
	// CaptionFonts are all of them. Hebrew is DejaVu Sans's: Noto Sans
	// Hebrew has no Latin punctuation, and the Lambda function's libass
	// has no system font to take a missing glyph from.
	CaptionFonts = []captionFont{fontLatin, fontDevanagari, fontCJK, fontArabic}
)

// DefaultCaptionFontDirs are where Debian installs the caption fonts.
var DefaultCaptionFontDirs = []string{
	"/usr/share/fonts/truetype/dejavu", "/usr/share/fonts/truetype/noto", "/usr/share/fonts/truetype/wqy",
}

// captionFontFor is the font of captions in the narration language lang
// showing cues: by the language's script (hi Devanagari, ja CJK), else by
// the first Arabic letter of the cues (a right-to-left narration), else
// DejaVu Sans (Latin, Greek, Cyrillic and Hebrew).
func captionFontFor(lang string, cues []cue) captionFont {
	switch lang {
	case "hi":
		return fontDevanagari
	case "ja":
		return fontCJK
	}
	for _, c := range cues {
		for _, l := range c.Lines {
			for _, r := range l {
				if unicode.Is(unicode.Arabic, r) {
					return fontArabic
				}
			}
		}
	}
	return fontLatin
}

// wide reports an East Asian wide character (Han, kana, Hangul, full-width
// forms), about 1 em wide.
func wide(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul) ||
		r >= 0x3000 && r <= 0x303f || r >= 0xff00 && r <= 0xff60
}

// captionFontSize is the font size of a cue's lines in a width×height frame.
func captionFontSize(lines []string, width, height int) int {
	longest := 1.0
	for _, l := range lines {
		ems := 0.0
		for _, r := range l {
			if wide(r) {
				ems += captionEmPerWide
			} else {
				ems += captionEmPerRune
			}
		}
		longest = math.Max(longest, ems)
	}
	size := math.Min(float64(min(width, height))*captionFontShare, float64(width)*captionWidthShare/longest)
	return max(12, int(size))
}

// findCaptionFont is the path of font's file in the first of dirs that
// holds it.
func findCaptionFont(font captionFont, dirs []string) (string, error) {
	for _, d := range dirs {
		p := filepath.Join(d, font.File)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no font file %s (%s) in %s", font.File, font.Family, strings.Join(dirs, ", "))
}

// burnCaptions draws the cues on the picture of the video at final
// (width×height) with libass (ffmpeg's ass filter, complex shaping:
// HarfBuzz orders and joins Devanagari and Arabic, FriBidi lays
// right-to-left text), in the language's font (captionFontFor) given to
// libass as the only file of its fontsdir. The sound is copied.
func (s *Steps) burnCaptions(ctx context.Context, dir, final, lang string, cues []cue, width, height int) error {
	if len(cues) == 0 {
		return nil
	}
	font := captionFontFor(lang, cues)
	dirs := s.CaptionFontDirs
	if len(dirs) == 0 {
		dirs = DefaultCaptionFontDirs
	}
	file, err := findCaptionFont(font, dirs)
	if err != nil {
		return &TransientError{Msg: fmt.Sprintf("assemble: captions: %v", err)}
	}
	fonts := filepath.Join(dir, "fonts")
	if err := os.MkdirAll(fonts, 0o700); err != nil {
		return &TransientError{Msg: fmt.Sprintf("assemble: captions: %v", err)}
	}
	if err := os.Symlink(file, filepath.Join(fonts, filepath.Base(file))); err != nil && !errors.Is(err, os.ErrExist) {
		return &TransientError{Msg: fmt.Sprintf("assemble: captions: %v", err)}
	}
	script := filepath.Join(dir, "captions.ass")
	if err := os.WriteFile(script, assScript(cues, font, width, height), 0o600); err != nil {
		return &TransientError{Msg: fmt.Sprintf("assemble: captions: %v", err)}
	}
	burned := filepath.Join(dir, "burned.mp4")
	args := []string{"-i", final, "-vf", assFilter(script, fonts), "-map", "0:v", "-map", "0:a?",
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

// assFilter draws the ASS script with the fonts of the directory fonts,
// shaped by HarfBuzz (shaping=complex: the default, auto, leaves
// Devanagari's vowel signs unordered in ffmpeg 5.1). Options of ffmpeg 4.1.
func assFilter(script, fonts string) string {
	return "ass=filename=" + ffmpeg.EscapeFilterValue(script) + ":fontsdir=" + ffmpeg.EscapeFilterValue(fonts) + ":shaping=complex"
}

// assScript writes the cues as an Advanced SubStation Alpha script for a
// width×height frame: one style in font (white, black outline, centred at
// the bottom, the bottom margin 8 % of the height, no wrapping: the lines
// are broken already), one event per cue with its size (captionFontSize),
// its lines joined by \N. Braces, which open override blocks, become
// parentheses, and a backslash is kept from starting an override (a word
// joiner after it).
func assScript(cues []cue, font captionFont, width, height int) []byte {
	var b strings.Builder
	base := captionFontSize([]string{""}, width, height)
	fmt.Fprintf(&b, "[Script Info]\nScriptType: v4.00+\nPlayResX: %d\nPlayResY: %d\nWrapStyle: 2\nScaledBorderAndShadow: yes\n\n", width, height)
	b.WriteString("[V4+ Styles]\nFormat: Name, Fontname, Fontsize, PrimaryColour, SecondaryColour, OutlineColour, BackColour, Bold, Italic, Underline, StrikeOut, ScaleX, ScaleY, Spacing, Angle, BorderStyle, Outline, Shadow, Alignment, MarginL, MarginR, MarginV, Encoding\n")
	fmt.Fprintf(&b, "Style: Caption,%s,%d,&H00FFFFFF,&H00FFFFFF,&H00000000,&H00000000,0,0,0,0,100,100,0,0,1,%d,0,2,%d,%d,%d,1\n\n",
		font.Family, base, max(2, base/12), width/20, width/20, int(math.Round(float64(height)*captionBottomShare)))
	b.WriteString("[Events]\nFormat: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text\n")
	esc := strings.NewReplacer("{", "(", "}", ")", "\\", "\\\u2060", "\n", " ", "\r", " ")
	for _, c := range cues {
		size := captionFontSize(c.Lines, width, height)
		lines := make([]string, 0, len(c.Lines))
		for _, l := range c.Lines {
			if strings.TrimSpace(l) != "" && utf8.ValidString(l) {
				lines = append(lines, esc.Replace(l))
			}
		}
		fmt.Fprintf(&b, "Dialogue: 0,%s,%s,Caption,,0,0,0,,{\\fs%d\\bord%d}%s\n", assTime(c.Start), assTime(c.End), size, max(2, size/12), strings.Join(lines, "\\N"))
	}
	return []byte(b.String())
}

// assTime is an ASS timestamp, h:mm:ss.cc.
func assTime(sec float64) string {
	cs := int64(math.Round(sec * 100))
	return fmt.Sprintf("%d:%02d:%02d.%02d", cs/360000, cs/6000%60, cs/100%60, cs%100)
}
