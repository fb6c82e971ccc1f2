package longstory

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/mediagen-dev/mediagen/shared/catalog"
	"github.com/mediagen-dev/mediagen/shared/domain"
)

// RegenerateRequest is a validated request to make one scene of a video
// again.
type RegenerateRequest struct {
	// Scene is the scene as this render makes it: its stored texts with
	// the request's in their place.
	Scene domain.Scene
	// Renarrate says the text spoken over the scene changed, so its
	// narration is spoken again (the other scenes' tracks are reused).
	Renarrate bool
}

// regenerateFields are the fields of a regenerate body, all optional.
var regenerateFields = []string{"prompt", "narration"}

// ParseRegenerate validates a regenerate of scene (the path's number) of
// v with body, optional {"prompt", "narration"}: a new prompt or narration
// is held to the limits a create holds the scene to (its length, the
// prompt its model takes with the theme and style, the narration that
// fits the scene in the video's language). Every bad field is reported at
// once.
func ParseRegenerate(v domain.LongVideo, scene string, body []byte) (RegenerateRequest, error) {
	var p catalog.Problems
	n, err := strconv.Atoi(scene)
	i := slices.IndexFunc(v.Scenes, func(sc domain.Scene) bool { return sc.SceneNumber == n })
	if err != nil || i < 0 {
		numbers := make([]string, len(v.Scenes))
		for j, sc := range v.Scenes {
			numbers[j] = strconv.Itoa(sc.SceneNumber)
		}
		p.Add("scene_number", fmt.Sprintf("%q is not a scene of this video: its scenes are %v", truncate(scene, 16), numbers))
	}
	obj := map[string]any{}
	if len(bytes.TrimSpace(body)) > 0 {
		if obj, err = catalog.DecodeObject(body); err != nil {
			return RegenerateRequest{}, err
		}
	}
	p.Unknown("", obj, regenerateFields)
	if i < 0 {
		return RegenerateRequest{}, p.Err()
	}
	old := v.Scenes[i]
	sc := old
	var sp catalog.Problems
	if _, present := obj["prompt"]; present {
		sc.Prompt = text(obj, "prompt", MaxScenePrompt, true, &sp)
	}
	if _, present := obj["narration"]; present {
		// Leave narration out to keep the scene's; its limit depends on
		// the language (below).
		sc.Narration = text(obj, "narration", math.MaxInt, true, &sp)
	}
	p = append(p, sp...)
	if len(sp) == 0 {
		msg := promptFits(Request{Prompt: v.Prompt, VideoStyle: v.VideoStyle, Model: v.Model})(sc)
		if msg != "" {
			p.Add("prompt", msg)
		}
		lang, known := LookupLanguage(v.LanguageCode)
		spoken{lang: lang, known: known, narrate: v.EnableNarration}.check("", sc, msg == "", &p)
	}
	if err := p.Err(); err != nil {
		return RegenerateRequest{}, err
	}
	return RegenerateRequest{Scene: sc, Renarrate: v.EnableNarration && script(sc) != script(old)}, nil
}
