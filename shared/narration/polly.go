// Package narration speaks scene scripts with Amazon Polly in production.
package narration

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/polly"
	"github.com/aws/aws-sdk-go-v2/service/polly/types"

	"github.com/mediagen-dev/mediagen/shared/longstory"
)

// PollyAPI is the part of the Polly client the narrator uses.
type PollyAPI interface {
	SynthesizeSpeech(ctx context.Context, in *polly.SynthesizeSpeechInput, opts ...func(*polly.Options)) (*polly.SynthesizeSpeechOutput, error)
}

// Polly speaks with each language's Polly voice (neural engine) into mp3.
type Polly struct {
	Client PollyAPI
}

var _ longstory.Narrator = Polly{}

// Speak writes the speech to an mp3 file under dir.
func (p Polly) Speak(ctx context.Context, lang longstory.Language, text, dir string) (string, string, error) {
	out, err := p.Client.SynthesizeSpeech(ctx, &polly.SynthesizeSpeechInput{
		Text: aws.String(text), VoiceId: types.VoiceId(lang.PollyVoice), OutputFormat: types.OutputFormatMp3,
		Engine: types.EngineNeural, SampleRate: aws.String("24000"),
	})
	if err != nil {
		return "", "", fmt.Errorf("polly %s: %w", lang.PollyVoice, err)
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
