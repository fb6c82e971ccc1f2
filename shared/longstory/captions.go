package longstory

import (
	"context"
	"fmt"
	"math"
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

// cues times each narrated scene's caption from its own narration track:
// from where its speech starts to where it ends, as the assembly lays it
// (at the scene's start, sped up by narrationTempo, never past the scene).
// starts are the scenes' start times in the final video.
func cues(v domain.LongVideo, sources []sceneSource, starts []float64, spans map[int][]ffmpeg.Span) []Cue {
	texts := map[int]string{}
	for _, sc := range v.Scenes {
		texts[sc.SceneNumber] = script(sc)
	}
	var out []Cue
	for i, src := range sources {
		sp := spans[src.n]
		if src.speech == "" || len(sp) == 0 {
			continue
		}
		tempo := narrationTempo(src.speechSeconds)
		start := starts[i] + sp[0].Start/tempo
		end := math.Min(starts[i]+sp[len(sp)-1].End/tempo, starts[i]+SceneSeconds)
		if end <= start {
			continue
		}
		out = append(out, Cue{Start: start, End: end, Lines: captionLines(texts[src.n])})
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
