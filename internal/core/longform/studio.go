package longform

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/mediagen-dev/mediagen/internal/adapters/ffmpeg"
	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// studioFields are the production options a create (and an estimate)
// takes beyond the spec's fields (domain.Studio). Each is optional and its
// default is the spec's video.
var studioFields = []string{"aspect_ratio", "captions", "transition", "music_url", "music_volume", "voice", "narration_speed"}

// Frame sizes of an upright video: every scene is fitted to it, whatever
// size its model made.
const (
	portraitWidth  = 720
	portraitHeight = 1280
)

// studio reads the production options; model is the video's model
// (checked: modelOK), whose frames the options must be possible in, and
// narrate its enable_narration, which captions are made from.
func studio(obj map[string]any, opts catalog.Options, model string, modelOK, narrate bool, p *catalog.Problems) domain.Studio {
	var out domain.Studio
	out.Captions = captions(obj, narrate, p)
	music(obj, opts, &out, p)
	out.Voice = voice(obj, narrate, p)
	out.NarrationSpeed = narrationSpeed(obj, narrate, p)
	if raw, present := obj["transition"]; present {
		switch tr, _ := raw.(string); tr {
		case domain.TransitionCut:
		case domain.TransitionCrossfade:
			out.Transition = tr
		default:
			p.Add("transition", fmt.Sprintf("must be %q (the default) or %q (each scene fades into the next over %g s)", domain.TransitionCut, domain.TransitionCrossfade, crossfadeSeconds))
		}
	}
	if raw, present := obj["aspect_ratio"]; present {
		switch a, _ := raw.(string); a {
		case domain.AspectLandscape:
		case domain.AspectPortrait:
			out.AspectRatio = a
		default:
			p.Add("aspect_ratio", fmt.Sprintf("must be %q (1280x720) or %q (720x1280)", domain.AspectLandscape, domain.AspectPortrait))
		}
	}
	if out.Portrait() && modelOK {
		if v, err := catalog.LookupVersion(model); err == nil {
			if _, err := sceneInput(v, "scene", out.AspectRatio); errors.Is(err, errNoPortrait) {
				p.Add("aspect_ratio", fmt.Sprintf("model %s makes no portrait clips; portrait scenes are made by %s", model, portraitModels()))
			}
		}
	}
	return out
}

// captions reads the caption mode: by default a narrated video has a
// webVTT file (sidecar) and an unnarrated one none. Captions are the
// narration's, so asking for them without narration is refused. The
// record keeps "" for none.
func captions(obj map[string]any, narrate bool, p *catalog.Problems) string {
	raw, present := obj["captions"]
	if !present {
		if narrate {
			return domain.CaptionsSidecar
		}
		return ""
	}
	switch c, _ := raw.(string); c {
	case domain.CaptionsNone:
		return ""
	case domain.CaptionsSidecar, domain.CaptionsBurned:
		if !narrate {
			p.Add("captions", fmt.Sprintf("%q needs narration: captions show what the narrator says; set enable_narration to true or captions to %q", c, domain.CaptionsNone))
		}
		return c
	default:
		p.Add("captions", fmt.Sprintf("must be one of %q, %q (a WebVTT file, the default when narrated) or %q (the file, and drawn on the picture)",
			domain.CaptionsNone, domain.CaptionsSidecar, domain.CaptionsBurned))
		return ""
	}
}

// portraitModels lists the long-form models that make portrait clips.
func portraitModels() string {
	var out []string
	for _, m := range Models() {
		if v, err := catalog.LookupVersion(m); err == nil {
			if _, err := sceneInput(v, "scene", domain.AspectPortrait); err == nil {
				out = append(out, m)
			}
		}
	}
	return strings.Join(out, ", ")
}

// frame is the size every scene of an assembled video is fitted to: a
// portrait video's is portraitWidth×portraitHeight; a landscape video's is
// its first clip's (the spec's video, unchanged).
func frame(st domain.Studio, first ffmpeg.Stream) (width, height int) {
	if st.Portrait() {
		return portraitWidth, portraitHeight
	}
	return first.Width, first.Height
}

// crossfadeSeconds is how long one scene fades into the next.
const crossfadeSeconds = 0.5

// joinByCrossfade joins the scenes with a crossfade and lays the narration
// under them, keeping every scene's start, and so its narration, where a
// cut puts it: each scene but the last is encoded crossfadeSeconds longer
// (its clip runs on) and the next scene, starting at its own time, fades
// in over that extension. The video lasts scenes × SceneSeconds, as with
// cuts. xfade needs ffmpeg 4.3; the Lambda layer's static build is 4.1, so
// the fade is an alpha fade-in overlaid on the scene before (overlay and
// fade's alpha mode are in 4.1).
func (s *Steps) joinByCrossfade(ctx context.Context, dir string, sources []sceneSource, width, height int, withAudio bool, final string) error {
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) }
	var args, graph []string
	total := float64(len(sources) * SceneSeconds)
	graph = append(graph, fmt.Sprintf("color=c=black:s=%dx%d:r=%d:d=%s,format=yuv420p[base0]", width, height, outputFPS, f(total)))
	for i, src := range sources {
		length := float64(SceneSeconds)
		if i < len(sources)-1 {
			length += crossfadeSeconds
		}
		segment := filepath.Join(dir, fmt.Sprintf("segment-%03d.mp4", src.n))
		if err := s.FFmpeg.Run(ctx, segmentArgs(src.clip, src.clipSeconds, length, width, height, segment)...); err != nil {
			return &TransientError{Msg: fmt.Sprintf("assemble: scene %d: %v", src.n, err)}
		}
		args = append(args, "-i", segment)
		chain := []string{"format=yuva420p"}
		if i > 0 {
			chain = append(chain, fmt.Sprintf("fade=t=in:st=0:d=%s:alpha=1", f(crossfadeSeconds)))
		}
		chain = append(chain, fmt.Sprintf("setpts=PTS-STARTPTS+%d/TB", i*SceneSeconds))
		graph = append(graph, fmt.Sprintf("[%d:v]%s[s%d]", i, strings.Join(chain, ","), i),
			fmt.Sprintf("[base%d][s%d]overlay=eof_action=pass[base%d]", i, i, i+1))
	}
	graph = append(graph, fmt.Sprintf("[base%d]format=yuv420p[v]", len(sources)))
	pictures := filepath.Join(dir, "pictures.mp4")
	args = append(args, "-filter_complex", strings.Join(graph, ";"), "-map", "[v]",
		"-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p", "-r", strconv.Itoa(outputFPS), "-t", f(total), pictures)
	if err := s.FFmpeg.Run(ctx, args...); err != nil {
		return &TransientError{Msg: fmt.Sprintf("assemble: crossfade scenes: %v", err)}
	}
	join := append([]string{"-i", pictures}, withNarration(sources, withAudio)...)
	if err := s.FFmpeg.Run(ctx, append(join, "-movflags", "+faststart", final)...); err != nil {
		return &TransientError{Msg: fmt.Sprintf("assemble: join scenes: %v", err)}
	}
	return nil
}

// Applied is the studio a video is made with, every default written out,
// as its status view shows it: captions "none" rather than "", the frame
// and the transition named, the language's default voice and a speed of
// 1 when narrated, the default music volume when there is music. A field
// that does not apply stays empty: no voice nor speed without narration,
// no volume without music.
func Applied(v domain.LongVideo) domain.Studio {
	out := v.Studio
	if out.Captions == "" {
		out.Captions = domain.CaptionsNone
	}
	if out.AspectRatio == "" {
		out.AspectRatio = domain.AspectLandscape
	}
	if out.Transition == "" {
		out.Transition = domain.TransitionCut
	}
	if v.EnableNarration {
		if out.Voice == "" {
			if def, ok := defaultVoice(v.LanguageCode); ok {
				out.Voice = def.ID
			}
		}
		if out.NarrationSpeed == nil {
			one := 1.0
			out.NarrationSpeed = &one
		}
	}
	if out.MusicURL != "" && out.MusicVolume == nil {
		vol := musicVolume(out)
		out.MusicVolume = &vol
	}
	return out
}
