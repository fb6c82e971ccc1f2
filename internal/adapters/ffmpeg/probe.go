package ffmpeg

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/color"
	"strconv"
	"strings"
)

// Info is what ffprobe says about a media file.
type Info struct {
	// Duration is the container's duration in seconds (0 for still images).
	Duration float64
	// Format is ffprobe's format_name, e.g. "mov,mp4,m4a,3gp,3g2,mj2".
	Format  string
	Streams []Stream
}

// Stream is one stream of a media file.
type Stream struct {
	// Type is ffprobe's codec_type: "video", "audio", "subtitle", "data".
	Type string
	// Codec is ffprobe's codec_name, e.g. "h264", "aac", "png".
	Codec         string
	Width, Height int
	// FPS is the average frame rate, or the base rate when there is none.
	FPS float64
	// Duration is the stream's own duration in seconds, when known.
	Duration   float64
	SampleRate int
	Channels   int
	// Profile and PixFmt are ffprobe's profile and pix_fmt, e.g. "High" and
	// "yuv420p".
	Profile, PixFmt string
	// HasBFrames is ffprobe's has_b_frames: how many frames decoding runs
	// ahead of display; 0 means packets come in display order.
	HasBFrames int
	// ExtradataHash is a SHA-256 of the codec's extradata (for H.264 the
	// SPS and PPS), "" when there is none: two streams with the same hash
	// and codec can be joined by stream copy.
	ExtradataHash string
}

// Video returns the first video stream.
func (i Info) Video() (Stream, bool) { return i.first("video") }

// Audio returns the first audio stream.
func (i Info) Audio() (Stream, bool) { return i.first("audio") }

func (i Info) first(kind string) (Stream, bool) {
	for _, s := range i.Streams {
		if s.Type == kind {
			return s, true
		}
	}
	return Stream{}, false
}

// Probe reads the format and streams of the file at path.
func (r Runner) Probe(ctx context.Context, path string) (Info, error) {
	var out bytes.Buffer
	args := append([]string{"-v", "error", "-print_format", "json", "-show_format", "-show_streams", "-show_data_hash", "sha256"}, inputBounds()...)
	args = append(args, path)
	if err := r.run(ctx, r.ffprobePath(), args, &out); err != nil {
		return Info{}, fmt.Errorf("probe %s: %w", path, err)
	}
	info, err := parseProbe(out.Bytes())
	if err != nil {
		return Info{}, fmt.Errorf("probe %s: %w", path, err)
	}
	return info, nil
}

type probeJSON struct {
	Format struct {
		FormatName string `json:"format_name"`
		Duration   string `json:"duration"`
	} `json:"format"`
	Streams []struct {
		CodecType    string `json:"codec_type"`
		CodecName    string `json:"codec_name"`
		Width        int    `json:"width"`
		Height       int    `json:"height"`
		AvgFrameRate string `json:"avg_frame_rate"`
		RFrameRate   string `json:"r_frame_rate"`
		Duration     string `json:"duration"`
		SampleRate   string `json:"sample_rate"`
		Channels     int    `json:"channels"`
		Profile      string `json:"profile"`
		PixFmt       string `json:"pix_fmt"`
		HasBFrames   int    `json:"has_b_frames"`
		Extradata    string `json:"extradata_hash"`
	} `json:"streams"`
}

func parseProbe(raw []byte) (Info, error) {
	var p probeJSON
	if err := json.Unmarshal(raw, &p); err != nil {
		return Info{}, fmt.Errorf("decode ffprobe output: %w", err)
	}
	info := Info{Duration: parseFloat(p.Format.Duration), Format: p.Format.FormatName}
	for _, s := range p.Streams {
		st := Stream{
			Type:     s.CodecType,
			Codec:    s.CodecName,
			Width:    s.Width,
			Height:   s.Height,
			Duration: parseFloat(s.Duration),
			Channels: s.Channels,
			Profile:  s.Profile,
			PixFmt:   s.PixFmt,

			HasBFrames:    s.HasBFrames,
			ExtradataHash: s.Extradata,
		}
		st.SampleRate, _ = strconv.Atoi(s.SampleRate)
		if s.CodecType == "video" {
			st.FPS = parseRate(s.AvgFrameRate)
			if st.FPS == 0 {
				st.FPS = parseRate(s.RFrameRate)
			}
		}
		info.Streams = append(info.Streams, st)
	}
	return info, nil
}

// parseFloat reads ffprobe's numeric strings; "N/A" and "" are 0.
func parseFloat(s string) float64 {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0
	}
	return f
}

// parseRate reads a rational like "30000/1001"; "0/0" is 0.
func parseRate(s string) float64 {
	num, den, ok := strings.Cut(s, "/")
	if !ok {
		return parseFloat(s)
	}
	n, d := parseFloat(num), parseFloat(den)
	if d == 0 {
		return 0
	}
	return n / d
}

// PixelAt returns the colour of pixel (x, y) of the frame shown at atSeconds
// in the video (or of the image) at path, as ffmpeg decodes it to RGB.
// Videos stored as YUV come back within a few units of the colour that was
// encoded, not exactly.
func (r Runner) PixelAt(ctx context.Context, path string, atSeconds float64, x, y int) (color.RGBA, error) {
	if x < 0 || y < 0 || atSeconds < 0 {
		return color.RGBA{}, fmt.Errorf("pixel of %s: position (%d,%d) at %gs is negative", path, x, y, atSeconds)
	}
	var out bytes.Buffer
	var args []string
	if atSeconds > 0 {
		// Not for 0: the image2 demuxer cannot seek in a single JPEG and
		// then returns no frame at all.
		args = append(args, "-ss", strconv.FormatFloat(atSeconds, 'f', 3, 64))
	}
	args = ffmpegArgs(append(args,
		"-i", path,
		"-frames:v", "1",
		// Convert before cropping: cropping YUV 4:2:0 rounds odd offsets.
		// The min() sizes make a pixel outside the frame an error; crop
		// would otherwise clamp the offset and answer a neighbour.
		"-vf", fmt.Sprintf("format=rgb24,crop=w=min(iw-%d\\,1):h=min(ih-%d\\,1):x=%d:y=%d", x, y, x, y),
		"-f", "rawvideo", "-pix_fmt", "rgb24", "pipe:1",
	))
	if err := r.run(ctx, r.ffmpegPath(), args, &out); err != nil {
		return color.RGBA{}, fmt.Errorf("pixel (%d,%d) at %gs of %s: %w", x, y, atSeconds, path, err)
	}
	if out.Len() != 3 {
		// No frame at that time (past the end), or the crop fell outside.
		return color.RGBA{}, fmt.Errorf("pixel (%d,%d) at %gs of %s: ffmpeg returned %d bytes, want 3 (time past the end or pixel outside the frame?)", x, y, atSeconds, path, out.Len())
	}
	b := out.Bytes()
	return color.RGBA{R: b[0], G: b[1], B: b[2], A: 255}, nil
}
