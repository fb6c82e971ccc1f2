package main

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/client"
)

// stopClock makes the elapsed time shown 1.5 s.
func stopClock(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var calls atomic.Int32 // the spinner's goroutine reads the clock too
	progressClock = func() time.Time {
		if calls.Add(1) == 1 {
			return start
		}
		return start.Add(1500 * time.Millisecond)
	}
	t.Cleanup(func() { progressClock = time.Now })
}

// lockedBuffer is written by the spinner's goroutine and read by the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestProgressOnATerminalRedrawsOneLineWithABar(t *testing.T) {
	stopClock(t)
	var out lockedBuffer
	p := startProgress(&out, "processing", true)
	p.Update("scene 1 ✓ · scene 2 processing", 50)
	p.draw()
	p.Done("completed")
	s := out.String()
	if !strings.Contains(s, "\r\033[K") || !strings.Contains(s, "scene 1 ✓ · scene 2 processing [████████████░░░░░░░░░░░░]  50%") {
		t.Errorf("terminal output %q, want a line redrawn in place with a half-full bar", s)
	}
	if !strings.HasSuffix(s, "\r\033[Kcompleted (1.5s)\n") {
		t.Errorf("terminal output ends %q, want the final line", s[max(0, len(s)-40):])
	}
}

func TestProgressElsewhereWritesALinePerChange(t *testing.T) {
	stopClock(t)
	var out lockedBuffer
	p := startProgress(&out, "processing", false)
	p.Update("processing", -1)
	p.Update("processing", -1)
	p.Update("processing", 40)
	p.Update("completed", -1)
	p.Done("completed")
	want := "processing (1.5s)\nprocessing  40% (1.5s)\ncompleted (1.5s)\n"
	if out.String() != want {
		t.Errorf("plain output %q, want %q", out.String(), want)
	}
}

// While a generation runs, its line says its place in line at the
// provider, else the time left by its variant's typical duration.
func TestGenerationLineSaysTheTimeLeft(t *testing.T) {
	processing := client.GenerationStatus{Status: "processing", Progress: 5}
	queued := processing
	queued.QueuePosition = 3
	tests := []struct {
		name             string
		st               client.GenerationStatus
		elapsed, typical time.Duration
		want             string
	}{
		{"just started", processing, 0, time.Minute, "processing, about 1m0s left"},
		{"time left rounded up", processing, 12300 * time.Millisecond, time.Minute, "processing, about 48s left"},
		{"under a second left", processing, 59900 * time.Millisecond, time.Minute, "processing, about 1s left"},
		{"past the typical duration", processing, 75 * time.Second, time.Minute, "processing, longer than the usual 1m0s"},
		{"queued at the provider", queued, 5 * time.Second, time.Minute, "processing, queued at the provider (position 3)"},
		{"typical duration unknown", processing, 5 * time.Second, 0, "processing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := generationLine(tt.st, tt.elapsed, tt.typical); got != tt.want {
				t.Errorf("generationLine(%s waited, typical %s) = %q, want %q", tt.elapsed, tt.typical, got, tt.want)
			}
		})
	}
}
