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

// OutputRemover deletes videos' stored files (the final video, the
// scenes' clips and the narration): the delete-output route's use case
// (media.Outputs, shared with generations). It needs the store and the
// bucket, nothing else.
type OutputRemover struct {
	outputs media.Outputs[domain.LongVideo]
}

// NewOutputRemover deletes from objects, invalidates the deleted files at
// cdn (nil: nothing caches them) and records it in store.
func NewOutputRemover(store OutputStore, objects media.Objects, cdn media.Invalidator, settings Settings) *OutputRemover {
	return &OutputRemover{outputs: media.Outputs[domain.LongVideo]{
		Find: NewReader(store).find, Get: store.GetLongVideo, Prefix: media.LongVideoPrefix,
		InUse: regenerating, SetRemoval: store.SetLongVideoRemoval, Objects: objects, CDN: cdn, Log: settings.Log, Now: settings.Now}}
}

// RemoveOutput deletes every file stored for a caller's final video and
// answers the record, removed (media.Outputs.Remove). A video with a scene
// regenerate running (which reuses the other scenes' files) is a conflict
// and nothing changes.
func (r *OutputRemover) RemoveOutput(ctx context.Context, userID, id string) (domain.LongVideo, error) {
	return r.outputs.Remove(ctx, userID, id)
}

// regenerating is a conflict while a scene regenerate runs on the video:
// it reuses the other scenes' files.
func regenerating(v domain.LongVideo) error {
	if g := v.Regenerating; g != nil {
		return fmt.Errorf("%w: video %s is regenerating scene %d (revision %d); cancel it or wait for it to end",
			domain.ErrConflict, v.ID, g.SceneNumber, g.Revision)
	}
	return nil
}
