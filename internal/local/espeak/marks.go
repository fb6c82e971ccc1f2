package espeak

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mediagen-dev/mediagen/internal/core/longform"
)

// This file gives espeak-ng's speech the speech marks Amazon Polly gives
// its own (the deployed shape's Polly stand-in answers them): the speech is
// spoken a sentence at a time and joined, so each sentence's mark is where
// its own sound starts in the joined audio; a word's mark is where the
// sound of the sentence's words before it ends, spoken alone.

// soundLevel is the sample magnitude (of 32767) above which a 16-bit sample
// counts as sound: about -36 dBFS, well above espeak-ng's silence (zeros).
const soundLevel = 500

// pcm is a mono 16-bit WAV's format and samples.
type pcm struct {
	rate int
	data []byte
}

func (p pcm) samples() int { return len(p.data) / 2 }

func (p pcm) ms(samples int) int { return int(int64(samples) * 1000 / int64(p.rate)) }

func (p pcm) sample(i int) int {
	v := int(int16(binary.LittleEndian.Uint16(p.data[2*i:])))
	if v < 0 {
		return -v
	}
	return v
}

// soundStart is the first sample that sounds (samples() when none does).
func (p pcm) soundStart() int {
	for i := range p.samples() {
		if p.sample(i) > soundLevel {
			return i
		}
	}
	return p.samples()
}

// soundEnd is just past the last sample that sounds (0 when none does).
func (p pcm) soundEnd() int {
	for i := p.samples() - 1; i >= 0; i-- {
		if p.sample(i) > soundLevel {
			return i + 1
		}
	}
	return 0
}

// readPCM reads a RIFF WAV of mono 16-bit PCM, as espeak-ng writes.
func readPCM(path string) (pcm, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return pcm{}, err
	}
	if len(raw) < 12 || string(raw[:4]) != "RIFF" || string(raw[8:12]) != "WAVE" {
		return pcm{}, fmt.Errorf("%s is not a WAV file", path)
	}
	var out pcm
	for rest := raw[12:]; len(rest) >= 8; {
		id, size := string(rest[:4]), int(binary.LittleEndian.Uint32(rest[4:8]))
		body := rest[8:]
		if size > len(body) {
			size = len(body)
		}
		switch id {
		case "fmt ":
			if size < 16 || binary.LittleEndian.Uint16(body[0:]) != 1 || binary.LittleEndian.Uint16(body[2:]) != 1 || binary.LittleEndian.Uint16(body[14:]) != 16 {
				return pcm{}, fmt.Errorf("%s is not mono 16-bit PCM", path)
			}
			out.rate = int(binary.LittleEndian.Uint32(body[4:]))
		case "data":
			out.data = body[:size&^1]
		}
		rest = body[min(len(body), size+size&1):]
	}
	if out.rate <= 0 || out.data == nil {
		return pcm{}, fmt.Errorf("%s has no PCM data", path)
	}
	return out, nil
}

// writeWAV writes p as a RIFF WAV file.
func writeWAV(path string, p pcm) error {
	var b bytes.Buffer
	le := func(v any) { _ = binary.Write(&b, binary.LittleEndian, v) }
	b.WriteString("RIFF")
	le(uint32(36 + len(p.data)))
	b.WriteString("WAVEfmt ")
	le(uint32(16))
	le(uint16(1))
	le(uint16(1))
	le(uint32(p.rate))
	le(uint32(p.rate * 2))
	le(uint16(2))
	le(uint16(16))
	b.WriteString("data")
	le(uint32(len(p.data)))
	b.Write(p.data)
	return os.WriteFile(path, b.Bytes(), 0o600)
}

// Sentences are the byte spans [start, end) of text's sentences: each
// ends after a run of sentence-final punctuation (. ! ? … and the
// Japanese and Devanagari full stops) that a space or the text's end
// follows; spans are trimmed of spaces.
func Sentences(text string) [][2]int {
	var out [][2]int
	start := -1
	for i, r := range text {
		if start < 0 {
			if !unicode.IsSpace(r) {
				start = i
			}
			continue
		}
		end := i + utf8.RuneLen(r)
		if !strings.ContainsRune(".!?…。！？।॥", r) {
			continue
		}
		next, _ := utf8.DecodeRuneInString(text[end:])
		if end == len(text) || unicode.IsSpace(next) || strings.ContainsRune("。！？।॥", r) && !strings.ContainsRune(".!?…。！？।॥", next) {
			out = append(out, [2]int{start, end})
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, [2]int{start, len(strings.TrimRightFunc(text, unicode.IsSpace))})
	}
	return out
}

// Words are the byte spans of the words of text[from:to]: runs between
// spaces, without the punctuation at their edges.
func Words(text string, from, to int) [][2]int {
	var out [][2]int
	edge := func(r rune) bool { return unicode.IsPunct(r) || unicode.IsSymbol(r) }
	for i := from; i < to; {
		r, size := utf8.DecodeRuneInString(text[i:])
		if unicode.IsSpace(r) {
			i += size
			continue
		}
		j := i
		for j < to {
			r, size := utf8.DecodeRuneInString(text[j:])
			if unicode.IsSpace(r) {
				break
			}
			j += size
		}
		word := text[i:j]
		trimmed := strings.TrimLeftFunc(word, edge)
		s := i + len(word) - len(trimmed)
		e := s + len(strings.TrimRightFunc(trimmed, edge))
		if e > s {
			out = append(out, [2]int{s, e})
		}
		i = j
	}
	return out
}

// speakPCM speaks text into a WAV under dir and reads it.
func (n Narrator) speakPCM(ctx context.Context, lang longform.Language, text, dir string) (pcm, error) {
	path, _, err := n.speakOnce(ctx, lang, text, dir)
	if err != nil {
		return pcm{}, err
	}
	defer os.Remove(path)
	return readPCM(path)
}

// SpeakMarked speaks text a sentence at a time into one WAV under dir and
// answers it with speech marks of the kinds asked (longform.MarkSentence,
// longform.MarkWord), each at its time in that WAV, as Polly orders
// them: a sentence's mark, then its words'.
func (n Narrator) SpeakMarked(ctx context.Context, lang longform.Language, text, dir string, kinds ...string) (string, []longform.SpeechMark, error) {
	sentences := Sentences(text)
	if len(sentences) == 0 {
		return "", nil, errors.New("espeak-ng: no text to speak")
	}
	want := map[string]bool{}
	for _, k := range kinds {
		want[k] = true
	}
	var joined pcm
	marks := []longform.SpeechMark{}
	for _, span := range sentences {
		sentence := text[span[0]:span[1]]
		p, err := n.speakPCM(ctx, lang, sentence, dir)
		if err != nil {
			return "", nil, err
		}
		if joined.rate == 0 {
			joined.rate = p.rate
		}
		if p.rate != joined.rate {
			return "", nil, fmt.Errorf("espeak-ng spoke at %d Hz and %d Hz", joined.rate, p.rate)
		}
		offset := joined.samples()
		at := joined.ms(offset + p.soundStart())
		if want[longform.MarkSentence] {
			marks = append(marks, longform.SpeechMark{Time: at, Type: longform.MarkSentence, Start: span[0], End: span[1], Value: sentence})
		}
		if want[longform.MarkWord] {
			last := joined.ms(offset + p.samples())
			words := Words(text, span[0], span[1])
			for j, w := range words {
				if j > 0 {
					before, err := n.speakPCM(ctx, lang, text[span[0]:words[j-1][1]], dir)
					if err != nil {
						return "", nil, err
					}
					at = min(max(at, joined.ms(offset+before.soundEnd())), last)
				}
				marks = append(marks, longform.SpeechMark{Time: at, Type: longform.MarkWord, Start: w[0], End: w[1], Value: text[w[0]:w[1]]})
			}
		}
		joined.data = append(joined.data, p.data...)
	}
	f, err := os.CreateTemp(dir, "speech-*.wav")
	if err != nil {
		return "", nil, fmt.Errorf("espeak-ng: %w", err)
	}
	f.Close()
	if err := writeWAV(f.Name(), joined); err != nil {
		return "", nil, fmt.Errorf("espeak-ng: %w", err)
	}
	return filepath.Clean(f.Name()), marks, nil
}
