package generation

import (
	"context"
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
// route's use case (media.Outputs, shared with long videos). It needs the
// store and the bucket, nothing upstream.
type OutputRemover struct {
	outputs media.Outputs[domain.Generation]
}

// NewOutputRemover deletes from objects, invalidates the deleted files at
// cdn (nil: nothing caches them) and records it in store.
func NewOutputRemover(store OutputStore, objects media.Objects, cdn media.Invalidator, settings Settings) *OutputRemover {
	return &OutputRemover{outputs: media.Outputs[domain.Generation]{
		Find: NewReader(store, nil, nil).Lookup, Get: store.GetGeneration, Prefix: media.GenerationPrefix,
		SetRemoval: store.SetGenerationRemoval, Objects: objects, CDN: cdn, Log: settings.Log, Now: settings.Now}}
}

// RemoveOutput deletes every file stored for a caller's final generation
// and answers the record, removed (media.Outputs.Remove).
func (r *OutputRemover) RemoveOutput(ctx context.Context, userID, id string) (domain.Generation, error) {
	return r.outputs.Remove(ctx, userID, id)
}
