package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// progress shows a job while the CLI waits for it. On a terminal it is one
// line redrawn in place: a spinner, the status, a bar when the service
// reports a percentage, and the time waited. Elsewhere (a pipe, a file, a
// CI log) it writes a plain line each time what it shows changes.
type progress struct {
	w     io.Writer
	tty   bool
	start time.Time

	mu    sync.Mutex
	text  string  // status text, e.g. "processing" or "scene 2/4 processing"
	pct   float64 // 0–100, or -1 when unknown
	last  string  // the last plain line written
	frame int
	stop  chan struct{}
	done  chan struct{}
}

var spinnerFrames = []rune("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")

// progressClock is the clock of the elapsed time shown; tests stop it.
var progressClock = time.Now

// isTerminal reports whether w is a character device (a terminal) that is
// not declared dumb.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("TERM") == "dumb" {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

func newProgress(w io.Writer, label string) *progress { return startProgress(w, label, isTerminal(w)) }

func startProgress(w io.Writer, label string, tty bool) *progress {
	p := &progress{w: w, tty: tty, start: progressClock(), pct: -1, text: label}
	if p.tty {
		p.stop, p.done = make(chan struct{}), make(chan struct{})
		go p.spin()
	} else {
		p.plain()
	}
	return p
}

// Update sets what the line shows; pct < 0 means no percentage.
func (p *progress) Update(text string, pct float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.text, p.pct = text, min(pct, 100)
	if !p.tty {
		p.plain()
	}
}

// Done ends the display with a final line.
func (p *progress) Done(text string) {
	if p.tty {
		close(p.stop)
		<-p.done
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	line := fmt.Sprintf("%s (%s)", text, p.elapsed())
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s\n", line)
		return
	}
	if text != p.last { // the last update said it already
		fmt.Fprintln(p.w, line)
	}
}

// Elapsed is the time since the display started.
func (p *progress) Elapsed() time.Duration { return progressClock().Sub(p.start) }

func (p *progress) elapsed() string {
	return progressClock().Sub(p.start).Round(100 * time.Millisecond).String()
}

// plain writes the state as a line when it differs from the last one.
func (p *progress) plain() {
	line := p.text
	if p.pct >= 0 {
		line += fmt.Sprintf(" %3.0f%%", p.pct)
	}
	if line != p.last {
		p.last = line
		fmt.Fprintf(p.w, "%s (%s)\n", line, p.elapsed())
	}
}

func (p *progress) spin() {
	defer close(p.done)
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		p.draw()
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
	}
}

func (p *progress) draw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.frame++
	line := fmt.Sprintf("%c %s", spinnerFrames[p.frame%len(spinnerFrames)], p.text)
	if p.pct >= 0 {
		const width = 24
		filled := int(p.pct / 100 * width)
		line += fmt.Sprintf(" [%s%s] %3.0f%%", strings.Repeat("█", filled), strings.Repeat("░", width-filled), p.pct)
	}
	fmt.Fprintf(p.w, "\r\033[K%s  %s", line, p.elapsed())
}
