package simulator

import (
	"context"
	"fmt"
	"hash/fnv"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/mediagen-dev/mediagen/internal/adapters/ffmpeg"
)

// cleanCorner is the side, in pixels, of the top-left square of every
// rendered picture that shows only the background colour.
const cleanCorner = 40

// Caption limits: the start of the prompt, on a few short lines.
const (
	captionRunes     = 80
	captionLineRunes = 40
)

// ColorFor is the background colour of every picture rendered for prompt:
// a hue from a hash of the prompt, saturated and of middle lightness, so
// white text stays readable and two prompts almost surely differ clearly.
func ColorFor(prompt string) color.RGBA {
	h := fnv.New64a()
	h.Write([]byte(prompt))
	sum := h.Sum64()
	hue := float64(sum % 360)
	sat := 0.65 + 0.15*float64((sum>>16)%3)   // 0.65, 0.80, 0.95
	light := 0.40 + 0.07*float64((sum>>24)%3) // 0.40, 0.47, 0.54
	return hsl(hue, sat, light)
}

func hsl(hue, sat, light float64) color.RGBA {
	c := (1 - math.Abs(2*light-1)) * sat
	x := c * (1 - math.Abs(math.Mod(hue/60, 2)-1))
	m := light - c/2
	var r, g, b float64
	switch {
	case hue < 60:
		r, g, b = c, x, 0
	case hue < 120:
		r, g, b = x, c, 0
	case hue < 180:
		r, g, b = 0, c, x
	case hue < 240:
		r, g, b = 0, x, c
	case hue < 300:
		r, g, b = x, 0, c
	default:
		r, g, b = c, 0, x
	}
	to8 := func(v float64) uint8 { return uint8(math.Round((v + m) * 255)) }
	return color.RGBA{R: to8(r), G: to8(g), B: to8(b), A: 255}
}

func hexColor(c color.RGBA) string { return fmt.Sprintf("0x%02x%02x%02x", c.R, c.G, c.B) }

// fontSize fits about captionLineRunes runes across the frame and a few
// lines in its middle third, so the text never reaches the clean corner.
func fontSize(width, height int) int {
	return max(8, min(height/16, width/24))
}

// renderVideo writes an H.264 mp4 of spec to out.
func (s *Simulator) renderVideo(ctx context.Context, workDir, out, prompt string, spec videoSpec) error {
	captionFile, err := writeCaption(workDir, ffmpeg.Caption(prompt, captionRunes, captionLineRunes))
	if err != nil {
		return err
	}
	defer os.Remove(captionFile)

	seconds := strconv.FormatFloat(spec.Seconds, 'f', -1, 64)
	fps := strconv.FormatFloat(spec.FPS, 'f', -1, 64)
	fs := fontSize(spec.Width, spec.Height)
	dot := max(4, even(float64(spec.Height)/12))

	// The colour source answers YUV itself: closer to the requested colour
	// after encoding than an RGB frame converted by swscale.
	args := []string{
		"-f", "lavfi", "-i", fmt.Sprintf("color=c=%s:s=%dx%d:r=%s:d=%s", hexColor(ColorFor(prompt)), spec.Width, spec.Height, fps, seconds),
	}
	if spec.Audio {
		args = append(args, "-f", "lavfi", "-i", fmt.Sprintf("sine=frequency=%d:sample_rate=48000:duration=%s", toneFor(prompt), seconds))
	}
	graph := []string{
		// The caption sways left and right; it stays in the middle band.
		"[0:v]" + drawtext(s.cfg.FontFile, captionFile, fs,
			"(w-text_w)/2+w/10*sin(2*PI*t/3)", "(h-text_h)/2") + "[captioned]",
		// A white square runs along the bottom edge.
		fmt.Sprintf("color=c=white:s=%dx%d:r=%s:d=%s[dot]", dot, dot, fps, seconds),
		"[captioned][dot]overlay=x=" + ffmpeg.EscapeFilterValue("(W-w)*(0.5+0.5*sin(2*PI*t/2))") +
			":y=" + ffmpeg.EscapeFilterValue("H-h-H/20") + ":shortest=1,format=yuv420p[video]",
	}
	args = append(args, "-filter_complex", strings.Join(graph, ";"), "-map", "[video]")
	if spec.Audio {
		args = append(args, "-map", "1:a", "-c:a", "aac", "-b:a", "96k")
	}
	args = append(args,
		"-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p",
		"-r", fps, "-t", seconds, "-movflags", "+faststart", out)
	return s.cfg.FFmpeg.Run(ctx, args...)
}

// renderImage writes image index of spec to out.
func (s *Simulator) renderImage(ctx context.Context, workDir, out, prompt string, spec imageSpec, index int) error {
	caption := ffmpeg.Caption(prompt, captionRunes, captionLineRunes)
	if spec.Count > 1 {
		caption += fmt.Sprintf("\n(%d/%d)", index+1, spec.Count)
	}
	captionFile, err := writeCaption(workDir, caption)
	if err != nil {
		return err
	}
	defer os.Remove(captionFile)

	// rgb24 inside the source graph: the PNG then holds exactly ColorFor.
	args := []string{
		"-f", "lavfi", "-i", fmt.Sprintf("color=c=%s:s=%dx%d:d=1,format=rgb24", hexColor(ColorFor(prompt)), spec.Width, spec.Height),
		"-vf", drawtext(s.cfg.FontFile, captionFile, fontSize(spec.Width, spec.Height), "(w-text_w)/2", "(h-text_h)/2"),
		"-frames:v", "1", "-update", "1",
	}
	switch spec.Format {
	case "jpeg":
		args = append(args, "-c:v", "mjpeg", "-q:v", "2", "-pix_fmt", "yuvj420p")
	case "webp":
		args = append(args, "-c:v", "libwebp", "-quality", "90")
	default:
		args = append(args, "-c:v", "png", "-pix_fmt", "rgb24")
	}
	args = append(args, "-f", "image2", out)
	return s.cfg.FFmpeg.Run(ctx, args...)
}

// drawtext draws the text file in white with a dark outline. The text goes
// through a file with expansion=none: no prompt can break the filter graph.
func drawtext(fontFile, textFile string, size int, x, y string) string {
	return "drawtext=fontfile=" + ffmpeg.EscapeFilterValue(fontFile) +
		":textfile=" + ffmpeg.EscapeFilterValue(textFile) +
		":expansion=none:fontcolor=white:borderw=" + strconv.Itoa(max(1, size/16)) +
		":bordercolor=black@0.6:fontsize=" + strconv.Itoa(size) +
		":line_spacing=" + strconv.Itoa(size/4) +
		":x=" + ffmpeg.EscapeFilterValue(x) + ":y=" + ffmpeg.EscapeFilterValue(y)
}

// writeCaption writes text to a file for drawtext; an empty caption becomes
// one space, as drawtext refuses empty text.
func writeCaption(dir, text string) (string, error) {
	if text == "" {
		text = " "
	}
	f, err := os.CreateTemp(dir, ".caption-*.txt")
	if err != nil {
		return "", fmt.Errorf("caption file: %w", err)
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", fmt.Errorf("caption file: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("caption file: %w", err)
	}
	return filepath.Clean(f.Name()), nil
}

// toneFor is the sine frequency of a prompt's audio track, 220-659 Hz.
func toneFor(prompt string) int {
	h := fnv.New32a()
	h.Write([]byte(prompt))
	return 220 + int(h.Sum32()%440)
}
