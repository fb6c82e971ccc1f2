package longform

import (
	"context"
	"fmt"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/media"
)

// OutputStore is what deleting a video's files needs from the store.
type OutputStore interface {
	VideoReader
	SetLongVideoRemoval(ctx context.Context, id string, r domain.Removal, at time.Time) error
}

// OutputRemover deletes videos' stored files: the delete-output route's
// use case. It needs the store and the bucket, nothing else.
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

// RemoveOutput deletes every file stored for a caller's final video (its
// final video, the scenes' clips and the narration; media.RemoveFiles) and
// answers the record, removed. A repeat answers the same; a video still
// processing, or with a scene regenerate running (which reuses the other
// scenes' files), is a conflict and nothing changes.
func (r *OutputRemover) RemoveOutput(ctx context.Context, userID, id string) (domain.LongVideo, error) {
	v, err := NewReader(r.store).find(ctx, userID, id)
	if err != nil {
		return domain.LongVideo{}, err
	}
	if g := v.Regenerating; g != nil {
		return domain.LongVideo{}, fmt.Errorf("%w: video %s is regenerating scene %d (revision %d); cancel it or wait for it to end",
			domain.ErrConflict, v.ID, g.SceneNumber, g.Revision)
	}
	wasRemoved := v.Files.Removal == domain.RemovalRemoved
	err = media.RemoveFiles(ctx, r.objects, media.FilesOf{What: "video " + v.ID, Status: v.Status, Files: v.Files,
		Prefix: media.LongVideoPrefix(v.ID), CDN: r.cdn, Log: r.settings.Log, Mark: func(ctx context.Context, rm domain.Removal) error {
			return r.store.SetLongVideoRemoval(ctx, v.ID, rm, domain.Now(r.settings.Now))
		}})
	if err != nil {
		return domain.LongVideo{}, err
	}
	if !wasRemoved {
		domain.Logger(r.settings.Log).InfoContext(ctx, "long video files deleted", "user_id", userID, "video_id", v.ID)
	}
	read, err := r.store.GetLongVideo(ctx, v.ID)
	if err != nil {
		return domain.LongVideo{}, fmt.Errorf("reread %s: %w", v.ID, err)
	}
	return read, nil
}
