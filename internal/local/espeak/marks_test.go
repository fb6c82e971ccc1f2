package espeak

import (
	"context"
	"math"
	"slices"
	"testing"

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
	whole := seconds(t, n, ff, lang, text)
	if math.Abs(info.Duration-whole) > 0.2*whole {
		t.Errorf("spoken a sentence at a time: %.2f s; the whole text at once: %.2f s", info.Duration, whole)
	}
}
