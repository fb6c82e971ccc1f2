package ffmpeg

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/png"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// requireFFmpeg fails (not skips) without the binaries: make test installs
// them, and a silently skipped media test proves nothing.
func requireFFmpeg(t *testing.T) Runner {
	t.Helper()
	r := Runner{Timeout: 30 * time.Second}
	if err := r.Available(); err != nil {
		t.Fatalf("ffmpeg is needed for this test: %v", err)
	}
	return r
}

func TestProbeReportsStreamsOfAGeneratedClip(t *testing.T) {
	r := requireFFmpeg(t)
	out := filepath.Join(t.TempDir(), "clip.mp4")
	err := r.Run(context.Background(),
		"-f", "lavfi", "-i", "testsrc2=s=320x240:r=25:d=1",
		"-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=1",
		"-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p",
		"-c:a", "aac", "-shortest", out)
	if err != nil {
		t.Fatal(err)
	}
	info, err := r.Probe(context.Background(), out)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(info.Duration-1) > 0.1 {
		t.Errorf("duration = %v, want about 1", info.Duration)
	}
	if !strings.Contains(info.Format, "mp4") {
		t.Errorf("format = %q, want an mp4 family name", info.Format)
	}
	v, ok := info.Video()
	if !ok {
		t.Fatalf("no video stream in %+v", info)
	}
	if v.Codec != "h264" || v.Width != 320 || v.Height != 240 || v.FPS != 25 || math.Abs(v.Duration-1) > 0.1 {
		t.Errorf("video stream = %+v, want h264 320x240 at 25 fps for about 1 s", v)
	}
	// ultrafast encodes no B-frames; the SPS/PPS hash names the encoding.
	if v.PixFmt != "yuv420p" || v.HasBFrames != 0 || !strings.HasPrefix(v.ExtradataHash, "SHA256:") {
		t.Errorf("video stream = %+v, want yuv420p, no B-frames and an extradata hash", v)
	}
	a, ok := info.Audio()
	if !ok {
		t.Fatalf("no audio stream in %+v", info)
	}
	if a.Codec != "aac" || a.SampleRate != 48000 || a.Channels != 1 {
		t.Errorf("audio stream = %+v, want aac 48 kHz mono", a)
	}
}

func TestProbeOfAMissingFileFailsWithStderr(t *testing.T) {
	r := requireFFmpeg(t)
	_, err := r.Probe(context.Background(), filepath.Join(t.TempDir(), "missing.mp4"))
	var fe *Error
	if !errors.As(err, &fe) || !strings.Contains(fe.Stderr, "No such file") {
		t.Fatalf("err = %v, want an *Error whose stderr says No such file", err)
	}
}

func TestRunErrorIncludesStderrTail(t *testing.T) {
	r := requireFFmpeg(t)
	missing := filepath.Join(t.TempDir(), "missing.mp4")
	err := r.Run(context.Background(), "-i", missing, filepath.Join(t.TempDir(), "out.mp4"))
	if err == nil {
		t.Fatal("Run succeeded on a missing input")
	}
	var fe *Error
	if !errors.As(err, &fe) {
		t.Fatalf("err = %T %v, want *Error", err, err)
	}
	var exit interface{ ExitCode() int }
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Errorf("err = %v, want it to wrap the non-zero exit", err)
	}
	if !strings.Contains(err.Error(), "No such file or directory") || !strings.Contains(err.Error(), missing) {
		t.Errorf("error does not carry ffmpeg's stderr:\n%v", err)
	}
}

func TestRunIsCutByTheTimeout(t *testing.T) {
	r := requireFFmpeg(t)
	r.Timeout = 500 * time.Millisecond
	start := time.Now()
	// An endless real-time source: it would run forever.
	err := r.Run(context.Background(), "-re", "-f", "lavfi", "-i", "testsrc2=s=64x64:r=10", "-f", "null", "-")
	elapsed := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want context.DeadlineExceeded", err)
	}
	if elapsed > 5*time.Second {
		t.Errorf("run took %v, want it cut after about 500ms", elapsed)
	}
}

func TestRunStopsWhenTheCallerCancels(t *testing.T) {
	r := requireFFmpeg(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := r.Run(ctx, "-re", "-f", "lavfi", "-i", "testsrc2=s=64x64:r=10", "-f", "null", "-")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the caller's context error", err)
	}
}

func TestPixelAtReturnsTheColourOfASolidClip(t *testing.T) {
	r := requireFFmpeg(t)
	dir := t.TempDir()
	want := color.RGBA{R: 0x33, G: 0x99, B: 0xcc, A: 255}
	// format=rgb24 inside the source graph: otherwise the colour source may
	// answer YUV and the PNG is off by one.
	const solid = "color=c=0x3399cc:s=96x64:r=10:d=1,format=rgb24"
	tests := []struct {
		name      string
		file      string
		source    string
		args      []string
		at        float64
		points    []image.Point
		tolerance int
	}{
		{"h264 video", "solid.mp4", solid, []string{"-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p"}, 0.5, []image.Point{{0, 0}, {95, 63}, {41, 17}}, 4},
		// RGB all the way: exact.
		{"png image", "solid.png", solid, []string{"-frames:v", "1", "-update", "1"}, 0, []image.Point{{0, 0}, {95, 63}, {41, 17}}, 0},
		// A large JPEG: the image2 demuxer returns no frame when asked to
		// seek in it, even to 0.
		{"large jpeg image", "busy.jpg", "testsrc2=s=1024x1024:d=1,drawbox=x=0:y=0:w=64:h=64:color=0x3399cc:t=fill",
			[]string{"-frames:v", "1", "-update", "1", "-c:v", "mjpeg", "-q:v", "2", "-pix_fmt", "yuvj420p"}, 0, []image.Point{{16, 16}, {40, 8}}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, tt.file)
			args := append([]string{"-f", "lavfi", "-i", tt.source}, tt.args...)
			if err := r.Run(context.Background(), append(args, path)...); err != nil {
				t.Fatal(err)
			}
			for _, p := range tt.points {
				got, err := r.PixelAt(context.Background(), path, tt.at, p.X, p.Y)
				if err != nil {
					t.Fatal(err)
				}
				if d := maxChannelDiff(got, want); d > tt.tolerance {
					t.Errorf("pixel %v = %v, want %v within %d", p, got, want, tt.tolerance)
				}
			}
		})
	}
}

func TestPixelAtRejectsAPixelOutsideTheFrame(t *testing.T) {
	r := requireFFmpeg(t)
	path := filepath.Join(t.TempDir(), "small.png")
	if err := r.Run(context.Background(), "-f", "lavfi", "-i", "color=c=red:s=16x16", "-frames:v", "1", "-update", "1", path); err != nil {
		t.Fatal(err)
	}
	for _, p := range []image.Point{{16, 0}, {0, 16}, {-1, 0}} {
		if c, err := r.PixelAt(context.Background(), path, 0, p.X, p.Y); err == nil {
			t.Errorf("PixelAt(%v) = %v, want an error", p, c)
		}
	}
}

func TestAvailableNamesTheFix(t *testing.T) {
	tests := []struct {
		name   string
		runner Runner
		env    map[string]string
		want   string
	}{
		{"missing ffmpeg field", Runner{FFmpeg: "/nonexistent/ffmpeg"}, nil, "/nonexistent/ffmpeg"},
		{"missing ffprobe from env", Runner{}, map[string]string{"FFPROBE_PATH": "/nonexistent/ffprobe"}, "FFPROBE_PATH"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			err := tt.runner.Available()
			if err == nil {
				t.Fatal("Available() = nil for a missing binary")
			}
			if !strings.Contains(err.Error(), "apt-get install ffmpeg") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q should name %q and the fix", err, tt.want)
			}
		})
	}
}

// escapeDrawtext must draw exactly what a text file drawn without expansion
// draws, for text full of characters that are special at some level.
func TestEscapeDrawtextDrawsTheTextVerbatim(t *testing.T) {
	r := requireFFmpeg(t)
	dir := t.TempDir()
	texts := map[string]string{
		"quotes and colons": `it's a 'test': a:b "c"`,
		"backslashes":       `C:\path\to\file \\ end\`,
		"percent expansion": `100% %{pts} %{localtime} %%`,
		"graph separators":  `a,b;c[d]e=f`,
		"edge spaces":       "  padded  ",
		"newline":           "line one\nline two",
		"unicode":           "héllo wörld — ÆØÅ Ω ≈ ∞",
	}
	for name, text := range texts {
		t.Run(name, func(t *testing.T) {
			textfile := filepath.Join(dir, name+".txt")
			if err := os.WriteFile(textfile, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			common := "fontfile=" + EscapeFilterValue(DefaultFontFile) + ":fontsize=16:fontcolor=white:x=4:y=4"
			viaFile := renderText(t, r, filepath.Join(dir, name+"-file.png"), "drawtext="+common+":expansion=none:textfile="+EscapeFilterValue(textfile))
			viaText := renderText(t, r, filepath.Join(dir, name+"-text.png"), "drawtext="+common+":text="+escapeDrawtext(text))
			if !bytes.Equal(viaFile.Pix, viaText.Pix) {
				t.Errorf("text=%s draws differently from the text file", escapeDrawtext(text))
			}
			if isUniform(viaText) {
				t.Errorf("nothing was drawn")
			}
		})
	}
}

func renderText(t *testing.T, r Runner, out, filter string) *image.NRGBA {
	t.Helper()
	if err := r.Run(context.Background(), "-f", "lavfi", "-i", "color=c=black:s=480x64", "-vf", filter+",format=rgba", "-frames:v", "1", "-update", "1", out); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	nrgba, ok := img.(*image.NRGBA)
	if !ok {
		t.Fatalf("decoded %T, want *image.NRGBA", img)
	}
	return nrgba
}

func isUniform(img *image.NRGBA) bool {
	first := img.Pix[:4]
	for i := 0; i < len(img.Pix); i += 4 {
		if !bytes.Equal(img.Pix[i:i+4], first) {
			return false
		}
	}
	return true
}

func TestEscapeFilterValueDropsNUL(t *testing.T) {
	if got := EscapeFilterValue("a\x00b"); got != "ab" {
		t.Errorf("EscapeFilterValue(a NUL b) = %q, want %q", got, "ab")
	}
}

func TestCaptionMakesAnyPromptDrawable(t *testing.T) {
	tests := []struct {
		name            string
		text            string
		maxRunes, width int
		want            string
	}{
		{"short", "a red fox", 80, 40, "a red fox"},
		{"whitespace and controls collapse", " a\tred\n\nfox\x00\x07 ", 80, 40, "a red fox"},
		{"cut with ellipsis", "one two three four", 9, 40, "one two t…"},
		{"cut at exact end is not marked", "one two", 7, 40, "one two"},
		{"trailing blanks after the cut are not text", "one two   \n", 7, 40, "one two"},
		{"wraps on words", "the quick brown fox jumps", 80, 10, "the quick\nbrown fox\njumps"},
		{"splits long words", "abcdefghijkl", 80, 5, "abcde\nfghij\nkl"},
		{"invalid utf-8 repaired", "ok \xff\xfe end", 80, 40, "ok \uFFFD\uFFFD end"},
		{"unicode counted in runes", "日本語のテキスト", 4, 40, "日本語の…"},
		{"only blanks", " \n\t ", 80, 40, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Caption(tt.text, tt.maxRunes, tt.width); got != tt.want {
				t.Errorf("Caption(%q, %d, %d) = %q, want %q", tt.text, tt.maxRunes, tt.width, got, tt.want)
			}
		})
	}
}

func TestCaptionOfAHugePromptIsShort(t *testing.T) {
	huge := strings.Repeat("word: 'x' \\ % , ; [y]\n", 50000/20)
	got := Caption(huge, 80, 40)
	if n := len([]rune(got)); n > 82 {
		t.Errorf("caption has %d runes, want at most 80 plus line breaks", n)
	}
}

func maxChannelDiff(a, b color.RGBA) int {
	d := 0
	for _, p := range [][2]uint8{{a.R, b.R}, {a.G, b.G}, {a.B, b.B}} {
		if v := int(p[0]) - int(p[1]); v > d {
			d = v
		} else if -v > d {
			d = -v
		}
	}
	return d
}

// TestProviderMediaOpensNoURLAndNoOtherFile: a provider's "clip" is
// whatever bytes it sent, and ffmpeg picks the demuxer from the content. A
// playlist may name a URL (the network, from inside the function) or a
// local file (the function's own files, its /proc/self/environ with the
// role's credentials); ffmpeg must read neither, nor render a text file
// into frames.
func TestProviderMediaOpensNoURLAndNoOtherFile(t *testing.T) {
	r := requireFFmpeg(t)
	ctx := context.Background()
	dir := t.TempDir()

	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		http.NotFound(w, nil)
	}))
	defer srv.Close()

	// A real segment on disk, which a playlist may name.
	segment := filepath.Join(dir, "segment.ts")
	if err := r.Run(ctx, "-f", "lavfi", "-i", "testsrc=d=1:s=64x64:r=10", segment); err != nil {
		t.Fatal(err)
	}
	hls := func(entry string) string {
		return "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\n" + entry + "\n#EXT-X-ENDLIST\n"
	}
	for _, c := range []struct{ name, body string }{
		{"an HLS playlist naming a local file", hls(segment)},
		{"an HLS playlist naming a URL", hls(srv.URL + "/segment.ts")},
		{"a concat list naming a URL", "ffconcat version 1.0\nfile '" + srv.URL + "/clip.mp4'\n"},
		{"a text file", "AWS_SECRET_ACCESS_KEY=shown as a picture by the tty demuxer\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			clip := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".mp4")
			if c.name == "a text file" {
				clip = strings.TrimSuffix(clip, ".mp4") + ".txt" // tty is chosen by extension
			}
			if err := os.WriteFile(clip, []byte(c.body), 0o600); err != nil {
				t.Fatal(err)
			}
			before := requests.Load()
			out := filepath.Join(dir, "out.mp4")
			os.Remove(out)
			if err := r.Run(ctx, "-i", clip, "-t", "1", out); err == nil {
				t.Errorf("ffmpeg read %s into %s", c.name, out)
			}
			if _, err := r.Probe(ctx, clip); err == nil {
				t.Errorf("ffprobe read %s", c.name)
			}
			if n := requests.Load() - before; n != 0 {
				t.Errorf("ffmpeg or ffprobe made %d requests to the URL the file names", n)
			}
		})
	}

	// What the service reads still opens: a clip through a concat list
	// of absolute paths (as Assemble writes it), and an image.
	clip := filepath.Join(dir, "clip.mp4")
	if err := r.Run(ctx, "-f", "lavfi", "-i", "testsrc=d=1:s=64x64:r=10", "-f", "lavfi", "-i", "sine=d=1", "-shortest", clip); err != nil {
		t.Fatal(err)
	}
	list := filepath.Join(dir, "list.txt")
	if err := os.WriteFile(list, []byte("file '"+clip+"'\nfile '"+clip+"'\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := r.Run(ctx, "-f", "concat", "-safe", "0", "-i", list, "-i", clip, "-map", "0:v", "-map", "1:a", filepath.Join(dir, "joined.mp4")); err != nil {
		t.Errorf("a concat list of clips no longer opens: %v", err)
	}
	if info, err := r.Probe(ctx, clip); err != nil || !strings.Contains(info.Format, "mp4") {
		t.Errorf("Probe(clip) = %+v, %v", info, err)
	}
	img := filepath.Join(dir, "image.png")
	if err := r.Run(ctx, "-f", "lavfi", "-i", "color=c=red:s=8x8", "-frames:v", "1", img); err != nil {
		t.Fatal(err)
	}
	if _, err := r.PixelAt(ctx, img, 0, 1, 1); err != nil {
		t.Errorf("an image no longer opens: %v", err)
	}
}
