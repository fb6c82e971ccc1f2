package longform

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/mediagen-dev/mediagen/internal/core/catalog"
)

// Voice is a narration voice of the catalog: one id that a request names
// (voice), mapped to the espeak-ng voice that speaks it locally and to the
// Amazon Polly voice (neural engine) that speaks it in production.
type Voice struct {
	ID       string
	Language string
	Name     string
	// Gender is "female" or "male", as Polly lists the voice.
	Gender string
	// Espeak is espeak-ng's -v argument: the language's voice, with a
	// variant (+f3, +m3) for the voices beyond the language's default.
	// The variants speak at least as fast as the plain voice, so the
	// language's EspeakRate holds for every voice
	// (TestEveryVoiceSpeaksAtLeastItsLanguageRate).
	Espeak string
	// Polly is the Polly VoiceId; every one has the neural engine, which
	// the narrator asks for, in the language's PollyLanguage.
	Polly string
}

// Gender of a voice.
const (
	female = "female"
	male   = "male"
)

// Voices is the catalog. Each language's first voice is its default, the
// one a request without voice gets: its language's own voices
// (Language.EspeakVoice, Language.PollyVoice), so a request that names no
// voice sounds as it did before voices existed. Polly's male voices are
// neural voices of the same language code; a language whose Polly has a
// single neural voice (nl, pl, hi) has a single voice here.
var Voices = []Voice{
	{"joanna", "en", "Joanna", female, "en-us", "Joanna"},
	{"matthew", "en", "Matthew", male, "en-us+m3", "Matthew"},
	{"ruth", "en", "Ruth", female, "en-us+f3", "Ruth"},
	{"lucia", "es", "Lucia", female, "es", "Lucia"},
	{"sergio", "es", "Sergio", male, "es+m3", "Sergio"},
	{"lea", "fr", "Léa", female, "fr-fr", "Lea"},
	{"remi", "fr", "Rémi", male, "fr-fr+m3", "Remi"},
	{"vicki", "de", "Vicki", female, "de", "Vicki"},
	{"daniel", "de", "Daniel", male, "de+m3", "Daniel"},
	{"bianca", "it", "Bianca", female, "it", "Bianca"},
	{"adriano", "it", "Adriano", male, "it+m3", "Adriano"},
	{"camila", "pt", "Camila", female, "pt-br", "Camila"},
	{"thiago", "pt", "Thiago", male, "pt-br+m3", "Thiago"},
	{"laura", "nl", "Laura", female, "nl", "Laura"},
	{"ola", "pl", "Ola", female, "pl", "Ola"},
	{"kajal", "hi", "Kajal", female, "hi", "Kajal"},
	{"kazuha", "ja", "Kazuha", female, "ja", "Kazuha"},
	{"takumi", "ja", "Takumi", male, "ja+m3", "Takumi"},
	{"tomoko", "ja", "Tomoko", female, "ja+f3", "Tomoko"},
}

// languageVoices lists a language's voices, its default first; none for
// an unsupported code.
func languageVoices(code string) []Voice {
	var out []Voice
	for _, v := range Voices {
		if v.Language == code {
			out = append(out, v)
		}
	}
	return out
}

// lookupVoice finds a voice of a language by its id.
func lookupVoice(code, id string) (Voice, bool) {
	vs := languageVoices(code)
	i := slices.IndexFunc(vs, func(v Voice) bool { return v.ID == id })
	if i < 0 {
		return Voice{}, false
	}
	return vs[i], true
}

// defaultVoice is the voice of a request that names none.
func defaultVoice(code string) (Voice, bool) {
	vs := languageVoices(code)
	if len(vs) == 0 {
		return Voice{}, false
	}
	return vs[0], true
}

// Speaker is the language spoken with voice v: the narrators (espeak-ng,
// Polly) read the voice from the Language they are given, so the port
// stays as it is. A voice of another language leaves l unchanged.
func (l Language) Speaker(v Voice) Language {
	if v.Language != l.Code {
		return l
	}
	l.EspeakVoice, l.PollyVoice = v.Espeak, v.Polly
	return l
}

// voiceIDs are a language's voice ids, its default first.
func voiceIDs(code string) []string {
	var ids []string
	for _, v := range languageVoices(code) {
		ids = append(ids, v.ID)
	}
	return ids
}

// voice reads the optional voice of a create or estimate: an id from the
// catalog of the request's language_code. The record keeps "" for the
// language's default voice.
func voice(obj map[string]any, narrate bool, p *catalog.Problems) string {
	raw, present := obj["voice"]
	if !present {
		return ""
	}
	id, ok := raw.(string)
	if !ok {
		p.Add("voice", "must be a string: a voice id from GET /api/long-story/voices")
		return ""
	}
	if !narrate {
		p.Add("voice", "needs narration: enable_narration is false")
		return ""
	}
	code, _ := obj["language_code"].(string)
	if _, known := LookupLanguage(code); !known {
		// The language is reported on its own.
		return ""
	}
	if _, ok := lookupVoice(code, id); !ok {
		p.Add("voice", fmt.Sprintf("%q is not a voice of language_code %q; its voices are %s", catalog.Clip(id), code, strings.Join(voiceIDs(code), ", ")))
		return ""
	}
	if def, _ := defaultVoice(code); def.ID == id {
		return ""
	}
	return id
}

// The range of narration_speed: atempo's lower bound, and the fit rule's
// upper one (a narration is never sped up past maxNarrationRate).
const minNarrationSpeed = 0.5

// narrationSpeed reads the optional narration_speed: the tempo the
// narration is read at, minNarrationSpeed to maxNarrationRate. The
// per-scene narration limits stay as they are: a narration that does not
// fit its scene at the speed is sped up further, at most maxNarrationRate
// in all. The record keeps nil for 1.
func narrationSpeed(obj map[string]any, narrate bool, p *catalog.Problems) *float64 {
	raw, present := obj["narration_speed"]
	if !present {
		return nil
	}
	msg := fmt.Sprintf("must be a number from %g to %g (the narration's tempo; a narration too long for its scene is still sped up, at most %g× in all)", minNarrationSpeed, maxNarrationRate, maxNarrationRate)
	n, ok := raw.(json.Number)
	if !ok {
		p.Add("narration_speed", msg)
		return nil
	}
	speed, err := n.Float64()
	if err != nil || speed < minNarrationSpeed || speed > maxNarrationRate {
		p.Add("narration_speed", msg)
		return nil
	}
	if !narrate {
		p.Add("narration_speed", "needs narration: enable_narration is false")
		return nil
	}
	if speed == 1 {
		return nil
	}
	return &speed
}
