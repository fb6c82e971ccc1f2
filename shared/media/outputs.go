package media

import (
	"context"
	"fmt"

	"github.com/mediagen-dev/mediagen/shared/domain"
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

// FilesOf is a record whose stored files a caller deletes.
type FilesOf struct {
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
}

// RemoveFiles deletes a final record's stored files in the order that
// keeps the record honest under crashes and retries: the record is marked
// removing, so its URLs are no longer handed out; every object under its
// prefix is deleted; only then is it marked removed. A crash in between
// leaves it removing, with no URL served and files perhaps left, and a
// repeat of the request finishes the job. A record still processing is a
// conflict (its outputs are still being made) and nothing changes; one
// removed already is left as it is.
func RemoveFiles(ctx context.Context, objects Objects, r FilesOf) error {
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
	if err := r.Mark(ctx, domain.RemovalRemoved); err != nil {
		return fmt.Errorf("mark %s removed: %w", r.What, err)
	}
	return nil
}
