// Package narration speaks scene scripts with Amazon Polly in production.
package narration

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/polly"
	"github.com/aws/aws-sdk-go-v2/service/polly/types"

	"github.com/mediagen-dev/mediagen/internal/core/longform"
)

// PollyAPI is the part of the Polly client the narrator uses.
type PollyAPI interface {
	SynthesizeSpeech(ctx context.Context, in *polly.SynthesizeSpeechInput, opts ...func(*polly.Options)) (*polly.SynthesizeSpeechOutput, error)
}

// Polly speaks with each language's Polly voice (neural engine) into mp3.
type Polly struct {
	Client PollyAPI
}

var (
	_ longform.Narrator = Polly{}
	_ longform.Marker   = Polly{}
)

// errUnsupportedVoice is a language whose Polly voice or language code the
// SDK does not know: asking Polly would fail, or worse, speak another
// language.
var errUnsupportedVoice = errors.New("polly: unsupported voice or language")

// speechInput is the SynthesizeSpeech request for text in lang: the
// language's neural voice, with its language code always set, so that a
// bilingual voice (Kajal: en-IN by default, also hi-IN) speaks the
// narration's language rather than its default one.
func speechInput(lang longform.Language, text string) (*polly.SynthesizeSpeechInput, error) {
	voice, code := types.VoiceId(lang.PollyVoice), types.LanguageCode(lang.PollyLanguage)
	if !slices.Contains(voice.Values(), voice) {
		return nil, fmt.Errorf("%w: voice %q for %s", errUnsupportedVoice, lang.PollyVoice, lang.Code)
	}
	if !slices.Contains(code.Values(), code) {
		return nil, fmt.Errorf("%w: language code %q for %s", errUnsupportedVoice, lang.PollyLanguage, lang.Code)
	}
	return &polly.SynthesizeSpeechInput{
		Text: aws.String(text), VoiceId: voice, LanguageCode: code, OutputFormat: types.OutputFormatMp3,
		Engine: types.EngineNeural, SampleRate: aws.String("24000"),
	}, nil
}

// Speak writes the speech to an mp3 file under dir.
func (p Polly) Speak(ctx context.Context, lang longform.Language, text, dir string) (string, string, error) {
	in, err := speechInput(lang, text)
	if err != nil {
		return "", "", err
	}
	out, err := p.Client.SynthesizeSpeech(ctx, in)
	if err != nil {
		return "", "", fmt.Errorf("polly %s (%s): %w", lang.PollyVoice, lang.PollyLanguage, err)
	}
	defer out.AudioStream.Close()
	f, err := os.CreateTemp(dir, "speech-*.mp3")
	if err != nil {
		return "", "", fmt.Errorf("polly: %w", err)
	}
	defer f.Close()
	if _, err := io.Copy(f, out.AudioStream); err != nil {
		return "", "", fmt.Errorf("polly: save speech: %w", err)
	}
	return filepath.Clean(f.Name()), "audio/mpeg", nil
}

// MarksInput is the SynthesizeSpeech request for the sentence and word
// speech marks of the speech speechInput asks for: the same text, voice,
// language code and engine, as json (speech marks take no sample rate).
func MarksInput(lang longform.Language, text string) (*polly.SynthesizeSpeechInput, error) {
	in, err := speechInput(lang, text)
	if err != nil {
		return nil, err
	}
	in.OutputFormat, in.SampleRate = types.OutputFormatJson, nil
	in.SpeechMarkTypes = []types.SpeechMarkType{types.SpeechMarkTypeSentence, types.SpeechMarkTypeWord}
	return in, nil
}

// SpeechMarks asks Polly where each sentence and word of the speech of
// text starts (its line-delimited JSON speech marks).
func (p Polly) SpeechMarks(ctx context.Context, lang longform.Language, text string) ([]longform.SpeechMark, error) {
	in, err := MarksInput(lang, text)
	if err != nil {
		return nil, err
	}
	out, err := p.Client.SynthesizeSpeech(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("polly speech marks %s (%s): %w", lang.PollyVoice, lang.PollyLanguage, err)
	}
	defer out.AudioStream.Close()
	marks, err := longform.ParseSpeechMarks(out.AudioStream)
	if err != nil {
		return nil, fmt.Errorf("polly: %w", err)
	}
	return marks, nil
}
