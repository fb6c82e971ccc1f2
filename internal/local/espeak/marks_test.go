package espeak

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/mediagen-dev/mediagen/internal/adapters/ffmpeg"
	"github.com/mediagen-dev/mediagen/internal/core/longform"
)

func TestSentencesAndWordsAreByteSpansOfTheText(t *testing.T) {
	tests := []struct {
		text      string
		sentences []string
		words     []string
	}{
		{"Mary had a little lamb.", []string{"Mary had a little lamb."}, []string{"Mary", "had", "a", "little", "lamb"}},
		{" The sea comes in.  Gulls call! Then, at 3.5 knots… ", []string{"The sea comes in.", "Gulls call!", "Then, at 3.5 knots…"},
			[]string{"The", "sea", "comes", "in", "Gulls", "call", "Then", "at", "3.5", "knots"}},
		{"うみ。そら、くも。", []string{"うみ。", "そら、くも。"}, []string{"うみ", "そら、くも"}},
		{"भोर में समुद्र। शाम", []string{"भोर में समुद्र।", "शाम"}, []string{"भोर", "में", "समुद्र", "शाम"}},
	}
	for _, tt := range tests {
		var sentences, words []string
		for _, s := range Sentences(tt.text) {
			sentences = append(sentences, tt.text[s[0]:s[1]])
			for _, w := range Words(tt.text, s[0], s[1]) {
				words = append(words, tt.text[w[0]:w[1]])
			}
		}
		if !slices.Equal(sentences, tt.sentences) || !slices.Equal(words, tt.words) {
			t.Errorf("%q: sentences %q words %q; want %q and %q", tt.text, sentences, words, tt.sentences, tt.words)
		}
	}
}

// The marks are where the speech is: each sentence's mark is where sound
// starts after a pause in the WAV (measured by ffmpeg's silencedetect), its
// words' marks follow in order within the sentence, and every mark's value
// is the text between its byte offsets, as Polly's are.
func TestSpeakMarkedTimesEachSentenceWhereItsSoundStarts(t *testing.T) {
	n, ff := tools(t)
	ctx := context.Background()
	lang, _ := longform.LookupLanguage("en")
	text := "The sea comes in. Gulls circle over the old pier, calling in the wind."
	path, marks, err := n.SpeakMarked(ctx, lang, text, t.TempDir(), longform.MarkSentence, longform.MarkWord)
	if err != nil {
		t.Fatal(err)
	}
	info, err := ff.Probe(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	spans, err := ff.SoundSpans(ctx, path, info.Duration)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("marks %+v; sound %+v", marks, spans)
	var sentences, words int
	last := -1
	for _, m := range marks {
		if text[m.Start:m.End] != m.Value || m.Time < last || float64(m.Time)/1000 > info.Duration {
			t.Errorf("mark %+v: want its value at its byte offsets, in time order, within the %.2f s of speech", m, info.Duration)
		}
		last = m.Time
		switch m.Type {
		case longform.MarkSentence:
			sentences++
			near := math.Inf(1)
			for _, s := range spans {
				near = math.Min(near, math.Abs(s.Start-float64(m.Time)/1000))
			}
			if near > 0.15 {
				t.Errorf("sentence %q marked at %d ms; the sound spans %+v start no nearer than %.2f s", m.Value, m.Time, spans, near)
			}
		case longform.MarkWord:
			words++
		}
	}
	if sentences != 2 || words != 14 {
		t.Errorf("%d sentence and %d word marks, want 2 and 14: %+v", sentences, words, marks)
	}
	whole := onceSeconds(t, n, ff, lang, text)
	if math.Abs(info.Duration-whole) > 0.2*whole {
		t.Errorf("spoken a sentence at a time: %.2f s; the whole text at once: %.2f s", info.Duration, whole)
	}
}

// onceSeconds is the length of text spoken by espeak-ng as one utterance.
func onceSeconds(t *testing.T, n Narrator, ff ffmpeg.Runner, lang longform.Language, text string) float64 {
	t.Helper()
	ctx := context.Background()
	path, _, err := n.speakOnce(ctx, lang, text, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	info, err := ff.Probe(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Duration
}

// The local narrator is a longform.Marker, as Polly is: its speech (Speak)
// is heard where its sentence marks (SpeechMarks) say, one mark a
// sentence, so the local captions are one cue a sentence as in AWS. The
// speech is joined a sentence at a time only where it is silent (no click
// at a join) and lasts as the text spoken at once does.
func TestTheNarratorsSentenceMarksAreWhereItsSpeechIsHeard(t *testing.T) {
	n, ff := tools(t)
	ctx := context.Background()
	tests := []struct {
		lang, text string
		sentences  int
	}{
		{"en", "The sea comes in. Gulls circle over the old pier! Who calls them home at night?", 3},
		{"es", "El mar llega despacio. Las gaviotas vuelan sobre el muelle.", 2},
		{"ja", "うみが しずかに ひかる。かもめが とんで いる。", 2},
		{"en", "One sentence without a full stop", 1},
	}
	for _, tt := range tests {
		t.Run(tt.lang+" "+tt.text[:10], func(t *testing.T) {
			lang, _ := longform.LookupLanguage(tt.lang)
			var m longform.Marker = n
			marks, err := m.SpeechMarks(ctx, lang, tt.text)
			if err != nil {
				t.Fatal(err)
			}
			path, ctype, err := n.Speak(ctx, lang, tt.text, t.TempDir())
			if err != nil || ctype != "audio/wav" {
				t.Fatalf("speak: %q, %v", ctype, err)
			}
			info, err := ff.Probe(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			spans, err := ff.SoundSpans(ctx, path, info.Duration)
			if err != nil {
				t.Fatal(err)
			}
			if len(marks) != tt.sentences {
				t.Fatalf("%d marks, want one per sentence (%d): %+v", len(marks), tt.sentences, marks)
			}
			for _, mk := range marks {
				if mk.Type != longform.MarkSentence || tt.text[mk.Start:mk.End] != mk.Value {
					t.Errorf("mark %+v: want a sentence mark with its value at its byte offsets", mk)
				}
				near := math.Inf(1)
				for _, s := range spans {
					near = math.Min(near, math.Abs(s.Start-float64(mk.Time)/1000))
				}
				if near > 0.15 {
					t.Errorf("sentence %q marked at %d ms; the speech's sound spans %+v start no nearer than %.2f s", mk.Value, mk.Time, spans, near)
				}
			}
			if whole := onceSeconds(t, n, ff, lang, tt.text); math.Abs(info.Duration-whole) > 0.05*whole+0.05 {
				t.Errorf("speech lasts %.2f s; the text spoken at once %.2f s", info.Duration, whole)
			}
			// The joins: each sentence's last 5 ms and the next one's first
			// sample are silence, so no step (click) is heard where they meet.
			joined, err := readPCM(path)
			if err != nil {
				t.Fatal(err)
			}
			at := 0
			for _, span := range Sentences(tt.text)[:tt.sentences-1] {
				p, err := n.speakPCM(ctx, lang, tt.text[span[0]:span[1]], t.TempDir())
				if err != nil {
					t.Fatal(err)
				}
				at += p.samples()
				win := joined.rate / 200
				for i := max(0, at-win); i <= min(joined.samples()-1, at); i++ {
					if joined.sample(i) > soundLevel {
						t.Errorf("sample %d, %d ms from the join at %d ms, is %d: the join is not silent", i, joined.ms(i)-joined.ms(at), joined.ms(at), joined.sample(i))
						break
					}
				}
			}
		})
	}
}
