package ffmpeg

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
)

func TestSoundSpansFindTheToneBetweenSilences(t *testing.T) {
	r := requireFFmpeg(t)
	// Each layout is a list of (seconds, tone?) pieces; the spans are where
	// the tone plays.
	type piece struct {
		seconds float64
		tone    bool
	}
	for name, layout := range map[string][]piece{
		"tone after a pause":  {{0.6, false}, {1, true}, {0.4, false}},
		"two lines":           {{0.3, false}, {0.8, true}, {0.5, false}, {0.7, true}, {0.3, false}},
		"tone from the start": {{1, true}, {0.5, false}},
		"tone to the end":     {{0.5, false}, {1, true}},
		"silence":             {{1.5, false}},
	} {
		t.Run(name, func(t *testing.T) {
			var graph []string
			var labels strings.Builder
			var want []Span
			at := 0.0
			for i, p := range layout {
				src := fmt.Sprintf("anullsrc=r=22050:cl=mono,atrim=duration=%g", p.seconds)
				if p.tone {
					src = fmt.Sprintf("sine=frequency=440:sample_rate=22050:duration=%g", p.seconds)
					want = append(want, Span{Start: at, End: at + p.seconds})
				}
				graph = append(graph, fmt.Sprintf("%s[p%d]", src, i))
				fmt.Fprintf(&labels, "[p%d]", i)
				at += p.seconds
			}
			graph = append(graph, fmt.Sprintf("%sconcat=n=%d:v=0:a=1[a]", labels.String(), len(layout)))
			path := filepath.Join(t.TempDir(), "speech.wav")
			if err := r.Run(context.Background(), "-filter_complex", strings.Join(graph, ";"), "-map", "[a]", path); err != nil {
				t.Fatal(err)
			}
			got, err := r.SoundSpans(context.Background(), path, at)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("spans %v, want %v", got, want)
			}
			for i := range want {
				if math.Abs(got[i].Start-want[i].Start) > 0.03 || math.Abs(got[i].End-want[i].End) > 0.03 {
					t.Errorf("span %d is %v, want %v (within 30 ms)", i, got[i], want[i])
				}
			}
		})
	}
}
