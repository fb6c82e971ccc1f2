// Package longform holds the long-form video use cases: the estimate,
// creating a video (validate, hold, record, start the workflow), its status,
// and the workflow's task steps (submit and check scenes, narrate, assemble,
// finalize, fail).
package longform

import (
	"math"
	"slices"
)

// Language is a narration language: its code in requests, the espeak-ng
// voice used locally and the Amazon Polly voice used in production, with
// how fast each engine speaks it.
type Language struct {
	Code        string
	Name        string
	EspeakVoice string
	PollyVoice  string
	// PollyLanguage is the BCP-47 code sent to Polly with the voice: a
	// bilingual voice (Kajal: en-IN and hi-IN) speaks its default language
	// without it.
	PollyLanguage string
	// Coverage says what the local voice reads, for docs/long-form.md.
	Coverage string
	// EspeakRate is the characters per second espeak-ng speaks at the
	// narrator's -s 165, measured on sample prose and rounded down
	// (TestEspeakSpeaksAtLeastItsTableRate re-measures it).
	EspeakRate float64
	// PollyRate is a conservative characters per second for the Polly
	// voice: Polly publishes no speaking rate ("there is no standard speed
	// available for Amazon Polly voices"), so it is set below ordinary read
	// speech (see docs/long-form.md, "Narration length").
	PollyRate float64
}

// Narration fitting: a scene lasts SceneSeconds and its narration is sped up
// at most maxNarrationRate to fit it, so it must be speakable in 7.5 s.
const NarrationSeconds = SceneSeconds * maxNarrationRate

// Languages are the narration languages the service supports.
var Languages = []Language{
	{"en", "English", "en-us", "Joanna", "en-US", "full", 17, 12},
	{"es", "Spanish", "es", "Lucia", "es-ES", "full", 17, 12},
	{"fr", "French", "fr-fr", "Lea", "fr-FR", "full", 22, 12},
	{"de", "German", "de", "Vicki", "de-DE", "full", 17, 12},
	{"it", "Italian", "it", "Bianca", "it-IT", "full", 16, 12},
	{"pt", "Portuguese", "pt-br", "Camila", "pt-BR", "full (Brazilian voice)", 15, 12},
	{"nl", "Dutch", "nl", "Laura", "nl-NL", "full", 17, 12},
	{"pl", "Polish", "pl", "Ola", "pl-PL", "full", 14, 12},
	{"hi", "Hindi", "hi", "Kajal", "hi-IN", "Devanagari script", 13, 10},
	{"ja", "Japanese", "ja", "Kazuha", "ja-JP", "kana only locally (espeak-ng skips kanji); full with Polly", 8, 5},
}

// Rate is the characters per second the slower of the two engines speaks
// the language at: the limit must hold wherever the service runs.
func (l Language) Rate() float64 { return math.Min(l.EspeakRate, l.PollyRate) }

// MaxNarration is the most characters (Unicode code points) a scene's spoken
// text may have in this language: what the slower engine says in
// NarrationSeconds.
func (l Language) MaxNarration() int { return int(math.Floor(l.Rate() * NarrationSeconds)) }

// maxNarrationAnyLanguage bounds a narration whose language is not known
// (a bad language_code is reported on its own).
func maxNarrationAnyLanguage() int {
	n := 0
	for _, l := range Languages {
		n = max(n, l.MaxNarration())
	}
	return n
}

// LanguageCodes lists the supported codes, in the order above.
func LanguageCodes() []string {
	codes := make([]string, len(Languages))
	for i, l := range Languages {
		codes[i] = l.Code
	}
	return codes
}

// LookupLanguage finds a supported language by its code, as the contract
// lists it: lowercase, so "FR" is not "fr".
func LookupLanguage(code string) (Language, bool) {
	i := slices.IndexFunc(Languages, func(l Language) bool { return l.Code == code })
	if i < 0 {
		return Language{}, false
	}
	return Languages[i], true
}
