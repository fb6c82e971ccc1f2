package main

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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
