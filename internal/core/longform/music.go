package longform

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/mediagen-dev/mediagen/internal/adapters/ffmpeg"
	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/media"
)

// Music limits and shape.
const (
	// maxMusicBytes bounds a decoded music_url data: URI. The URI is kept
	// in the video's record, so it is a short loop, not a song: a song is
	// an uploaded file (mediagen://files/<id>, up to 100 MiB).
	maxMusicBytes = 96 << 10
	// MaxMusicURLBytes bounds the file a music_url https URL answers:
	// about 20 minutes of 128 kbit/s mp3, far more than the longest video
	// (20 scenes × 5 s) needs; it is fetched at create (to check it) and
	// again at assembly.
	MaxMusicURLBytes = 20 << 20
	// defaultMusicVolume is the music's gain (0–1) under the narration.
	defaultMusicVolume = 0.3
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
	if base64.StdEncoding.DecodedLen(len(payload)) > maxMusicBytes+2 {
		return nil, fmt.Errorf("must hold at most %d KiB of audio", maxMusicBytes>>10)
	}
	raw, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		return nil, fmt.Errorf("is not valid base64")
	}
	if len(raw) > maxMusicBytes {
		return nil, fmt.Errorf("must hold at most %d KiB of audio", maxMusicBytes>>10)
	}
	if !looksLike(raw) {
		return nil, fmt.Errorf("does not hold %s audio", mediaType)
	}
	return raw, nil
}

// music reads music_url and music_volume into out.
func music(obj map[string]any, opts catalog.Options, out *domain.Studio, p *catalog.Problems) {
	raw, present := obj["music_url"]
	if vol, has := obj["music_volume"]; has {
		n, ok := vol.(interface{ Float64() (float64, error) })
		f, err := 0.0, error(nil)
		if ok {
			f, err = n.Float64()
		}
		switch {
		case !ok || err != nil || f < 0 || f > 1:
			p.Add("music_volume", "must be a number from 0 to 1 (the music's gain under the narration; default "+strconv.FormatFloat(defaultMusicVolume, 'f', -1, 64)+")")
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
		p.Add("music_url", "must be a string: an uploaded file's URL (mediagen://files/<file_id>), an https URL or a data:audio/<type>;base64, URI")
		return
	}
	if domain.IsFileURL(uri) {
		if _, ok := domain.ParseFileURL(uri); !ok {
			p.Add("music_url", "must be mediagen://files/<file_id>, a file_id that POST /api/files made")
			return
		}
		out.MusicURL = uri
		return
	}
	if !isDataURI(uri) {
		if msg := catalog.URLProblem(uri, opts, "must be an https URL or a data:audio/<type>;base64, URI"); msg != "" {
			p.Add("music_url", msg)
			return
		}
		out.MusicURL = uri
		return
	}
	if _, err := decodeMusic(uri); err != nil {
		p.Add("music_url", err.Error())
		return
	}
	out.MusicURL = uri
}

// isDataURI reports a data: URI (any case); anything else in music_url is
// a URL to fetch.
func isDataURI(s string) bool { return len(s) >= 5 && strings.EqualFold(s[:5], "data:") }

// Downloader fetches a file a caller named by its URL into path, through
// the service's egress guard (media.Downloader), at most
// MaxMusicURLBytes.
type Downloader interface {
	Download(ctx context.Context, rawURL, path string) error
}

// UploadedAudio copies a caller's uploaded audio file (music_url
// mediagen://files/<id>) for the video workID (media.SnapshotKey, which
// the assembly reads: bytes PUT to the upload after the check never reach
// the video) and downloads the copy into path once it is checked: the
// caller's, uploaded, within its day, uploaded as audio. An unusable file
// is a *media.UnusableFileError. media.FileInputs is the implementation.
type UploadedAudio interface {
	FetchAudio(ctx context.Context, userID, workID, fileURL, path string) error
}

// MusicCheck checks a music_url given as a URL or an uploaded file before
// any credit moves: fetched through Fetch (a URL) or copied from the
// bucket by Files (a file), and read as audio by ffprobe.
type MusicCheck struct {
	Fetch   Downloader
	Files   UploadedAudio
	FFmpeg  ffmpeg.Runner
	WorkDir string
}

// check answers a validation error naming music_url when its file (a
// data: URI's bytes, a URL's, fetched, or an uploaded file, the caller's,
// copied for the video videoID) is not audio with a length.
func (m *MusicCheck) check(ctx context.Context, userID, videoID, url string) error {
	var p catalog.Problems
	file, inline := domain.IsFileURL(url), isDataURI(url)
	switch {
	case inline && m == nil:
		return nil // parse read its header; a wiring without ffprobe reads no more
	case file && (m == nil || m.Files == nil):
		p.Add("music_url", "uploaded files are not available here; use an https URL or a data:audio/<type>;base64, URI")
		return p.Err()
	case !file && !inline && (m == nil || m.Fetch == nil):
		p.Add("music_url", "music from a URL is not available here; use a data:audio/<type>;base64, URI")
		return p.Err()
	}
	dir, err := os.MkdirTemp(m.WorkDir, "music-")
	if err != nil {
		return fmt.Errorf("music_url: scratch dir: %w", err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "music.audio")
	switch {
	case inline:
		raw, err := decodeMusic(url)
		if err != nil {
			p.Add("music_url", err.Error())
			return p.Err()
		}
		if err := os.WriteFile(path, raw, 0o600); err != nil {
			return fmt.Errorf("music_url: %w", err)
		}
	case file:
		var unusable *media.UnusableFileError
		switch err := m.Files.FetchAudio(ctx, userID, videoID, url, path); {
		case errors.As(err, &unusable):
			p.Add("music_url", unusable.Reason)
			return p.Err()
		case err != nil:
			return fmt.Errorf("music_url: %w", err)
		}
	default:
		if err := m.Fetch.Download(ctx, url, path); err != nil {
			p.Add("music_url", fmt.Sprintf("could not be fetched: %s", truncate(err.Error(), 200)))
			return p.Err()
		}
	}
	info, err := m.FFmpeg.Probe(ctx, path)
	if _, ok := info.Audio(); err != nil || !ok || info.Duration <= 0 {
		p.Add("music_url", "is not audio ffmpeg can read (ffprobe finds no audio stream with a length)")
		return p.Err()
	}
	return nil
}

// musicVolume is the video's music gain.
func musicVolume(st domain.Studio) float64 {
	if st.MusicVolume != nil {
		return *st.MusicVolume
	}
	return defaultMusicVolume
}

// addMusic lays the video's music under the assembled video at final,
// checked as audio with ffprobe: looped or cut to the video's length,
// faded in and out, at its volume, and ducked under the narration by
// sidechain compression keyed on the narration track (a video without
// narration gets the music alone). The picture is copied.
//
// An uploaded file is read from the bucket as the copy its create made
// and checked (media.SnapshotKey), never the upload itself, but for a
// video recorded before the copies were made (Music finds none there),
// whose upload is read checked as at create: no egress fetch.
func (s *Steps) addMusic(ctx context.Context, dir, userID, videoID string, st domain.Studio, final string, seconds float64, narrated bool) error {
	path := filepath.Join(dir, "music.audio")
	if id, ok := domain.ParseFileURL(st.MusicURL); ok {
		key := media.SnapshotKey(videoID, id)
		if s.Music != nil {
			var err error
			key, err = s.Music.AudioKey(ctx, userID, videoID, st.MusicURL)
			var unusable *media.UnusableFileError
			switch {
			case errors.As(err, &unusable):
				return &SceneFailedError{Msg: "music_url " + unusable.Reason}
			case err != nil:
				return &TransientError{Msg: fmt.Sprintf("assemble: music: file %s: %v", id, err)}
			}
		}
		if err := s.Files.GetFile(ctx, key, path); err != nil {
			return &TransientError{Msg: fmt.Sprintf("assemble: music: file %s: %v", id, err)}
		}
	} else if isDataURI(st.MusicURL) {
		raw, err := decodeMusic(st.MusicURL)
		if err != nil {
			return &SceneFailedError{Msg: fmt.Sprintf("music_url %v", err)}
		}
		if err := os.WriteFile(path, raw, 0o600); err != nil {
			return &TransientError{Msg: fmt.Sprintf("assemble: music: %v", err)}
		}
	} else {
		if s.Downloader == nil {
			return &SceneFailedError{Msg: "music_url: no downloader for music from a URL"}
		}
		if err := s.Downloader.Download(ctx, st.MusicURL, path); err != nil {
			if errors.Is(err, media.ErrRejected) {
				return &SceneFailedError{Msg: fmt.Sprintf("music_url could not be fetched: %v", err)}
			}
			return &TransientError{Msg: fmt.Sprintf("assemble: music: %v", err)}
		}
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
