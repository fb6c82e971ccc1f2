package generation

import (
	"context"
	"fmt"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/media"
)

// OutputStore is what deleting a generation's outputs needs from the store.
type OutputStore interface {
	GenerationReader
	SetGenerationRemoval(ctx context.Context, uuid string, r domain.Removal, at time.Time) error
}

// OutputRemover deletes generations' stored files: the delete-output
// route's use case. It needs the store and the bucket, nothing upstream.
type OutputRemover struct {
	store    OutputStore
	objects  media.Objects
	cdn      media.Invalidator
	settings Settings
}

// NewOutputRemover deletes from objects, invalidates the deleted files at
// cdn (nil: nothing caches them) and records it in store.
func NewOutputRemover(store OutputStore, objects media.Objects, cdn media.Invalidator, settings Settings) *OutputRemover {
	return &OutputRemover{store: store, objects: objects, cdn: cdn, settings: settings}
}

// RemoveOutput deletes every file stored for a caller's final generation
// (media.RemoveFiles) and answers the record, removed. A repeat answers the
// same; a generation still processing is a conflict and nothing changes.
func (r *OutputRemover) RemoveOutput(ctx context.Context, userID, id string) (domain.Generation, error) {
	g, err := NewReader(r.store, nil, nil).Lookup(ctx, userID, id)
	if err != nil {
		return domain.Generation{}, err
	}
	wasRemoved := g.Files.Removal == domain.RemovalRemoved
	err = media.RemoveFiles(ctx, r.objects, media.FilesOf{What: "generation " + g.UUID, Status: g.Status, Files: g.Files,
		Prefix: media.GenerationPrefix(g.UUID), CDN: r.cdn, Log: r.settings.Log, Mark: func(ctx context.Context, rm domain.Removal) error {
			return r.store.SetGenerationRemoval(ctx, g.UUID, rm, domain.Now(r.settings.Now))
		}})
	if err != nil {
		return domain.Generation{}, err
	}
	if !wasRemoved {
		domain.Logger(r.settings.Log).InfoContext(ctx, "generation outputs deleted", "user_id", userID, "generation_id", g.UUID)
	}
	read, err := r.store.GetGeneration(ctx, g.UUID)
	if err != nil {
		return domain.Generation{}, fmt.Errorf("reread %s: %w", g.UUID, err)
	}
	return read, nil
}
