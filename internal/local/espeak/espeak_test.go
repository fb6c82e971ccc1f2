package espeak

import (
	"context"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mediagen-dev/mediagen/internal/adapters/ffmpeg"
	"github.com/mediagen-dev/mediagen/internal/core/longform"
)

// samples are ordinary narration prose per language, the text the table's
// espeak-ng rates were measured on. Japanese is kana: espeak-ng skips kanji.
var samples = map[string]string{
	"en": "The morning light spread slowly over the quiet harbour, and the fishermen pulled their boats onto the wet sand while gulls circled above the old stone pier.",
	"es": "La luz de la mañana se extendía despacio sobre el puerto tranquilo, y los pescadores arrastraban sus barcas hasta la arena mojada mientras las gaviotas volaban sobre el viejo muelle.",
	"fr": "La lumière du matin s'étendait lentement sur le port tranquille, et les pêcheurs tiraient leurs bateaux sur le sable mouillé pendant que les mouettes tournaient au-dessus de la vieille jetée.",
	"de": "Das Morgenlicht breitete sich langsam über den stillen Hafen aus, und die Fischer zogen ihre Boote auf den nassen Sand, während Möwen über der alten Steinmole kreisten.",
	"it": "La luce del mattino si stendeva lentamente sul porto tranquillo, e i pescatori tiravano le barche sulla sabbia bagnata mentre i gabbiani volavano sopra il vecchio molo di pietra.",
	"pt": "A luz da manhã espalhava-se devagar sobre o porto tranquilo, e os pescadores puxavam os barcos para a areia molhada enquanto as gaivotas voavam sobre o velho cais de pedra.",
	"nl": "Het ochtendlicht verspreidde zich langzaam over de stille haven, en de vissers trokken hun boten op het natte zand terwijl de meeuwen boven de oude stenen pier cirkelden.",
	"pl": "Poranne światło powoli rozlewało się nad cichym portem, a rybacy wyciągali łodzie na mokry piasek, podczas gdy mewy krążyły nad starym kamiennym molo.",
	"hi": "सुबह की रोशनी धीरे धीरे शांत बंदरगाह पर फैल गई, और मछुआरे अपनी नावों को गीली रेत पर खींचने लगे, जबकि समुद्री पक्षी पुराने पत्थर के घाट के ऊपर उड़ रहे थे।",
	"ja": "あさの ひかりが しずかな みなとに ゆっくりと ひろがり、りょうしたちは ぬれた すなはまに ふねを ひきあげ、かもめは ふるい いしの さんばしの うえを まわって いました。",
}

// tools fails (never skips) without espeak-ng or ffmpeg: the project's
// scripts install both, and a skipped measurement proves nothing.
func tools(t *testing.T) (Narrator, ffmpeg.Runner) {
	t.Helper()
	n := Narrator{Timeout: 30 * time.Second}
	if err := n.Available(); err != nil {
		t.Fatalf("espeak-ng is needed to measure the narration rates: %v", err)
	}
	ff := ffmpeg.Runner{Timeout: 30 * time.Second}
	if err := ff.Available(); err != nil {
		t.Fatalf("ffmpeg is needed to measure the narration: %v", err)
	}
	return n, ff
}

// seconds speaks text in lang and measures the speech.
func seconds(t *testing.T, n Narrator, ff ffmpeg.Runner, lang longform.Language, text string) float64 {
	t.Helper()
	ctx := context.Background()
	path, _, err := n.Speak(ctx, lang, text, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	info, err := ff.Probe(ctx, path)
	if err != nil {
		t.Fatalf("measure the speech: %v", err)
	}
	if info.Duration <= 0 {
		t.Fatalf("espeak-ng -v %s made no speech of %q", lang.EspeakVoice, text)
	}
	return info.Duration
}

// speakers are every voice of the catalog, as the narrator is given it:
// its language with the voice's espeak-ng voice.
func speakers(t *testing.T) map[string]longform.Language {
	t.Helper()
	out := map[string]longform.Language{}
	for _, v := range longform.Voices {
		lang, ok := longform.LookupLanguage(v.Language)
		if !ok {
			t.Fatalf("voice %s is of %q, not a supported language", v.ID, v.Language)
		}
		out[v.Language+"/"+v.ID] = lang.Speaker(v)
	}
	return out
}

// The table's espeak-ng rate of each language is no faster than espeak-ng
// really speaks it in any of the language's voices: the narration limits
// rest on it.
func TestEspeakSpeaksAtLeastItsTableRate(t *testing.T) {
	n, ff := tools(t)
	for name, lang := range speakers(t) {
		t.Run(name, func(t *testing.T) {
			text, ok := samples[lang.Code]
			if !ok {
				t.Fatalf("no sample text for %s: add one to measure its rate", lang.Code)
			}
			secs := seconds(t, n, ff, lang, text)
			rate := float64(utf8.RuneCountInString(text)) / secs
			t.Logf("%s (%s): %d characters in %.2f s: %.2f characters/s (table %g)", lang.Code, lang.EspeakVoice, utf8.RuneCountInString(text), secs, rate, lang.EspeakRate)
			if rate < lang.EspeakRate {
				t.Errorf("espeak-ng -v %s speaks %s at %.2f characters/s, slower than the table's %g: lower EspeakRate", lang.EspeakVoice, lang.Code, rate, lang.EspeakRate)
			}
		})
	}
}

// The longest narration each language accepts, spoken by espeak-ng, lasts at
// most 7.5 s in every voice: sped up 1.5× it fits its 5 s scene.
func TestTheLongestNarrationFitsItsSceneWhenSpoken(t *testing.T) {
	n, ff := tools(t)
	for name, lang := range speakers(t) {
		t.Run(name, func(t *testing.T) {
			runes := []rune(samples[lang.Code])
			limit := lang.MaxNarration()
			if len(runes) < limit {
				t.Fatalf("the %s sample has %d characters, fewer than the %d allowed", lang.Code, len(runes), limit)
			}
			text := string(runes[:limit])
			secs := seconds(t, n, ff, lang, text)
			t.Logf("%s: %d characters in %.2f s", lang.Code, limit, secs)
			if secs > longform.NarrationSeconds {
				t.Errorf("%d characters of %s (-v %s) last %.2f s, more than %g s: lower the rate", limit, lang.Code, lang.EspeakVoice, secs, longform.NarrationSeconds)
			}
		})
	}
}
