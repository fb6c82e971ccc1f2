package longform

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
)

// Speech mark types (Amazon Polly's SpeechMarkTypes) the narration asks
// for: where each sentence and each word of the speech starts.
const (
	MarkSentence = "sentence"
	MarkWord     = "word"
)

// SpeechMark is one of Amazon Polly's speech marks: Time is in
// milliseconds from the start of the audio stream; Start and End are byte
// offsets (not characters) of Value in the input text.
type SpeechMark struct {
	Time  int    `json:"time"`
	Type  string `json:"type"`
	Start int    `json:"start"`
	End   int    `json:"end"`
	Value string `json:"value"`
}

// Marker is a Narrator that also tells where each sentence and word of
// the speech it makes for the same language and text starts (Polly's
// speech marks). Captions are timed from them; a narrator that is not a
// Marker has its captions timed from the sound of its speech.
type Marker interface {
	SpeechMarks(ctx context.Context, lang Language, text string) ([]SpeechMark, error)
}

// ParseSpeechMarks reads speech marks as Polly writes them: one JSON
// object a line.
func ParseSpeechMarks(r io.Reader) ([]SpeechMark, error) {
	var out []SpeechMark
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var m SpeechMark
		if err := json.Unmarshal(line, &m); err != nil {
			return nil, fmt.Errorf("speech mark %q: %w", line, err)
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("speech marks: %w", err)
	}
	return out, nil
}

// WriteSpeechMarks writes marks as Polly does: one JSON object a line.
func WriteSpeechMarks(w io.Writer, marks []SpeechMark) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, m := range marks {
		if err := enc.Encode(m); err != nil {
			return fmt.Errorf("speech marks: %w", err)
		}
	}
	return nil
}

// sentenceMarks are the sentence marks of marks, in time order.
func sentenceMarks(marks []SpeechMark) []SpeechMark {
	var out []SpeechMark
	for _, m := range marks {
		if m.Type == MarkSentence && m.Value != "" {
			if len(out) > 0 && m.Time < out[len(out)-1].Time {
				m.Time = out[len(out)-1].Time
			}
			out = append(out, m)
		}
	}
	return out
}
