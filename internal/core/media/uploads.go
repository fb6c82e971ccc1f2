package media

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// UploadsPrefix holds the files clients upload (POST /api/files), each
// under its owner's user id: UploadKey. No origin serves them; the
// bucket's lifecycle rule expire-uploads deletes them after
// UploadRetentionDays.
const UploadsPrefix = "uploads/"

// UploadRetentionDays is the uploads' lifecycle rule: the shortest S3
// has, a day rounded up to midnight UTC, so a file outlives its
// domain.UploadRetention, which the service enforces itself.
const UploadRetentionDays = 1

// Lifetimes of the presigned URLs.
const (
	// uploadURLLifetime is how long a file's upload_url takes its PUT.
	uploadURLLifetime = 15 * time.Minute
	// inputURLLifetime is how long the GET URL of a file handed to a
	// provider in place of its file URL reads it: the longest a job runs
	// (a video's deadline, 30 minutes) and more, and far short of the
	// file's day.
	inputURLLifetime = time.Hour
)

// UploadCORS is the output bucket's CORS rule (template.yaml's
// CorsConfiguration; the local store applies the same): a page on any
// origin (the playground, wherever it is hosted) may PUT a file to its
// presigned upload URL with its Content-Type. The rule grants nothing by
// itself: S3 still takes only a request whose presigned signature holds,
// and no other method.
var UploadCORS = struct {
	AllowedOrigins, AllowedMethods, AllowedHeaders []string
	MaxAgeSeconds                                  int
}{[]string{"*"}, []string{"PUT"}, []string{"Content-Type"}, 3000}

// UploadKey is the key of a user's file. The owner is part of the key,
// so another account's file id names no object of the caller's: it is
// unknown, exactly as one that never was.
func UploadKey(userID, fileID string) string { return UploadsPrefix + userID + "/" + fileID }

// SnapshotKey is the key of the copy of a file that one piece of work (a
// generation, a long video) uses: made by the service (CopyObject) when
// the work is submitted, checked there, and the only object the provider
// (or the assembly) ever reads. The file's upload_url stays valid for
// uploadURLLifetime and writes only UploadKey, so bytes PUT after the
// check never reach the work. It is under InputsPrefix, whose lifecycle
// rule deletes it after InputRetentionDays (the work ends within its
// deadline, an hour at most).
func SnapshotKey(workID, fileID string) string { return InputsPrefix + workID + "/files/" + fileID }

// UploadSigner presigns a file's PUT: the URL takes only a request with
// the content type given and, when size > 0, that exact Content-Length
// (signed), before lifetime ends. With size 0 the length is not signed:
// S3 cannot bound a presigned PUT otherwise, so such a file is measured
// when it is used (FileInputs).
type UploadSigner interface {
	PresignPut(ctx context.Context, key, contentType string, size int64, lifetime time.Duration) (string, error)
}

// Upload is a file made by POST /api/files, with where to upload it.
type Upload struct {
	FileID      string
	ContentType string
	// Size is the size declared, which the upload's PUT is held to (0:
	// none declared).
	Size int64
	// UploadURL takes a PUT of the file, with Content-Type ContentType (and
	// Content-Length Size when declared), until UploadExpiresAt.
	UploadURL       string
	UploadExpiresAt time.Time
	// URL is what an image field takes: domain.FileURL(FileID).
	URL string
	// ExpiresAt is when the file stops being usable.
	ExpiresAt time.Time
}

// Uploads is the files route's use case: it makes a file id and presigns
// its upload.
type Uploads struct {
	Signer UploadSigner
	Now    func() time.Time
}

// Create reads {"content_type": "image/png", "size": 12345} (size
// optional, as issue #27 specifies the body) and makes the caller's file.
// A presigned PUT signs one exact Content-Length or none (S3 has no
// length range for a PUT): a declared size is signed, so the bucket
// refuses any other length; without one the upload can be of any length,
// and the file is measured at its use (FileInputs: over
// domain.MaxUploadBytes it is refused there, before any credit moves),
// and deleted by the uploads' lifecycle rule either way. A content type
// other than the images' (domain.UploadTypes) and audio's
// (domain.AudioUploadTypes), a size out of 1..domain.MaxUploadBytes, or
// an unknown field is a *catalog.ValidationError naming every bad field.
func (u *Uploads) Create(ctx context.Context, userID string, body []byte) (Upload, error) {
	ctype, size, err := parseUpload(body)
	if err != nil {
		return Upload{}, err
	}
	now := domain.Now(u.Now)
	id := domain.NewFileID(now)
	up := Upload{FileID: id, ContentType: ctype, Size: size, URL: domain.FileURL(id),
		UploadExpiresAt: now.Add(uploadURLLifetime).UTC(), ExpiresAt: domain.FileExpiresAt(now).UTC()}
	if up.UploadURL, err = u.Signer.PresignPut(ctx, UploadKey(userID, id), ctype, size, uploadURLLifetime); err != nil {
		return Upload{}, fmt.Errorf("presign the upload of file %s: %w", id, err)
	}
	return up, nil
}

func parseUpload(body []byte) (ctype string, size int64, err error) {
	obj, err := catalog.DecodeObject(body)
	if err != nil {
		return "", 0, err
	}
	var p catalog.Problems
	p.Unknown("", obj, []string{"content_type", "size"})
	all := slices.Concat(domain.UploadTypes, domain.AudioUploadTypes)
	types := `"` + strings.Join(all, `", "`) + `"`
	switch v, ok := obj["content_type"]; {
	case !ok:
		p.Add("content_type", "is required: one of "+types)
	default:
		s, _ := v.(string)
		if !slices.Contains(all, s) {
			p.Add("content_type", "must be one of "+types)
		}
		ctype = s
	}
	if v, ok := obj["size"]; ok {
		n, isNum := v.(json.Number)
		i, convErr := n.Int64()
		switch {
		case !isNum || convErr != nil:
			p.Add("size", "must be an integer number of bytes")
		case i < 1 || i > domain.MaxUploadBytes:
			p.Add("size", fmt.Sprintf("must be 1 to %d bytes (100 MiB), got %d", domain.MaxUploadBytes, i))
		default:
			size = i
		}
	}
	if len(p) > 0 {
		return "", 0, p.Err()
	}
	return ctype, size, nil
}

// FileObjects reads the uploaded files, snapshots them and presigns the
// snapshots' GET.
type FileObjects interface {
	// Size is the object's size; an object that is not there is
	// domain.ErrNotFound. (S3 answers a read of a missing key 403, not
	// 404, to a role that may not list the bucket: the adapter lists
	// the key, under uploads/ only.)
	Size(ctx context.Context, key string) (int64, error)
	// Copy copies the object src to dst inside the bucket (S3's
	// CopyObject: the bytes and the content type as they are at the
	// copy), replacing dst.
	Copy(ctx context.Context, src, dst string) error
	// Head is the size and stored content type of an object that is
	// there (a HeadObject of a key just written).
	Head(ctx context.Context, key string) (size int64, contentType string, err error)
	// ReadStart reads the first n bytes of an object (fewer if it is
	// shorter) and the content type it was stored with.
	ReadStart(ctx context.Context, key string, n int64) (head []byte, contentType string, err error)
	// GetFile downloads the object into the local file path.
	GetFile(ctx context.Context, key, path string) error
	PresignGet(ctx context.Context, key string, lifetime time.Duration) (string, error)
}

// UnusableFileError is a file URL that names no usable file of the
// caller: unknown (or another account's), expired, empty, too large, or
// whose bytes are not the image type it declared. It matches
// domain.ErrInvalid; Reason is for the client.
type UnusableFileError struct{ Reason string }

func (e *UnusableFileError) Error() string { return "unusable file: " + e.Reason }

func (e *UnusableFileError) Is(target error) bool { return target == domain.ErrInvalid }

// sniffBytes is how much of a file its type is told from
// (http.DetectContentType reads at most 512 bytes).
const sniffBytes = 512

// FileInputs resolves the file URLs of a generate request's image fields.
type FileInputs struct {
	Objects FileObjects
	Now     func() time.Time
}

// Resolve is a presigned GET URL, valid inputURLLifetime, of a snapshot
// of the caller's file that fileURL (mediagen://files/<id>) names, taken
// for the work workID (SnapshotKey) and checked: the file exists under the
// caller's id, has not expired, the snapshot is at most
// domain.MaxUploadBytes, and its first bytes are the image type it was
// uploaded as. The provider reads the snapshot, never the upload, whose
// upload_url may still take a PUT. Anything else (an audio file too) is
// an *UnusableFileError saying why.
func (f *FileInputs) Resolve(ctx context.Context, userID, workID, fileURL string) (string, error) {
	id, key, head, declared, err := f.snapshot(ctx, userID, workID, fileURL)
	if err != nil {
		return "", err
	}
	if err := imageProblem(id, head, declared); err != nil {
		return "", err
	}
	u, err := f.Objects.PresignGet(ctx, key, inputURLLifetime)
	if err != nil {
		return "", fmt.Errorf("presign the read of file %s: %w", id, err)
	}
	return u, nil
}

// SnapshotURL is a presigned GET URL, valid inputURLLifetime, of the
// snapshot Resolve took of fileURL's file for workID: what a generation
// that waited for a slot hands its provider when it is submitted, the
// very bytes checked at its create (the upload is not read again). A
// generation recorded before the snapshots were taken (no snapshot there)
// is handed its upload instead, checked as Resolve checks a snapshot
// (workKey).
func (f *FileInputs) SnapshotURL(ctx context.Context, userID, workID, fileURL string) (string, error) {
	id, key, err := f.workKey(ctx, userID, workID, fileURL, false)
	if err != nil {
		return "", err
	}
	u, err := f.Objects.PresignGet(ctx, key, inputURLLifetime)
	if err != nil {
		return "", fmt.Errorf("presign the read of file %s: %w", id, err)
	}
	return u, nil
}

// AudioKey is the key the assembly reads the audio file fileURL names
// from: the snapshot FetchAudio took for the video workID at its create,
// or, for a video recorded before the snapshots were taken (no snapshot
// there), the upload itself, checked as FetchAudio checks a snapshot
// (workKey).
func (f *FileInputs) AudioKey(ctx context.Context, userID, workID, fileURL string) (string, error) {
	_, key, err := f.workKey(ctx, userID, workID, fileURL, true)
	return key, err
}

// workKey is the object a piece of work reads for fileURL: its snapshot
// (SnapshotKey), checked at its create, when it is there; otherwise the
// caller's upload (UploadKey), for work recorded by the release before
// the snapshots, whose create checked the upload and left no copy. The
// snapshot is found by listing its key (Size: a HeadObject of a missing
// key is 403, not 404, to a role that may not list the bucket); the
// upload is then checked by its bytes as at create: there, not empty,
// within the limit, and an image whose first bytes are the type it was
// uploaded as (audio false) or a file uploaded as audio (audio true).
// Anything else is an *UnusableFileError.
func (f *FileInputs) workKey(ctx context.Context, userID, workID, fileURL string, audio bool) (id, key string, err error) {
	id, ok := domain.ParseFileURL(fileURL)
	if !ok {
		return "", "", unusable("must be mediagen://files/<file_id>, a file_id that POST /api/files made")
	}
	key = SnapshotKey(workID, id)
	_, err = f.Objects.Size(ctx, key)
	switch {
	case err == nil:
		return id, key, nil
	case !errors.Is(err, domain.ErrNotFound):
		return "", "", fmt.Errorf("file %s: %w", id, err)
	}
	key = UploadKey(userID, id)
	size, _, err := f.Objects.Head(ctx, key)
	switch {
	case errors.Is(err, domain.ErrNotFound):
		return "", "", unusable(fmt.Sprintf("file %s is no longer there", id))
	case err != nil:
		return "", "", fmt.Errorf("file %s: %w", id, err)
	}
	if err := sizeProblem(id, size); err != nil {
		return "", "", err
	}
	head, declared, err := f.Objects.ReadStart(ctx, key, sniffBytes)
	if err != nil {
		return "", "", fmt.Errorf("file %s: %w", id, err)
	}
	if audio {
		err = audioProblem(id, declared)
	} else {
		err = imageProblem(id, head, declared)
	}
	if err != nil {
		return "", "", err
	}
	return id, key, nil
}

// imageProblem is a file that is audio, or whose first bytes head are not
// the image type declared it was uploaded as.
func imageProblem(id string, head []byte, declared string) error {
	if slices.Contains(domain.AudioUploadTypes, declared) {
		return unusable(fmt.Sprintf("file %s is audio (%s): this field takes an image (%s)", id, declared, strings.Join(domain.UploadTypes, ", ")))
	}
	if got := http.DetectContentType(head); got != declared || !slices.Contains(domain.UploadTypes, got) {
		return unusable(fmt.Sprintf("file %s was uploaded as %s but its bytes are %s", id, declared, describeType(got)))
	}
	return nil
}

// audioProblem is a file not uploaded as audio.
func audioProblem(id, declared string) error {
	if !slices.Contains(domain.AudioUploadTypes, declared) {
		return unusable(fmt.Sprintf("file %s is %s, not audio: music is a file uploaded as %s", id, declared, strings.Join(domain.AudioUploadTypes, ", ")))
	}
	return nil
}

// FetchAudio snapshots the caller's audio file that fileURL names for the
// work workID (SnapshotKey, which the assembly reads) and downloads the
// snapshot into path, once it is checked as Resolve checks an image (the
// caller's, not expired, not empty, within the limit) and was uploaded as
// one of domain.AudioUploadTypes. Whether its bytes are audio is the
// caller's to check (ffprobe reads the whole file; no magic number tells
// every mp3). Anything else (an image file too) is an
// *UnusableFileError.
func (f *FileInputs) FetchAudio(ctx context.Context, userID, workID, fileURL, path string) error {
	id, key, _, declared, err := f.snapshot(ctx, userID, workID, fileURL)
	if err != nil {
		return err
	}
	if err := audioProblem(id, declared); err != nil {
		return err
	}
	if err := f.Objects.GetFile(ctx, key, path); err != nil {
		return fmt.Errorf("file %s: %w", id, err)
	}
	return nil
}

// snapshot checks what every use of a file needs and copies it for the
// work: fileURL names a file of the caller's that is there, not expired,
// and (listed) not empty and within the limit; it is then copied to
// SnapshotKey(workID, id), and the copy, the only object read from then
// on, is measured again (the upload may have been replaced between the
// listing and the copy). It answers the file's id, the snapshot's key,
// its first bytes and the content type it was uploaded as (which its
// presigned PUT held it to, and the copy keeps).
func (f *FileInputs) snapshot(ctx context.Context, userID, workID, fileURL string) (id, key string, head []byte, declared string, err error) {
	id, ok := domain.ParseFileURL(fileURL)
	if !ok {
		return "", "", nil, "", unusable("must be mediagen://files/<file_id>, a file_id that POST /api/files made")
	}
	upload := UploadKey(userID, id)
	size, err := f.Objects.Size(ctx, upload)
	switch {
	case errors.Is(err, domain.ErrNotFound):
		return "", "", nil, "", unusable(fmt.Sprintf("file %s is unknown: make it with POST /api/files and PUT its bytes to its upload_url first", id))
	case err != nil:
		return "", "", nil, "", fmt.Errorf("file %s: %w", id, err)
	}
	made, _ := domain.FileMadeAt(id)
	if now := domain.Now(f.Now); !now.Before(domain.FileExpiresAt(made)) {
		return "", "", nil, "", unusable(fmt.Sprintf("file %s expired at %s (files are kept %s)", id, domain.FileExpiresAt(made).UTC().Format(time.RFC3339), domain.UploadRetention))
	}
	if err := sizeProblem(id, size); err != nil {
		return "", "", nil, "", err
	}
	key = SnapshotKey(workID, id)
	if err := f.Objects.Copy(ctx, upload, key); err != nil {
		return "", "", nil, "", fmt.Errorf("file %s: snapshot: %w", id, err)
	}
	if size, _, err = f.Objects.Head(ctx, key); err != nil {
		return "", "", nil, "", fmt.Errorf("file %s: %w", id, err)
	}
	if err := sizeProblem(id, size); err != nil {
		return "", "", nil, "", err
	}
	head, declared, err = f.Objects.ReadStart(ctx, key, sniffBytes)
	if err != nil {
		return "", "", nil, "", fmt.Errorf("file %s: %w", id, err)
	}
	return id, key, head, declared, nil
}

// sizeProblem is an empty file, or one over domain.MaxUploadBytes.
func sizeProblem(id string, size int64) error {
	switch {
	case size == 0:
		return unusable(fmt.Sprintf("file %s is empty: PUT its bytes to its upload_url", id))
	case size > domain.MaxUploadBytes:
		return unusable(fmt.Sprintf("file %s is %d bytes, over the %d-byte (100 MiB) limit", id, size, domain.MaxUploadBytes))
	}
	return nil
}

func describeType(sniffed string) string {
	if slices.Contains(domain.UploadTypes, sniffed) {
		return sniffed
	}
	return "not a PNG, JPEG, WebP or GIF image"
}

func unusable(reason string) error { return &UnusableFileError{Reason: reason} }
