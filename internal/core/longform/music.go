package longform

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// Music limits and shape.
const (
	// MaxMusicBytes bounds a decoded music_url data: URI. The URI is kept
	// in the video's record until uploads exist (issue 28 names them), so
	// it is a short loop, not a song.
	MaxMusicBytes = 96 << 10
	// DefaultMusicVolume is the music's gain (0–1) under the narration.
	DefaultMusicVolume = 0.3
	// musicFadeSeconds is the music's fade in at the start and out at the
	// end.
	musicFadeSeconds = 1.0
)

// musicTypes are the audio formats a music data: URI may hold, by the
// magic bytes that start each (ffprobe checks the whole file at assembly):
// those ffmpeg.InputFormats lets ffmpeg read (wav, mp3, mov for mp4).
var musicTypes = map[string]func([]byte) bool{
	"audio/wav": func(b []byte) bool { return len(b) > 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WAVE" },
	"audio/mpeg": func(b []byte) bool {
		return bytes.HasPrefix(b, []byte("ID3")) || len(b) > 1 && b[0] == 0xFF && b[1]&0xE0 == 0xE0
	},
	"audio/mp4": func(b []byte) bool { return len(b) > 8 && string(b[4:8]) == "ftyp" },
}

// decodeMusic reads a music data: URI: data:audio/<type>;base64,<data>.
func decodeMusic(uri string) ([]byte, error) {
	head, payload, ok := strings.Cut(uri, ",")
	mediaType, isBase64 := strings.CutSuffix(strings.TrimPrefix(strings.ToLower(head), "data:"), ";base64")
	if !ok || !strings.HasPrefix(strings.ToLower(head), "data:") || !isBase64 {
		return nil, fmt.Errorf("must be a data:audio/<type>;base64, URI")
	}
	if mediaType == "audio/x-wav" || mediaType == "audio/wave" {
		mediaType = "audio/wav"
	}
	looksLike, known := musicTypes[mediaType]
	if !known {
		return nil, fmt.Errorf("holds %q; music is audio/wav, audio/mpeg or audio/mp4", truncate(mediaType, 32))
	}
	if base64.StdEncoding.DecodedLen(len(payload)) > MaxMusicBytes+2 {
		return nil, fmt.Errorf("must hold at most %d KiB of audio", MaxMusicBytes>>10)
	}
	raw, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		return nil, fmt.Errorf("is not valid base64")
	}
	if len(raw) > MaxMusicBytes {
		return nil, fmt.Errorf("must hold at most %d KiB of audio", MaxMusicBytes>>10)
	}
	if !looksLike(raw) {
		return nil, fmt.Errorf("does not hold %s audio", mediaType)
	}
	return raw, nil
}

// music reads music_url and music_volume into out.
func music(obj map[string]any, out *domain.Studio, p *catalog.Problems) {
	raw, present := obj["music_url"]
	if vol, has := obj["music_volume"]; has {
		n, ok := vol.(interface{ Float64() (float64, error) })
		f, err := 0.0, error(nil)
		if ok {
			f, err = n.Float64()
		}
		switch {
		case !ok || err != nil || f < 0 || f > 1:
			p.Add("music_volume", "must be a number from 0 to 1 (the music's gain under the narration; default "+strconv.FormatFloat(DefaultMusicVolume, 'f', -1, 64)+")")
		case !present:
			p.Add("music_volume", "needs music_url")
		default:
			out.MusicVolume = &f
		}
	}
	if !present {
		return
	}
	uri, ok := raw.(string)
	if !ok {
		p.Add("music_url", "must be a string: a data:audio/<type>;base64, URI")
		return
	}
	if _, err := decodeMusic(uri); err != nil {
		p.Add("music_url", err.Error())
		return
	}
	out.MusicURL = uri
}

// musicVolume is the video's music gain.
func musicVolume(st domain.Studio) float64 {
	if st.MusicVolume != nil {
		return *st.MusicVolume
	}
	return DefaultMusicVolume
}

// addMusic lays the video's music under the assembled video at final,
// checked as audio with ffprobe: looped or cut to the video's length,
// faded in and out, at its volume, and ducked under the narration by
// sidechain compression keyed on the narration track (a video without
// narration gets the music alone). The picture is copied.
func (s *Steps) addMusic(ctx context.Context, dir string, st domain.Studio, final string, seconds float64, narrated bool) error {
	raw, err := decodeMusic(st.MusicURL)
	if err != nil {
		return &SceneFailedError{Msg: fmt.Sprintf("music_url %v", err)}
	}
	path := filepath.Join(dir, "music.audio")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		return &TransientError{Msg: fmt.Sprintf("assemble: music: %v", err)}
	}
	info, err := s.FFmpeg.Probe(ctx, path)
	if _, ok := info.Audio(); err != nil || !ok || info.Duration <= 0 {
		return &SceneFailedError{Msg: "music_url is not audio ffmpeg can read"}
	}
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) }
	fade := min(musicFadeSeconds, seconds/4)
	musicChain := fmt.Sprintf("[1:a]aformat=sample_rates=%d:channel_layouts=%s,atrim=duration=%s,asetpts=PTS-STARTPTS,volume=%s,afade=t=in:st=0:d=%s,afade=t=out:st=%s:d=%s",
		audioRate, audioLayout, f(seconds), f(musicVolume(st)), f(fade), f(seconds-fade), f(fade))
	graph := musicChain + "[a]"
	if narrated {
		// The narration keys the compressor: while it speaks the music
		// drops by up to (level over threshold) × (1 − 1/ratio). amix
		// halves each input (ffmpeg 4.1 has no normalize=0), so the sum
		// is doubled back to the narration's own level.
		graph = musicChain + "[m];" +
			fmt.Sprintf("[0:a]aformat=sample_rates=%d:channel_layouts=%s,asplit=2[voice][key];", audioRate, audioLayout) +
			"[m][key]sidechaincompress=threshold=0.01:ratio=10:attack=10:release=300[ducked];" +
			"[voice][ducked]amix=inputs=2:duration=first:dropout_transition=0,volume=2[a]"
	}
	mixed := filepath.Join(dir, "with-music.mp4")
	args := []string{"-i", final, "-stream_loop", "-1", "-i", path, "-filter_complex", graph,
		"-map", "0:v", "-c:v", "copy", "-map", "[a]"}
	args = append(append(args, audioCodec...), "-t", f(seconds), "-movflags", "+faststart", mixed)
	if err := s.FFmpeg.Run(ctx, args...); err != nil {
		return &TransientError{Msg: fmt.Sprintf("assemble: music: %v", err)}
	}
	if err := os.Rename(mixed, final); err != nil {
		return &TransientError{Msg: fmt.Sprintf("assemble: music: %v", err)}
	}
	return nil
}
