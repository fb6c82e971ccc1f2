package narration

import (
	"context"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/polly"
	"github.com/aws/aws-sdk-go-v2/service/polly/types"

	"github.com/mediagen-dev/mediagen/internal/core/longform"
)

// recordingPolly stands in for the Polly API: a thin wire call no local
// server speaks.
type recordingPolly struct{ got *polly.SynthesizeSpeechInput }

func (r *recordingPolly) SynthesizeSpeech(_ context.Context, in *polly.SynthesizeSpeechInput, _ ...func(*polly.Options)) (*polly.SynthesizeSpeechOutput, error) {
	r.got = in
	return &polly.SynthesizeSpeechOutput{AudioStream: io.NopCloser(strings.NewReader("ID3-mp3-bytes"))}, nil
}

// Every supported language reaches Polly with its voice and its language
// code: without the code, the bilingual Kajal reads Hindi as Indian English.
func TestPollySpeaksEachLanguageWithItsVoiceAndLanguageCode(t *testing.T) {
	tests := []struct {
		code, text string
		voice      types.VoiceId
		language   types.LanguageCode
	}{
		{"en", "The sea at dawn.", types.VoiceIdJoanna, types.LanguageCodeEnUs},
		{"es", "El mar al amanecer.", types.VoiceIdLucia, types.LanguageCodeEsEs},
		{"fr", "La mer à l'aube.", types.VoiceIdLea, types.LanguageCodeFrFr},
		{"de", "Das Meer im Morgengrauen.", types.VoiceIdVicki, types.LanguageCodeDeDe},
		{"it", "Il mare all'alba.", types.VoiceIdBianca, types.LanguageCodeItIt},
		{"pt", "O mar ao amanhecer.", types.VoiceIdCamila, types.LanguageCodePtBr},
		{"nl", "De zee bij dageraad.", types.VoiceIdLaura, types.LanguageCodeNlNl},
		{"pl", "Morze o świcie.", types.VoiceIdOla, types.LanguageCodePlPl},
		{"hi", "भोर में समुद्र।", types.VoiceIdKajal, types.LanguageCodeHiIn},
		{"ja", "よあけの うみ。", types.VoiceIdKazuha, types.LanguageCodeJaJp},
	}
	if len(tests) != len(longform.Languages) {
		t.Fatalf("%d cases for %d supported languages: add the new language here", len(tests), len(longform.Languages))
	}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			lang, ok := longform.LookupLanguage(tt.code)
			if !ok {
				t.Fatalf("%s is not a supported language", tt.code)
			}
			rec := &recordingPolly{}
			path, ctype, err := Polly{Client: rec}.Speak(context.Background(), lang, tt.text, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			got := rec.got
			if got.VoiceId != tt.voice || got.LanguageCode != tt.language {
				t.Errorf("asked Polly for voice %q in %q, want %q in %q", got.VoiceId, got.LanguageCode, tt.voice, tt.language)
			}
			if got.Engine != types.EngineNeural || got.OutputFormat != types.OutputFormatMp3 || aws.ToString(got.Text) != tt.text {
				t.Errorf("asked Polly for engine %q, format %q, text %q", got.Engine, got.OutputFormat, aws.ToString(got.Text))
			}
			raw, _ := os.ReadFile(path)
			if ctype != "audio/mpeg" || !strings.HasSuffix(path, ".mp3") || string(raw) != "ID3-mp3-bytes" {
				t.Errorf("wrote %s (%s) with %q", path, ctype, raw)
			}
		})
	}
}

// A voice or language code the SDK does not know is refused before any
// call: Polly would reject it, or speak the voice's default language.
func TestPollyRefusesAnUnknownVoiceOrLanguageCode(t *testing.T) {
	hindi, _ := longform.LookupLanguage("hi")
	noCode, badVoice := hindi, hindi
	noCode.PollyLanguage = ""
	badVoice.PollyVoice = "Nobody"
	for name, lang := range map[string]longform.Language{"no language code": noCode, "unknown voice": badVoice} {
		t.Run(name, func(t *testing.T) {
			rec := &recordingPolly{}
			_, _, err := Polly{Client: rec}.Speak(context.Background(), lang, "नमस्ते", t.TempDir())
			if !errors.Is(err, errUnsupportedVoice) {
				t.Errorf("err = %v, want ErrUnsupportedVoice", err)
			}
			if rec.got != nil {
				t.Errorf("called Polly with %+v", rec.got)
			}
		})
	}
}

func TestEveryLanguageHasAPollyVoiceThatExists(t *testing.T) {
	known := map[string]bool{}
	for _, v := range types.VoiceId("").Values() {
		known[string(v)] = true
	}
	for _, lang := range longform.Languages {
		if !known[lang.PollyVoice] {
			t.Errorf("%s: Polly has no voice %q", lang.Code, lang.PollyVoice)
		}
	}
}

// Every voice of the catalog reaches Polly as its own VoiceId with the
// neural engine and its language's code, and the SDK knows both: a voice
// the catalog lists is one Polly speaks.
func TestPollySpeaksEveryCatalogVoice(t *testing.T) {
	for _, v := range longform.Voices {
		t.Run(v.Language+"/"+v.ID, func(t *testing.T) {
			lang, ok := longform.LookupLanguage(v.Language)
			if !ok {
				t.Fatalf("voice %s is of %q, not a supported language", v.ID, v.Language)
			}
			rec := &recordingPolly{}
			if _, _, err := (Polly{Client: rec}).Speak(context.Background(), lang.Speaker(v), "Hello.", t.TempDir()); err != nil {
				t.Fatal(err)
			}
			if string(rec.got.VoiceId) != v.Polly || string(rec.got.LanguageCode) != lang.PollyLanguage || rec.got.Engine != types.EngineNeural {
				t.Errorf("asked Polly for %q in %q (%s), want %q in %q (neural)", rec.got.VoiceId, rec.got.LanguageCode, rec.got.Engine, v.Polly, lang.PollyLanguage)
			}
		})
	}
}

// answeringPolly answers every SynthesizeSpeech with body.
type answeringPolly struct {
	got  *polly.SynthesizeSpeechInput
	body string
}

func (a *answeringPolly) SynthesizeSpeech(_ context.Context, in *polly.SynthesizeSpeechInput, _ ...func(*polly.Options)) (*polly.SynthesizeSpeechOutput, error) {
	a.got = in
	return &polly.SynthesizeSpeechOutput{AudioStream: io.NopCloser(strings.NewReader(a.body)), ContentType: aws.String("application/x-json-stream")}, nil
}

// The speech marks are asked of the same voice, language code, engine and
// text as the speech, as json with sentence and word marks (Polly's
// SpeechMarkTypes), and read from Polly's line-delimited JSON (the
// documented example: "Mary had a little lamb").
func TestPollySpeechMarksAreTheSpeechsSentencesAndWords(t *testing.T) {
	hindi, _ := longform.LookupLanguage("hi")
	text := "Mary had a little lamb."
	body := `{"time":6,"type":"sentence","start":0,"end":23,"value":"Mary had a little lamb."}
{"time":6,"type":"word","start":0,"end":4,"value":"Mary"}
{"time":373,"type":"word","start":5,"end":8,"value":"had"}
`
	rec := &answeringPolly{body: body}
	marks, err := Polly{Client: rec}.SpeechMarks(context.Background(), hindi, text)
	if err != nil {
		t.Fatal(err)
	}
	speech, _ := speechInput(hindi, text)
	got := rec.got
	if got.OutputFormat != types.OutputFormatJson || !slices.Equal(got.SpeechMarkTypes, []types.SpeechMarkType{types.SpeechMarkTypeSentence, types.SpeechMarkTypeWord}) || got.SampleRate != nil {
		t.Errorf("asked Polly for %q marks %v at rate %v; want json sentence and word marks, no sample rate", got.OutputFormat, got.SpeechMarkTypes, aws.ToString(got.SampleRate))
	}
	if got.VoiceId != speech.VoiceId || got.LanguageCode != speech.LanguageCode || got.Engine != speech.Engine || aws.ToString(got.Text) != text {
		t.Errorf("marks asked of %q in %q (%s) for %q; want the speech's %q in %q (%s)", got.VoiceId, got.LanguageCode, got.Engine, aws.ToString(got.Text), speech.VoiceId, speech.LanguageCode, speech.Engine)
	}
	want := []longform.SpeechMark{
		{Time: 6, Type: "sentence", Start: 0, End: 23, Value: text},
		{Time: 6, Type: "word", Start: 0, End: 4, Value: "Mary"},
		{Time: 373, Type: "word", Start: 5, End: 8, Value: "had"},
	}
	if !slices.Equal(marks, want) {
		t.Errorf("marks %+v, want %+v", marks, want)
	}
	if _, err := (Polly{Client: &answeringPolly{body: "not json\n"}}).SpeechMarks(context.Background(), hindi, text); err == nil {
		t.Error("marks that are not JSON lines: no error")
	}
}
