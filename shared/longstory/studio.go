package longstory

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mediagen-dev/mediagen/shared/catalog"
	"github.com/mediagen-dev/mediagen/shared/domain"
	"github.com/mediagen-dev/mediagen/shared/ffmpeg"
)

// studioFields are the production options a create (and an estimate)
// takes beyond the spec's fields (domain.Studio). Each is optional and its
// default is the spec's video.
var studioFields = []string{"aspect_ratio", "captions"}

// Frame sizes of an upright video: every scene is fitted to it, whatever
// size its model made.
const (
	portraitWidth  = 720
	portraitHeight = 1280
)

// studio reads the production options; model is the video's model
// (checked: modelOK), whose frames the options must be possible in, and
// narrate its enable_narration, which captions are made from.
func studio(obj map[string]any, model string, modelOK, narrate bool, p *catalog.Problems) domain.Studio {
	var out domain.Studio
	out.Captions = captions(obj, narrate, p)
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
// WebVTT file (sidecar) and an unnarrated one none. Captions are the
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
	case domain.CaptionsSidecar:
		if !narrate {
			p.Add("captions", fmt.Sprintf("%q needs narration: captions show what the narrator says; set enable_narration to true or captions to %q", c, domain.CaptionsNone))
		}
		return c
	default:
		p.Add("captions", fmt.Sprintf("must be %q or %q (a WebVTT file, the default when narrated)", domain.CaptionsNone, domain.CaptionsSidecar))
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
