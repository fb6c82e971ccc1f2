package narration

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/polly"
	"github.com/aws/aws-sdk-go-v2/service/polly/types"

	"github.com/mediagen-dev/mediagen/shared/longstory"
)

// recordingPolly stands in for the Polly API: a thin wire call no local
// server speaks.
type recordingPolly struct{ got *polly.SynthesizeSpeechInput }

func (r *recordingPolly) SynthesizeSpeech(_ context.Context, in *polly.SynthesizeSpeechInput, _ ...func(*polly.Options)) (*polly.SynthesizeSpeechOutput, error) {
	r.got = in
	return &polly.SynthesizeSpeechOutput{AudioStream: io.NopCloser(strings.NewReader("ID3-mp3-bytes"))}, nil
}

func TestPollySpeaksWithTheLanguagesVoiceIntoAnMP3File(t *testing.T) {
	for _, lang := range longstory.Languages {
		rec := &recordingPolly{}
		path, ctype, err := Polly{Client: rec}.Speak(context.Background(), lang, "Hola", t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if rec.got.VoiceId != types.VoiceId(lang.PollyVoice) || rec.got.OutputFormat != types.OutputFormatMp3 || aws.ToString(rec.got.Text) != "Hola" {
			t.Errorf("%s: asked Polly for %+v", lang.Code, rec.got)
		}
		raw, _ := os.ReadFile(path)
		if ctype != "audio/mpeg" || !strings.HasSuffix(path, ".mp3") || string(raw) != "ID3-mp3-bytes" {
			t.Errorf("%s: wrote %s (%s) with %q", lang.Code, path, ctype, raw)
		}
	}
}

func TestEveryLanguageHasAPollyVoiceThatExists(t *testing.T) {
	known := map[string]bool{}
	for _, v := range types.VoiceId("").Values() {
		known[string(v)] = true
	}
	for _, lang := range longstory.Languages {
		if !known[lang.PollyVoice] {
			t.Errorf("%s: Polly has no voice %q", lang.Code, lang.PollyVoice)
		}
	}
}
