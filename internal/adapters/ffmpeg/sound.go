package ffmpeg

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Span is a stretch of an audio file, in seconds from its start.
type Span struct {
	Start, End float64
}

// Silence thresholds of SoundSpans: quieter than silenceDB for at least
// minSilenceSeconds is a pause. Speech falls below -40 dB only between
// words and phrases; a pause of 0.15 s is shorter than a sentence break.
const (
	silenceDB         = -40
	minSilenceSeconds = 0.15
)

// SoundSpans measures where the audio of the file at path (duration
// seconds long) is not silent, with ffmpeg's silencedetect: the stretches
// between its pauses, in order. A file silent throughout has none. It is
// the timing of the audio itself, whatever made it.
func (r Runner) SoundSpans(ctx context.Context, path string, duration float64) ([]Span, error) {
	var out bytes.Buffer
	filter := fmt.Sprintf("silencedetect=n=%ddB:d=%g,ametadata=mode=print:file=%s", silenceDB, minSilenceSeconds, EscapeFilterValue("pipe:1"))
	args := ffmpegArgs([]string{"-i", path, "-vn", "-af", filter, "-f", "null", "-"})
	if err := r.run(ctx, r.ffmpegPath(), args, &out); err != nil {
		return nil, fmt.Errorf("sound of %s: %w", path, err)
	}
	return soundSpans(out.Bytes(), duration), nil
}

// soundSpans turns silencedetect's metadata lines into the spans between
// the silences of a file of duration seconds.
func soundSpans(meta []byte, duration float64) []Span {
	var spans []Span
	start := 0.0
	sounding := true
	sc := bufio.NewScanner(bytes.NewReader(meta))
	for sc.Scan() {
		key, val, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if !ok {
			continue
		}
		t, err := strconv.ParseFloat(val, 64)
		if err != nil || math.IsNaN(t) {
			continue
		}
		t = math.Max(t, 0)
		switch key {
		case "lavfi.silence_start":
			if sounding && t > start {
				spans = append(spans, Span{Start: start, End: math.Min(t, duration)})
			}
			sounding = false
		case "lavfi.silence_end":
			start, sounding = t, true
		}
	}
	if sounding && duration > start {
		spans = append(spans, Span{Start: start, End: duration})
	}
	return spans
}
