package domain

import (
	"strings"
	"time"

	"github.com/google/uuid"
)

// Uploaded files (POST /api/files): a client uploads an image once, to a
// presigned URL of the output bucket, and names it in any image field of
// a generate request by its file URL.
const (
	// fileURLPrefix begins a file URL, mediagen://files/<file_id>: what an
	// image field takes to name an uploaded file. It is no address anyone
	// can fetch, so it carries nothing to leak; the service hands the
	// provider a short-lived presigned GET URL of the file in its place.
	fileURLPrefix = "mediagen://files/"
	// MaxUploadBytes is the largest file: 100 MiB, as Replicate's files.
	MaxUploadBytes = 100 << 20
	// UploadRetention is how long a file may be used after it was made
	// (its expires_at); the bucket's lifecycle deletes it after a day,
	// rounded up to midnight UTC.
	UploadRetention = 24 * time.Hour
)

// UploadTypes are the image content types a file may declare: the types
// every image field takes, checked against the file's bytes when it is
// first used.
var UploadTypes = []string{"image/png", "image/jpeg", "image/webp", "image/gif"}

// AudioUploadTypes are the audio content types a file may declare: what a
// long video's music_url takes (the formats its music check reads),
// checked as audio (ffprobe) when the file is first used.
var AudioUploadTypes = []string{"audio/mpeg", "audio/wav", "audio/mp4"}

// FileURL is the URL an image field takes for the file id.
func FileURL(id string) string { return fileURLPrefix + id }

// NewFileID is a file's id: a version 7 UUID whose time is now, so that
// the id alone says when the file was made and when it expires.
func NewFileID(now time.Time) string {
	id := uuid.Must(uuid.NewV7())
	ms := now.UnixMilli()
	for i := 5; i >= 0; i-- {
		id[i] = byte(ms)
		ms >>= 8
	}
	return id.String()
}

// ParseFileURL is the file id a file URL names; ok is false for anything
// that is not mediagen://files/ and a file id.
func ParseFileURL(s string) (id string, ok bool) {
	rest, found := strings.CutPrefix(s, fileURLPrefix)
	if !found {
		return "", false
	}
	if _, err := FileMadeAt(rest); err != nil {
		return "", false
	}
	return rest, true
}

// IsFileURL reports whether s is meant as a file URL (its scheme), valid
// or not.
func IsFileURL(s string) bool {
	return len(s) >= len("mediagen:") && strings.EqualFold(s[:len("mediagen:")], "mediagen:")
}

// FileMadeAt is when the file id was made (its version 7 time).
func FileMadeAt(id string) (time.Time, error) {
	u, err := uuid.Parse(id)
	if err != nil || u.Version() != 7 || u.Variant() != uuid.RFC4122 || len(id) != 36 || strings.ToLower(id) != id {
		return time.Time{}, ErrInvalid
	}
	sec, nsec := u.Time().UnixTime()
	return time.Unix(sec, nsec).UTC(), nil
}

// FileExpiresAt is when a file made at made stops being usable.
func FileExpiresAt(made time.Time) time.Time { return made.Add(UploadRetention) }
