// Package ffmpeg runs the ffmpeg and ffprobe command-line tools: bounded by
// a timeout, with the tail of stderr in every error, plus the few helpers the
// service needs around them (probing a file, sampling a pixel, drawing text
// safely).
//
// The binaries come from PATH unless FFMPEG_PATH / FFPROBE_PATH (or the
// Runner's fields) say otherwise. On Debian: apt-get install ffmpeg
// fonts-dejavu-core.
package ffmpeg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
	"unicode/utf8"
)

// defaultTimeout bounds one ffmpeg or ffprobe run when Runner.Timeout is zero.
const defaultTimeout = 2 * time.Minute

// DefaultFontFile is the font drawtext uses, from Debian's fonts-dejavu-core.
// Filters always name a font file: fontconfig lookup differs from machine to
// machine (and is absent in Lambda).
const DefaultFontFile = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"

// stderrTailLines is how much of ffmpeg's stderr an error carries.
const stderrTailLines = 20

// Runner runs ffmpeg and ffprobe. The zero value is ready to use.
type Runner struct {
	// FFmpeg and FFprobe are the binaries; empty means $FFMPEG_PATH /
	// $FFPROBE_PATH, else "ffmpeg" / "ffprobe" from PATH.
	FFmpeg, FFprobe string
	// Timeout bounds each run; zero means defaultTimeout.
	Timeout time.Duration
}

func (r Runner) ffmpegPath() string  { return binary(r.FFmpeg, "FFMPEG_PATH", "ffmpeg") }
func (r Runner) ffprobePath() string { return binary(r.FFprobe, "FFPROBE_PATH", "ffprobe") }

func binary(field, env, name string) string {
	if field != "" {
		return field
	}
	if v := os.Getenv(env); v != "" {
		return v
	}
	return name
}

func (r Runner) timeout() time.Duration {
	if r.Timeout > 0 {
		return r.Timeout
	}
	return defaultTimeout
}

// Available reports whether both binaries can be found, with the fix in the
// error when they cannot.
func (r Runner) Available() error {
	var errs []error
	for _, b := range []struct{ path, env string }{
		{r.ffmpegPath(), "FFMPEG_PATH"},
		{r.ffprobePath(), "FFPROBE_PATH"},
	} {
		if _, err := exec.LookPath(b.path); err != nil {
			errs = append(errs, fmt.Errorf("%s not found (install it with `apt-get install ffmpeg`, or set %s): %w", b.path, b.env, err))
		}
	}
	return errors.Join(errs...)
}

// Error is a failed ffmpeg or ffprobe run.
type Error struct {
	// Program is the binary that ran.
	Program string
	// Args are the arguments it was given.
	Args []string
	// Stderr is the last lines ffmpeg wrote to stderr.
	Stderr string
	// Err is the cause: an *exec.ExitError, a start failure, or a context
	// error (context.DeadlineExceeded when the timeout cut the run).
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s", e.Program)
	if len(e.Args) > 0 {
		// The last argument is usually the output (or the probed file): enough
		// to tell runs apart without dumping a filter graph.
		fmt.Fprintf(&b, " (… %s)", clip(e.Args[len(e.Args)-1], 120))
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	if e.Stderr != "" {
		fmt.Fprintf(&b, "\nstderr:\n%s", e.Stderr)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Run runs ffmpeg with args, after "-hide_banner -loglevel error -nostdin -y",
// each input (-i) bounded by inputProtocols and inputFormats.
func (r Runner) Run(ctx context.Context, args ...string) error {
	return r.run(ctx, r.ffmpegPath(), ffmpegArgs(args), nil)
}

// inputProtocols are the only protocols an input may open, itself or
// through what it names: the files of the work directory and pipes, never
// the network (http, tcp, rtmp, ...), nor data: URIs.
const inputProtocols = "file,pipe"

// inputFormats are the only demuxers an input may be read with, itself or
// through what it names (a concat list's files): the media the service
// reads (provider clips and images, narration, its own concat lists and
// lavfi sources). Never a playlist (hls, dash) that names other files or
// URLs, nor a demuxer that renders a text file (tty) into frames: a
// provider's "mp4" is whatever bytes it sent, and ffmpeg picks the demuxer
// from the content.
const inputFormats = "concat,lavfi,mov,matroska,mp3,wav,aac,image2,png_pipe,jpeg_pipe,webp_pipe,gif"

// inputBounds are the options that bound one input.
func inputBounds() []string {
	return []string{"-protocol_whitelist", inputProtocols, "-format_whitelist", inputFormats}
}

func ffmpegArgs(args []string) []string {
	out := []string{"-hide_banner", "-loglevel", "error", "-nostdin", "-y"}
	for _, a := range args {
		// Input options apply to the next -i only: each input gets its own.
		if a == "-i" {
			out = append(out, inputBounds()...)
		}
		out = append(out, a)
	}
	return out
}

// run executes one program bounded by the runner's timeout, writing its
// stdout to stdout (if not nil).
func (r Runner) run(ctx context.Context, program string, args []string, stdout *bytes.Buffer) error {
	timeout := r.timeout()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	cmd := exec.CommandContext(ctx, program, args...)
	var stderr tailBuffer
	cmd.Stderr = &stderr
	if stdout != nil {
		cmd.Stdout = stdout
	}
	// After a kill, do not wait forever for pipes held open by anything else.
	cmd.WaitDelay = 5 * time.Second

	err := cmd.Run()
	if err == nil {
		return nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		if errors.Is(ctxErr, context.DeadlineExceeded) {
			err = fmt.Errorf("cut after %s: %w", timeout, ctxErr)
		} else {
			err = fmt.Errorf("stopped: %w", ctxErr)
		}
	}
	return &Error{Program: program, Args: args, Stderr: stderr.lastLines(stderrTailLines), Err: err}
}

// tailBuffer keeps the last bytes written to it, so a chatty ffmpeg cannot
// fill memory.
type tailBuffer struct {
	buf []byte
}

const tailBufferBytes = 16 << 10

func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) >= tailBufferBytes {
		p = p[len(p)-tailBufferBytes:]
		t.buf = t.buf[:0]
	}
	if over := len(t.buf) + len(p) - tailBufferBytes; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

func (t *tailBuffer) lastLines(n int) string {
	lines := strings.Split(strings.TrimRight(string(t.buf), "\r\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for i, l := range lines {
		lines[i] = clip(strings.TrimRight(l, "\r"), 500)
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// clip shortens s to at most n bytes, on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
