package longform

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// styles maps each video_style to the words it puts before a scene prompt.
var styles = map[string]string{
	"auto":        "",
	"cinematic":   "Cinematic, dramatic lighting",
	"documentary": "Documentary footage, natural light",
	"animation":   "Animated, vivid colours",
	"noir":        "Black-and-white film noir",
	"vintage":     "Vintage film, warm grain",
}

// StyleNames lists the styles in a stable order.
func StyleNames() []string {
	names := make([]string, 0, len(styles))
	for k := range styles {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// ScenePrompt is what the upstream model is asked for one scene: the style's
// words, the scene number, the scene's prompt and the video's theme.
func ScenePrompt(style, theme string, sc domain.Scene) string {
	parts := []string{fmt.Sprintf("Scene %d: %s", sc.SceneNumber, sc.Prompt)}
	if prefix := styles[style]; prefix != "" {
		parts = append([]string{prefix}, parts...)
	}
	return strings.Join(parts, ". ") + ". Part of: " + theme
}

// ParseCreate validates a create body and reports every bad field at once.
func ParseCreate(body []byte, opts catalog.Options) (Request, error) {
	obj, err := catalog.DecodeObject(body)
	if err != nil {
		return Request{}, err
	}
	allowed := append(append([]string{"prompt", "scenes", "language_code", "model", "enable_narration", "video_style"}, studioFields...), catalog.WebhookFields...)
	var p catalog.Problems
	p.Unknown("", obj, allowed)
	req := Request{Model: defaultModel, EnableNarration: true, VideoStyle: "auto"}
	req.Prompt = text(obj, "prompt", MaxPromptRunes, true, &p)
	lang, langOK := language(obj, &p)
	req.LanguageCode = lang.Code
	modelOK := true
	if raw, present := obj["model"]; present {
		if m, ok := raw.(string); !ok {
			p.Add("model", "must be a string")
			modelOK = false
		} else if _, err := videoVariant(m); err != nil {
			p.Add("model", err.Error())
			modelOK = false
		} else {
			req.Model = m
		}
	}
	req.EnableNarration = enableNarration(obj, &p)
	req.Studio = studio(obj, opts, req.Model, modelOK, req.EnableNarration, &p)
	if raw, present := obj["video_style"]; present {
		st, ok := raw.(string)
		if _, known := styles[st]; !ok || !known {
			p.Add("video_style", "must be one of "+strings.Join(StyleNames(), ", "))
		} else {
			req.VideoStyle = st
		}
	}
	req.Scenes = scenes(obj["scenes"], &p, promptFits(req), spoken{lang: lang, known: langOK, narrate: req.EnableNarration},
		sceneModelCheck(req.Studio.AspectRatio))
	req.Webhook = catalog.CheckWebhook(obj, domain.LongVideoEvents, opts, &p)
	if err := p.Err(); err != nil {
		return Request{}, err
	}
	return req, nil
}

// promptFits checks what a scene asks of its model (ScenePrompt; the
// scene's own model, else req's) against the model's own prompt limit; ""
// when it fits.
func promptFits(req Request) func(domain.Scene) string {
	return func(sc domain.Scene) string {
		model := cmp.Or(sc.Model, req.Model)
		maxLen := 0
		if v, err := videoVariant(model); err == nil {
			if f, ok := v.Field("prompt"); ok {
				maxLen = f.MaxLen
			}
		}
		if maxLen == 0 || sc.Prompt == "" || req.Prompt == "" {
			return ""
		}
		if n := utf8.RuneCountInString(ScenePrompt(req.VideoStyle, req.Prompt, sc)); n > maxLen {
			return fmt.Sprintf("with the theme and the style's words it makes a prompt of %d characters; model %s takes at most %d characters", n, model, maxLen)
		}
		return ""
	}
}

// sceneModelCheck says what is wrong with a scene's own model, "" when
// nothing: a video model_version long-form videos support that can make
// the video's frame (aspect, as domain.Studio.AspectRatio).
func sceneModelCheck(aspect string) func(string) string {
	return func(model string) string {
		v, err := videoVariant(model)
		if err != nil {
			return err.Error()
		}
		if _, err := sceneInput(v, "scene", aspect); errors.Is(err, errNoPortrait) {
			return fmt.Sprintf("model %s makes no portrait clips; portrait scenes are made by %s", model, portraitModels())
		}
		return ""
	}
}

// language reads the required language_code; ok is false when it is
// missing or not supported (and reported).
func language(obj map[string]any, p *catalog.Problems) (Language, bool) {
	code, ok := obj["language_code"].(string)
	if !ok {
		p.Add("language_code", "is required: one of "+strings.Join(LanguageCodes(), ", "))
		return Language{}, false
	}
	l, ok := LookupLanguage(code)
	if !ok {
		msg := fmt.Sprintf("%q is not a supported narration language (supported: %s)", truncate(code, 16), strings.Join(LanguageCodes(), ", "))
		if lower, known := LookupLanguage(strings.ToLower(code)); known {
			msg = fmt.Sprintf("%q is not a supported narration language: the codes are lowercase (%q)", truncate(code, 16), lower.Code)
		}
		p.Add("language_code", msg)
	}
	return l, ok
}

// enableNarration reads the optional enable_narration, true by default.
func enableNarration(obj map[string]any, p *catalog.Problems) bool {
	raw, present := obj["enable_narration"]
	if !present {
		return true
	}
	b, ok := raw.(bool)
	if !ok {
		p.Add("enable_narration", "must be true or false")
		return true
	}
	return b
}

// spoken holds what a scene says to its narration limit: the text spoken
// over a scene (its narration, else its prompt: see Narrate) must be
// speakable in NarrationSeconds in the video's language, or the scene
// would outlast its 5 s or lose the end of its narration.
type spoken struct {
	lang Language
	// known is false when language_code is bad: the narration is then
	// held to the largest limit of any language, and the prompt to none.
	known bool
	// narrate is enable_narration: a scene's prompt is spoken only then.
	narrate bool
}

func (s spoken) limit() int {
	if !s.known {
		return maxNarrationAnyLanguage()
	}
	return s.lang.MaxNarration()
}

// check reports the scene's spoken text when it is too long to fit; its
// prompt only when nothing else was said of it (promptOK). field is the
// scene's in the body ("scenes[2]"), "" when the body is the scene's.
func (s spoken) check(field string, sc domain.Scene, promptOK bool, p *catalog.Problems) {
	limit := s.limit()
	if field != "" {
		field += "."
	}
	why := fmt.Sprintf("a scene lasts %d s and its narration is sped up at most %g×, so it must be speakable in %g s", SceneSeconds, maxNarrationRate, NarrationSeconds)
	in := "in any supported language"
	if s.known {
		in = fmt.Sprintf("in %s (language_code %q)", s.lang.Name, s.lang.Code)
	}
	if n := utf8.RuneCountInString(sc.Narration); n > limit {
		p.Add(field+"narration", fmt.Sprintf("must be at most %d characters %s, got %d: %s", limit, in, n, why))
		return
	}
	if promptOK && s.known && s.narrate && sc.Narration == "" {
		if n := utf8.RuneCountInString(sc.Prompt); n > limit {
			p.Add(field+"prompt", fmt.Sprintf("is spoken over the scene when it has no narration, so it must be at most %d characters %s, got %d: %s; "+
				"add a narration of at most %d characters, shorten the prompt or set enable_narration to false", limit, in, n, why, limit))
		}
	}
}

// sceneFields are the fields of one scene.
var sceneFields = []string{"scene_number", "prompt", "narration", "model"}

// scenes reads the scenes; fits checks a scene's prompt, speech its
// narration and model a scene's own model (sceneModelCheck).
func scenes(raw any, p *catalog.Problems, fits func(domain.Scene) string, speech spoken, model func(string) string) []domain.Scene {
	list, ok := raw.([]any)
	switch {
	case raw == nil:
		p.Add("scenes", fmt.Sprintf("is required: %d to %d scenes, each {scene_number, prompt}", minScenes, MaxScenes))
		return nil
	case !ok:
		p.Add("scenes", "must be an array of scene objects")
		return nil
	case len(list) < minScenes || len(list) > MaxScenes:
		p.Add("scenes", fmt.Sprintf("must hold %d to %d scenes, got %d", minScenes, MaxScenes, len(list)))
		return nil
	}
	seen := map[int64]bool{}
	var out []domain.Scene
	for i, item := range list {
		field := fmt.Sprintf("scenes[%d]", i)
		obj, ok := item.(map[string]any)
		if !ok {
			p.Add(field, "must be an object {scene_number, prompt}")
			continue
		}
		p.Unknown(field+".", obj, sceneFields)
		sc := domain.Scene{}
		n, ok := obj["scene_number"].(json.Number)
		num, err := n.Int64()
		switch {
		case !ok:
			p.Add(field+".scene_number", "is required: a positive whole number")
		case err != nil || num < 1 || num > 1000:
			p.Add(field+".scene_number", fmt.Sprintf("must be a whole number from 1 to 1000, got %s", truncate(string(n), 32)))
		case seen[num]:
			p.Add(field+".scene_number", fmt.Sprintf("%d is used by another scene; scene numbers must be unique", num))
		default:
			seen[num] = true
			sc.SceneNumber = int(num)
		}
		var sp catalog.Problems
		sc.Prompt = text(obj, "prompt", MaxScenePrompt, true, &sp)
		// The narration's limit depends on the language: checked below.
		sc.Narration = text(obj, "narration", math.MaxInt, false, &sp)
		if raw, present := obj["model"]; present {
			m, ok := raw.(string)
			switch {
			case !ok:
				sp.Add("model", "must be a string: a video model_version, such as "+defaultModel)
			case model(m) != "":
				sp.Add("model", model(m))
			default:
				sc.Model = m
			}
		}
		for _, e := range sp {
			p.Add(field+"."+e.Field, e.Message)
		}
		if len(sp) == 0 {
			msg := fits(sc)
			if msg != "" {
				p.Add(field+".prompt", msg)
			}
			speech.check(field, sc, msg == "", p)
		}
		out = append(out, sc)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].SceneNumber < out[j].SceneNumber })
	return out
}

// text reads a string field with a length limit in characters.
func text(obj map[string]any, key string, max int, required bool, p *catalog.Problems) string {
	raw, present := obj[key]
	if !present {
		if required {
			p.Add(key, "is required")
		}
		return ""
	}
	s, ok := raw.(string)
	switch {
	case !ok:
		p.Add(key, "must be a string")
	case required && strings.TrimSpace(s) == "":
		p.Add(key, "must not be empty")
	case utf8.RuneCountInString(s) > max:
		p.Add(key, fmt.Sprintf("must be at most %d characters long, got %d", max, utf8.RuneCountInString(s)))
	default:
		return s
	}
	return ""
}

func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}
