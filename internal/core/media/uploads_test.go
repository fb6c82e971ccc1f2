package media

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// fakeFiles is a bucket of uploads in memory: each key's bytes, stored
// type and, when set, the size the bucket lists (a file too large to
// keep here).
type fakeFiles map[string]struct {
	data  []byte
	ctype string
	size  int64
}

func (f fakeFiles) Size(_ context.Context, key string) (int64, error) {
	o, ok := f[key]
	if !ok {
		return 0, domain.ErrNotFound
	}
	if o.size > 0 {
		return o.size, nil
	}
	return int64(len(o.data)), nil
}

func (f fakeFiles) Copy(_ context.Context, src, dst string) error {
	o, ok := f[src]
	if !ok {
		return domain.ErrNotFound
	}
	o.data = bytes.Clone(o.data)
	f[dst] = o
	return nil
}

func (f fakeFiles) Head(ctx context.Context, key string) (int64, string, error) {
	size, err := f.Size(ctx, key)
	return size, f[key].ctype, err
}

func (f fakeFiles) ReadStart(_ context.Context, key string, n int64) ([]byte, string, error) {
	o := f[key]
	return o.data[:min(int64(len(o.data)), n)], o.ctype, nil
}

func (f fakeFiles) GetFile(_ context.Context, key, path string) error {
	o, ok := f[key]
	if !ok {
		return domain.ErrNotFound
	}
	return os.WriteFile(path, o.data, 0o600)
}

func (f fakeFiles) PresignGet(_ context.Context, key string, lifetime time.Duration) (string, error) {
	return "https://bucket.example/" + key + "?X-Amz-Expires=" + lifetime.String(), nil
}

// Resolve hands out a presigned GET only for the caller's file, uploaded,
// within its day, at most 100 MiB, whose bytes are the type it declared;
// anything else is an *UnusableFileError saying why, a 400 of the field.
func TestResolveChecksTheFileBeforeHandingOutItsURL(t *testing.T) {
	made := time.Date(2026, 11, 21, 18, 0, 0, 0, time.UTC)
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	id := func(suffix byte) string {
		s := domain.NewFileID(made)
		return s[:len(s)-1] + string(suffix)
	}
	good, fake, huge, empty, theirs, never, song := id('1'), id('2'), id('3'), id('4'), id('5'), id('6'), id('7')
	const work = "3348f3aa-5fd0-4758-860a-3ebaf4cfbcc7"
	files := fakeFiles{
		UploadKey("usr_a", song):   {[]byte("ID3\x04\x00\x00\x00\x00\x00\x00"), "audio/mpeg", 0},
		UploadKey("usr_a", good):   {png, "image/png", 0},
		UploadKey("usr_a", fake):   {[]byte("<html>no picture</html>"), "image/png", 0},
		UploadKey("usr_a", empty):  {nil, "image/png", 0},
		UploadKey("usr_a", huge):   {png, "image/png", domain.MaxUploadBytes + 1},
		UploadKey("usr_b", theirs): {png, "image/png", 0},
	}
	tests := []struct {
		name, ref string
		at        time.Time
		want      string // "" for a URL
	}{
		{"the caller's PNG", domain.FileURL(good), made.Add(time.Hour), ""},
		{"bytes that are no image", domain.FileURL(fake), made.Add(time.Hour), "its bytes are not a PNG"},
		{"another account's file", domain.FileURL(theirs), made.Add(time.Hour), "is unknown"},
		{"a file never uploaded", domain.FileURL(never), made.Add(time.Hour), "is unknown"},
		{"an empty file", domain.FileURL(empty), made.Add(time.Hour), "is empty"},
		{"a day later", domain.FileURL(good), made.Add(24 * time.Hour), "expired"},
		{"not a file URL", "mediagen://files/x", made, "must be mediagen://files/<file_id>"},
		{"a file over 100 MiB", domain.FileURL(huge), made, "over the 104857600-byte (100 MiB) limit"},
		{"an audio file in an image field", domain.FileURL(song), made, "is audio (audio/mpeg): this field takes an image"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &FileInputs{Objects: files, Now: func() time.Time { return tt.at }}
			u, err := r.Resolve(context.Background(), "usr_a", work, tt.ref)
			var unusable *UnusableFileError
			switch {
			case tt.want == "" && (err != nil || !strings.Contains(u, SnapshotKey(work, good)) || !strings.Contains(u, inputURLLifetime.String())):
				t.Errorf("Resolve = %q, %v; want a GET URL of the file's copy for the work valid %s", u, err, inputURLLifetime)
			case tt.want != "" && (!errors.As(err, &unusable) || !strings.Contains(unusable.Reason, tt.want) || !errors.Is(err, domain.ErrInvalid)):
				t.Errorf("Resolve = %q, %v; want an unusable file saying %q", u, err, tt.want)
			}
		})
	}
}

// swapOnCopy is a bucket whose upload is replaced by other bytes just
// before the service copies it (a PUT to the upload_url landing between
// the listing and the copy), and again just after (a PUT landing after
// the check, before the provider reads).
type swapOnCopy struct {
	fakeFiles
	before, after []byte
}

func (s swapOnCopy) Copy(ctx context.Context, src, dst string) error {
	s.put(src, s.before)
	err := s.fakeFiles.Copy(ctx, src, dst)
	s.put(src, s.after)
	return err
}

func (s swapOnCopy) put(key string, data []byte) {
	if data != nil {
		o := s.fakeFiles[key]
		o.data = data
		s.fakeFiles[key] = o
	}
}

// What the provider (or the assembly) reads is the copy taken for the
// work and checked, never the upload, whose upload_url still takes PUTs:
// bytes put before the copy are the ones checked (an image swapped for
// anything else is refused), and bytes put after it never reach the
// snapshot; a generation submitted later is handed the same copy.
func TestTheCheckedSnapshotIsWhatTheWorkReads(t *testing.T) {
	made := time.Date(2026, 11, 21, 18, 0, 0, 0, time.UTC)
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR the picture checked")
	html := []byte("<html><script>not the picture</script></html>")
	id := domain.NewFileID(made)
	const work = "3348f3aa-5fd0-4758-860a-3ebaf4cfbcc7"
	at := func() time.Time { return made.Add(time.Minute) }

	t.Run("bytes swapped after the check", func(t *testing.T) {
		files := fakeFiles{UploadKey("usr_a", id): {png, "image/png", 0}}
		r := &FileInputs{Objects: swapOnCopy{fakeFiles: files, after: html}, Now: at}
		u, err := r.Resolve(context.Background(), "usr_a", work, domain.FileURL(id))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(u, SnapshotKey(work, id)) || strings.Contains(u, UploadsPrefix) {
			t.Errorf("the provider's URL %q is not the work's copy %s", u, SnapshotKey(work, id))
		}
		if got := files[SnapshotKey(work, id)].data; !bytes.Equal(got, png) {
			t.Errorf("the copy holds %q, want the PNG checked", got)
		}
		again, err := r.SnapshotURL(context.Background(), "usr_a", work, domain.FileURL(id))
		if err != nil || !strings.Contains(again, SnapshotKey(work, id)) {
			t.Errorf("SnapshotURL = %q, %v; want the same copy's URL", again, err)
		}
	})
	t.Run("bytes swapped between the listing and the copy", func(t *testing.T) {
		files := fakeFiles{UploadKey("usr_a", id): {png, "image/png", 0}}
		r := &FileInputs{Objects: swapOnCopy{fakeFiles: files, before: html}, Now: at}
		_, err := r.Resolve(context.Background(), "usr_a", work, domain.FileURL(id))
		var unusable *UnusableFileError
		if !errors.As(err, &unusable) || !strings.Contains(unusable.Reason, "its bytes are not a PNG") {
			t.Errorf("Resolve = %v; want the copy's bytes refused", err)
		}
	})
	t.Run("audio swapped after the check", func(t *testing.T) {
		mp3 := []byte("ID3\x04\x00\x00\x00\x00\x00\x00 the song checked")
		files := fakeFiles{UploadKey("usr_a", id): {mp3, "audio/mpeg", 0}}
		r := &FileInputs{Objects: swapOnCopy{fakeFiles: files, after: html}, Now: at}
		path := filepath.Join(t.TempDir(), "music.audio")
		if err := r.FetchAudio(context.Background(), "usr_a", work, domain.FileURL(id), path); err != nil {
			t.Fatal(err)
		}
		if got := files[SnapshotKey(work, id)].data; !bytes.Equal(got, mp3) {
			t.Errorf("the copy the assembly reads holds %q, want the song checked", got)
		}
	})
}

// Work recorded before the snapshots were taken (its create checked the
// upload and copied nothing) still reads its file: where the work's copy
// is not there, the upload is read instead, checked by its bytes as at
// create (an image of the type declared, audio uploaded as audio, within
// the limit); an upload that fails the check, or is gone, is unusable.
func TestWorkWithoutASnapshotReadsItsUploadChecked(t *testing.T) {
	made := time.Date(2026, 11, 21, 18, 0, 0, 0, time.UTC)
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR the picture")
	mp3 := []byte("ID3\x04\x00\x00\x00\x00\x00\x00 the song")
	html := []byte("<html><script>not the picture</script></html>")
	id := domain.NewFileID(made)
	const work = "3348f3aa-5fd0-4758-860a-3ebaf4cfbcc7"
	upload, snapshot := UploadKey("usr_a", id), SnapshotKey(work, id)
	type object = struct {
		data  []byte
		ctype string
		size  int64
	}
	for _, tt := range []struct {
		name    string
		files   fakeFiles
		audio   bool
		wantKey string // "" for unusable
		reason  string
	}{
		{"an image whose copy is there", fakeFiles{upload: {html, "image/png", 0}, snapshot: {png, "image/png", 0}}, false, snapshot, ""},
		{"an image with no copy", fakeFiles{upload: {png, "image/png", 0}}, false, upload, ""},
		{"audio with no copy", fakeFiles{upload: {mp3, "audio/mpeg", 0}}, true, upload, ""},
		{"an image with no copy whose bytes are not the type declared", fakeFiles{upload: {html, "image/png", 0}}, false, "", "its bytes are not a PNG"},
		{"an image with no copy over the limit", fakeFiles{upload: object{png, "image/png", domain.MaxUploadBytes + 1}}, false, "", "over the 104857600-byte (100 MiB) limit"},
		{"an image file in music with no copy", fakeFiles{upload: {png, "image/png", 0}}, true, "", "not audio"},
		{"no copy and no upload", fakeFiles{}, false, "", "no longer there"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := &FileInputs{Objects: tt.files, Now: func() time.Time { return made.Add(time.Minute) }}
			var key string
			var err error
			if tt.audio {
				key, err = r.AudioKey(context.Background(), "usr_a", work, domain.FileURL(id))
			} else {
				key, err = r.SnapshotURL(context.Background(), "usr_a", work, domain.FileURL(id))
			}
			var unusable *UnusableFileError
			switch {
			case tt.wantKey != "" && (err != nil || !strings.Contains(key, tt.wantKey)):
				t.Errorf("= %q, %v; want %s read", key, err, tt.wantKey)
			case tt.wantKey == "" && (!errors.As(err, &unusable) || !strings.Contains(unusable.Reason, tt.reason)):
				t.Errorf("= %q, %v; want unusable: %s", key, err, tt.reason)
			}
		})
	}
}

// A file id tells when it was made, to the millisecond, and so when it
// expires; the file URL names it and nothing else.
func TestFileIDsCarryTheirTime(t *testing.T) {
	made := time.Date(2026, 11, 21, 18, 0, 0, 123e6, time.UTC)
	id := domain.NewFileID(made)
	got, err := domain.FileMadeAt(id)
	if err != nil || !got.Equal(made) {
		t.Fatalf("FileMadeAt(NewFileID(%s)) = %s, %v", made, got, err)
	}
	if parsed, ok := domain.ParseFileURL(domain.FileURL(id)); !ok || parsed != id {
		t.Errorf("ParseFileURL(FileURL(%s)) = %q, %v", id, parsed, ok)
	}
	for _, bad := range []string{"mediagen://files/" + strings.ToUpper(id), "mediagen://files/../" + id, "mediagen://files/3348f3aa-5fd0-4758-860a-3ebaf4cfbcc7"} {
		if _, ok := domain.ParseFileURL(bad); ok {
			t.Errorf("ParseFileURL(%q) accepted it", bad)
		}
	}
}

// FetchAudio copies only the caller's audio file, uploaded, within its
// day: an image file, another account's or an expired one is an
// *UnusableFileError saying why (a 400 of music_url), and nothing is
// copied.
func TestFetchAudioCopiesOnlyTheCallersAudioFile(t *testing.T) {
	made := time.Date(2026, 11, 21, 18, 0, 0, 0, time.UTC)
	mp3 := []byte("ID3\x04\x00\x00\x00\x00\x00\x00 the song")
	id := func(suffix byte) string {
		s := domain.NewFileID(made)
		return s[:len(s)-1] + string(suffix)
	}
	song, picture, theirs := id('1'), id('2'), id('3')
	files := fakeFiles{
		UploadKey("usr_a", song):    {mp3, "audio/mpeg", 0},
		UploadKey("usr_a", picture): {[]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), "image/png", 0},
		UploadKey("usr_b", theirs):  {mp3, "audio/mpeg", 0},
	}
	tests := []struct {
		name, ref string
		at        time.Time
		want      string // "" for the file copied
	}{
		{"the caller's mp3", domain.FileURL(song), made.Add(time.Hour), ""},
		{"an image file", domain.FileURL(picture), made.Add(time.Hour), "is image/png, not audio"},
		{"another account's file", domain.FileURL(theirs), made.Add(time.Hour), "is unknown"},
		{"a day later", domain.FileURL(song), made.Add(24 * time.Hour), "expired"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "music.audio")
			r := &FileInputs{Objects: files, Now: func() time.Time { return tt.at }}
			err := r.FetchAudio(context.Background(), "usr_a", "3348f3aa-5fd0-4758-860a-3ebaf4cfbcc7", tt.ref, path)
			got, readErr := os.ReadFile(path)
			var unusable *UnusableFileError
			switch {
			case tt.want == "" && (err != nil || !bytes.Equal(got, mp3)):
				t.Errorf("FetchAudio = %v, copied %q (%v); want the file's bytes", err, got, readErr)
			case tt.want != "" && (!errors.As(err, &unusable) || !strings.Contains(unusable.Reason, tt.want) || !errors.Is(err, domain.ErrInvalid)):
				t.Errorf("FetchAudio = %v; want an unusable file saying %q", err, tt.want)
			case tt.want != "" && readErr == nil:
				t.Errorf("FetchAudio refused the file (%v) but copied it", err)
			}
		})
	}
}

// POST /api/files takes the audio types music_url reads, as well as the
// images, and nothing else.
func TestUploadsTakeImageAndAudioTypes(t *testing.T) {
	u := &Uploads{Signer: signerFunc(func(_ context.Context, key, ctype string, _ int64, _ time.Duration) (string, error) {
		return "https://bucket.example/" + key, nil
	})}
	for _, ctype := range []string{"image/png", "audio/mpeg", "audio/wav", "audio/mp4"} {
		if up, err := u.Create(context.Background(), "usr_a", []byte(`{"content_type": "`+ctype+`", "size": 1000}`)); err != nil || up.ContentType != ctype {
			t.Errorf("Create(%s) = %+v, %v; want a file of that type", ctype, up, err)
		}
	}
	for _, ctype := range []string{"audio/ogg", "video/mp4", "text/plain"} {
		if _, err := u.Create(context.Background(), "usr_a", []byte(`{"content_type": "`+ctype+`", "size": 1000}`)); !errors.Is(err, domain.ErrInvalid) || !strings.Contains(err.Error(), "audio/mpeg") {
			t.Errorf("Create(%s) = %v; want a 400 naming the types taken", ctype, err)
		}
	}
}

// A declared size is signed into the PUT (S3 signs one exact
// Content-Length, no range); the size is optional (issue #27), and a file
// made without one is presigned with no length (its size is measured at
// use); one out of range is a 400 naming size, and nothing is presigned.
func TestUploadsSignTheSizeDeclared(t *testing.T) {
	var signed []int64
	u := &Uploads{Signer: signerFunc(func(_ context.Context, key, _ string, size int64, _ time.Duration) (string, error) {
		signed = append(signed, size)
		return "https://bucket.example/" + key, nil
	})}
	for _, tt := range []struct {
		body string
		want string // "" for a file made
	}{
		{`{"content_type": "image/png", "size": 48213}`, ""},
		{`{"content_type": "image/png", "size": 104857600}`, ""},
		{`{"content_type": "image/png"}`, ""},
		{`{"content_type": "image/png", "size": 104857601}`, "size: must be 1 to 104857600 bytes"},
		{`{"content_type": "image/png", "size": 0}`, "size: must be 1 to 104857600 bytes"},
		{`{"content_type": "image/png", "size": "48213"}`, "size: must be an integer"},
	} {
		signed = nil
		up, err := u.Create(context.Background(), "usr_a", []byte(tt.body))
		switch {
		case tt.want == "" && (err != nil || len(signed) != 1 || signed[0] != up.Size || (up.Size == 0) == strings.Contains(tt.body, "size")):
			t.Errorf("Create(%s) = %+v, %v, signed sizes %v; want a file whose PUT is signed for its size", tt.body, up, err, signed)
		case tt.want != "" && (!errors.Is(err, domain.ErrInvalid) || !strings.Contains(err.Error(), tt.want) || len(signed) != 0):
			t.Errorf("Create(%s) = %v, signed sizes %v; want a 400 saying %q and nothing presigned", tt.body, err, signed, tt.want)
		}
	}
}

type signerFunc func(ctx context.Context, key, contentType string, size int64, lifetime time.Duration) (string, error)

func (f signerFunc) PresignPut(ctx context.Context, key, contentType string, size int64, lifetime time.Duration) (string, error) {
	return f(ctx, key, contentType, size, lifetime)
}
