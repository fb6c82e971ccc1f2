// Package espeak speaks scene scripts with espeak-ng, the local stand-in for
// Amazon Polly.
package espeak

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/longform"
)

// Narrator runs espeak-ng with each language's voice into a WAV file.
type Narrator struct {
	// Bin defaults to espeak-ng from PATH.
	Bin     string
	Timeout time.Duration
}

var _ longform.Marker = Narrator{}

var _ longform.Narrator = Narrator{}

// Available reports a missing espeak-ng with the fix.
func (n Narrator) Available() error {
	if _, err := exec.LookPath(n.bin()); err != nil {
		return fmt.Errorf("espeak-ng is not installed (%w): apt-get install espeak-ng", err)
	}
	return nil
}

func (n Narrator) bin() string {
	if n.Bin != "" {
		return n.Bin
	}
	return "espeak-ng"
}

// Speak writes the speech to a WAV file under dir, spoken a sentence at
// a time and joined (as SpeakMarked speaks it), so its SpeechMarks are
// where each sentence is heard in it. espeak-ng starts and ends each
// utterance in silence, with the pause it puts between the sentences of
// one utterance, so the joins are silent and the length the same.
func (n Narrator) Speak(ctx context.Context, lang longform.Language, text, dir string) (string, string, error) {
	path, _, err := n.SpeakMarked(ctx, lang, text, dir)
	if err != nil {
		return "", "", err
	}
	return path, "audio/wav", nil
}

// SpeechMarks implements longform.Marker: the sentence marks of the
// speech Speak makes of text (the captions are timed from them, one cue
// a sentence, as from Polly's). Word marks are not given: each costs the
// sentence's words before it spoken again, and captions use sentences.
func (n Narrator) SpeechMarks(ctx context.Context, lang longform.Language, text string) ([]longform.SpeechMark, error) {
	dir, err := os.MkdirTemp("", "espeak-marks-")
	if err != nil {
		return nil, fmt.Errorf("espeak-ng: %w", err)
	}
	defer os.RemoveAll(dir)
	_, marks, err := n.SpeakMarked(ctx, lang, text, dir, longform.MarkSentence)
	return marks, err
}

// speakOnce writes the speech of text, spoken as one utterance, to a WAV
// file under dir.
func (n Narrator) speakOnce(ctx context.Context, lang longform.Language, text, dir string) (string, string, error) {
	timeout := n.Timeout
	if timeout == 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	f, err := os.CreateTemp(dir, "speech-*.wav")
	if err != nil {
		return "", "", fmt.Errorf("espeak-ng: %w", err)
	}
	f.Close()
	// The text goes on stdin, so no script is ever read as an option.
	cmd := exec.CommandContext(ctx, n.bin(), "-v", lang.EspeakVoice, "-s", "165", "-w", f.Name(), "--stdin")
	cmd.Stdin = strings.NewReader(text)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", "", fmt.Errorf("espeak-ng -v %s: %w: %s", lang.EspeakVoice, err, strings.TrimSpace(stderr.String()))
	}
	return f.Name(), "audio/wav", nil
}
