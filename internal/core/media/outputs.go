package media

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// GenerationPrefix is the key prefix of every object a generation's
// outputs are stored under.
func GenerationPrefix(generationUUID string) string { return "generations/" + generationUUID + "/" }

// LongVideoPrefix is the key prefix of every object of a long-form video:
// its final video and its working files (the scenes' clips, the narration).
func LongVideoPrefix(videoID string) string { return "long-videos/" + videoID + "/" }

// ExpiringPrefixes hold every object the service stores (GenerationPrefix
// and LongVideoPrefix are under them): the output bucket's lifecycle rules
// expire each after the retention (template.yaml), and the local object
// store does the same.
var ExpiringPrefixes = []string{"generations/", "long-videos/"}

// Objects lists and deletes the bucket's objects.
type Objects interface {
	// Keys lists the keys under prefix.
	Keys(ctx context.Context, prefix string) ([]string, error)
	// Delete deletes keys; a key already gone is not an error.
	Delete(ctx context.Context, keys []string) error
}

// Retainer lists and tags the bucket's objects.
type Retainer interface {
	Keys(ctx context.Context, prefix string) ([]string, error)
	// Tag replaces the object's tags.
	Tag(ctx context.Context, key string, tags map[string]string) error
}

// KeepFor gives every object under prefix a retention of days: the
// default needs nothing (the bucket's prefix rules expire every object
// then); a shorter one tags each object with domain.RetentionTag, whose
// lifecycle rule expires it sooner. It runs when a record completes,
// after its last object was written: a write replaces an object's tags,
// so a repeat of the step tags again.
func KeepFor(ctx context.Context, r Retainer, prefix string, days int) error {
	if days == domain.DefaultRetentionDays {
		return nil
	}
	if err := domain.CheckRetentionDays(days); err != nil {
		return err
	}
	if r == nil {
		return fmt.Errorf("keep %s for %d days: no bucket to tag the objects in", prefix, days)
	}
	keys, err := r.Keys(ctx, prefix)
	if err != nil {
		return fmt.Errorf("keep %s for %d days: %w", prefix, days, err)
	}
	tags := map[string]string{domain.RetentionTag: strconv.Itoa(days)}
	for _, k := range keys {
		if err := r.Tag(ctx, k, tags); err != nil {
			return fmt.Errorf("keep %s for %d days: %w", k, days, err)
		}
	}
	return nil
}

// CacheControl is the Cache-Control of every object the service stores,
// which the CDN and browsers keep to: a key is written once (it carries its
// work's UUID), so immutable; and a day at most, the shortest retention an
// account may choose (domain.RetentionChoices), so a cached copy outlives
// its expired object by a day at most. A deleted record's files are
// invalidated at the CDN (Invalidator).
const CacheControl = "public, max-age=86400, immutable"

// Invalidator drops paths from the CDN in front of the bucket, so a file
// deleted before its cached copy expires stops being served. A path is
// the URL path under the media base URL, "/" first; a trailing "*" covers
// every path that begins with the rest.
type Invalidator interface {
	Invalidate(ctx context.Context, paths []string) error
}

// invalidationPaths are the CDN paths of every object under prefix.
func invalidationPaths(prefix string) []string { return []string{"/" + prefix + "*"} }

// filesOf is a record whose stored files a caller deletes.
type filesOf struct {
	// What names the record in errors ("generation <uuid>").
	What   string
	Status domain.Status
	Files  domain.StoredFiles
	// Prefix is where every object of the record is (GenerationPrefix,
	// LongVideoPrefix): listing it finds all the service stored, whatever
	// the extension or the step that stored it.
	Prefix string
	// Mark moves the record's removal forward (the store's
	// Set*Removal).
	Mark func(ctx context.Context, r domain.Removal) error
	// CDN, when set, caches the files: their paths are invalidated once
	// they are deleted. nil: nothing caches them (the local file origin).
	CDN Invalidator
	// Log takes an invalidation that failed.
	Log *slog.Logger
}

// removeFiles deletes a final record's stored files in the order that
// keeps the record honest under crashes and retries: the record is marked
// removing, so its URLs are no longer handed out; every object under its
// prefix is deleted; only then is it marked removed. A crash in between
// leaves it removing, with no URL served and files perhaps left, and a
// repeat of the request finishes the job. A record still processing is a
// conflict (its outputs are still being made) and nothing changes; one
// removed already is left as it is.
func removeFiles(ctx context.Context, objects Objects, r filesOf) error {
	if r.Status == domain.StatusProcessing {
		return fmt.Errorf("%w: %s is still processing; its outputs can be deleted once it ends (or is canceled)", domain.ErrConflict, r.What)
	}
	if r.Files.Removal == domain.RemovalRemoved {
		return nil
	}
	if err := r.Mark(ctx, domain.RemovalRemoving); err != nil {
		return fmt.Errorf("mark %s removing: %w", r.What, err)
	}
	keys, err := objects.Keys(ctx, r.Prefix)
	if err != nil {
		return fmt.Errorf("list the files of %s: %w", r.What, err)
	}
	if err := objects.Delete(ctx, keys); err != nil {
		return fmt.Errorf("delete the files of %s: %w", r.What, err)
	}
	// After the delete, so the CDN cannot fetch them again. By prefix, not
	// by the keys just listed: a repeat after a crash lists none. A failure
	// does not fail the request (the files are gone; the cached copies
	// expire within CacheControl's max-age): it is logged.
	if r.CDN != nil {
		paths := invalidationPaths(r.Prefix)
		if err := r.CDN.Invalidate(ctx, paths); err != nil {
			domain.Logger(r.Log).ErrorContext(ctx, "CDN invalidation failed: the deleted files stay cached until they expire", "record", r.What, "paths", paths, "error", err)
		}
	}
	if err := r.Mark(ctx, domain.RemovalRemoved); err != nil {
		return fmt.Errorf("mark %s removed: %w", r.What, err)
	}
	return nil
}

// Outputs is the delete-output route's use case for either kind of work
// (a generation, a long video): it finds the caller's record, removes its
// files (removeFiles) and answers the record read again, removed.
type Outputs[W interface{ Work() domain.Work }] struct {
	// Find reads the caller's record (another owner's is not found).
	Find func(ctx context.Context, userID, id string) (W, error)
	// Get reads a record by its id.
	Get func(ctx context.Context, id string) (W, error)
	// Prefix is where the record's objects are (GenerationPrefix,
	// LongVideoPrefix).
	Prefix func(id string) string
	// InUse, when set, says why a record's files cannot go now though it
	// is final (a long video's scene regenerate reuses the other scenes'
	// files): a conflict, and nothing changes.
	InUse func(W) error
	// SetRemoval records the removal's progress (the store's Set*Removal).
	SetRemoval func(ctx context.Context, id string, r domain.Removal, at time.Time) error
	Objects    Objects
	// CDN, when set, caches the files (filesOf.CDN).
	CDN Invalidator
	Log *slog.Logger
	Now func() time.Time
}

// Remove deletes every file stored for a caller's final record. A repeat
// answers the same; a record still processing is a conflict and nothing
// changes.
func (o Outputs[W]) Remove(ctx context.Context, userID, id string) (W, error) {
	var none W
	rec, err := o.Find(ctx, userID, id)
	if err != nil {
		return none, err
	}
	if o.InUse != nil {
		if err := o.InUse(rec); err != nil {
			return none, err
		}
	}
	w := rec.Work()
	err = removeFiles(ctx, o.Objects, filesOf{What: w.String(), Status: w.Status, Files: w.Files, Prefix: o.Prefix(w.ID),
		CDN: o.CDN, Log: o.Log, Mark: func(ctx context.Context, r domain.Removal) error {
			return o.SetRemoval(ctx, w.ID, r, domain.Now(o.Now))
		}})
	if err != nil {
		return none, err
	}
	if w.Files.Removal != domain.RemovalRemoved {
		domain.Logger(o.Log).InfoContext(ctx, "outputs deleted", "user_id", userID, "kind", w.Noun, "id", w.ID)
	}
	read, err := o.Get(ctx, w.ID)
	if err != nil {
		return none, fmt.Errorf("reread %s: %w", w, err)
	}
	return read, nil
}

// UncachingDeleter deletes objects, and can drop those the API handed out
// (Published) from the CDN's caches as it deletes them: a file deleted
// while its URL is still cached (a long video's revision that a scene
// regenerate replaced) then stops being served at once rather than within
// CacheControl's max-age.
type UncachingDeleter struct {
	Objects interface {
		Delete(ctx context.Context, keys []string) error
	}
	// CDN caches the published files; nil: nothing does (the local file
	// origin, sam local invoke).
	CDN Invalidator
	Log *slog.Logger
}

// Delete deletes keys that were never served (a key already gone is not
// an error): no invalidation, which CloudFront bills by the path.
func (d UncachingDeleter) Delete(ctx context.Context, keys []string) error {
	return d.Objects.Delete(ctx, keys)
}

// DeleteServed deletes keys whose URLs were handed out, then invalidates
// the published ones. An invalidation that fails is logged, not
// returned: the files are gone and their cached copies expire.
func (d UncachingDeleter) DeleteServed(ctx context.Context, keys []string) error {
	if err := d.Objects.Delete(ctx, keys); err != nil {
		return err
	}
	var paths []string
	for _, key := range keys {
		if Published(key) {
			paths = append(paths, "/"+key)
		}
	}
	if d.CDN == nil || len(paths) == 0 {
		return nil
	}
	if err := d.CDN.Invalidate(ctx, paths); err != nil {
		domain.Logger(d.Log).ErrorContext(ctx, "CDN invalidation failed: the deleted files stay cached until they expire", "paths", paths, "error", err)
	}
	return nil
}
