// Package longstory holds the long-form video use cases: the estimate,
// creating a video (validate, hold, record, start the workflow), its status,
// and the workflow's task steps (submit and check scenes, narrate, assemble,
// finalize, fail).
package longstory

import (
	"slices"
	"strings"
)

// Language is a narration language: its code in requests, the espeak-ng
// voice used locally and the Amazon Polly voice used in production.
type Language struct {
	Code        string
	Name        string
	EspeakVoice string
	PollyVoice  string
	// Coverage says what the local voice reads, for the README.
	Coverage string
}

// Languages are the narration languages the service supports.
var Languages = []Language{
	{"en", "English", "en-us", "Joanna", "full"},
	{"es", "Spanish", "es", "Lucia", "full"},
	{"fr", "French", "fr-fr", "Lea", "full"},
	{"de", "German", "de", "Vicki", "full"},
	{"it", "Italian", "it", "Bianca", "full"},
	{"pt", "Portuguese", "pt-br", "Camila", "full (Brazilian voice)"},
	{"nl", "Dutch", "nl", "Laura", "full"},
	{"pl", "Polish", "pl", "Ola", "full"},
	{"hi", "Hindi", "hi", "Kajal", "Devanagari script"},
	{"ja", "Japanese", "ja", "Kazuha", "kana only locally (espeak-ng skips kanji); full with Polly"},
}

// LanguageCodes lists the supported codes, in the order above.
func LanguageCodes() []string {
	codes := make([]string, len(Languages))
	for i, l := range Languages {
		codes[i] = l.Code
	}
	return codes
}

// LookupLanguage finds a supported language by its two-letter code.
func LookupLanguage(code string) (Language, bool) {
	i := slices.IndexFunc(Languages, func(l Language) bool { return l.Code == strings.ToLower(code) })
	if i < 0 {
		return Language{}, false
	}
	return Languages[i], true
}
