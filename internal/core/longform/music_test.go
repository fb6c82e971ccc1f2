package longform

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mediagen-dev/mediagen/internal/adapters/ffmpeg"
	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/media"
)

// uploadedAudio is the caller's uploaded files: each file URL's bytes, or
// the error its check answers.
type uploadedAudio map[string]struct {
	data []byte
	err  error
}

func (u uploadedAudio) FetchAudio(_ context.Context, _, _, fileURL, path string) error {
	f, ok := u[fileURL]
	if !ok {
		return &media.UnusableFileError{Reason: "file is unknown"}
	}
	if f.err != nil {
		return f.err
	}
	return os.WriteFile(path, f.data, 0o600)
}

// An uploaded music file passes the create's check only when the caller's
// file is usable audio: an unusable file is a 400 naming music_url with
// the reason, bytes ffprobe finds no audio in too, and a runtime with no
// bucket of uploads refuses file URLs by name rather than fetching them.
// A storage failure is no 400: it is the service's.
func TestTheMusicCheckReadsAnUploadedFileAsAudio(t *testing.T) {
	song := filepath.Join(t.TempDir(), "song.wav")
	if err := (ffmpeg.Runner{}).Run(context.Background(), "-f", "lavfi", "-i", "sine=frequency=220:sample_rate=8000:duration=1", "-ac", "1", song); err != nil {
		t.Fatal(err)
	}
	wav, err := os.ReadFile(song)
	if err != nil {
		t.Fatal(err)
	}
	ref := func(suffix byte) string {
		id := domain.NewFileID(domain.Now(nil))
		return domain.FileURL(id[:len(id)-1] + string(suffix))
	}
	good, noise, picture, broken := ref('1'), ref('2'), ref('3'), ref('4')
	files := uploadedAudio{
		good:    {data: wav},
		noise:   {data: []byte("RIFF but then only words, no sound")},
		picture: {err: &media.UnusableFileError{Reason: "file is image/png, not audio"}},
		broken:  {err: errors.New("the bucket is unreachable")},
	}
	tests := []struct {
		name  string
		check *MusicCheck
		ref   string
		want  string // "" passes; "!" is an error that is no 400
	}{
		{"the caller's wav", &MusicCheck{Files: files}, good, ""},
		{"bytes that are no audio", &MusicCheck{Files: files}, noise, "is not audio"},
		{"an image file", &MusicCheck{Files: files}, picture, "is image/png, not audio"},
		{"another account's file", &MusicCheck{Files: files}, ref('5'), "is unknown"},
		{"no uploads here", &MusicCheck{}, good, "uploaded files are not available here"},
		{"the bucket failing", &MusicCheck{Files: files}, broken, "!"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.check.WorkDir = t.TempDir()
			err := tt.check.check(context.Background(), "usr_a", "0b9e8f6a-2c31-4d7e-9f05-8a1b2c3d4e5f", tt.ref)
			var v *catalog.ValidationError
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("check = %v, want it passed", err)
			case tt.want == "!" && (err == nil || errors.As(err, &v)):
				t.Errorf("check = %v, want the storage's error, no 400", err)
			case tt.want != "" && tt.want != "!" && (!errors.As(err, &v) || len(v.Details) != 1 || v.Details[0].Field != "music_url" || !strings.Contains(v.Details[0].Message, tt.want)):
				t.Errorf("check = %v, want a 400 naming music_url: %q", err, tt.want)
			}
		})
	}
}
