package longform

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/store"
)

// VideoReader is what reading videos needs from the store.
type VideoReader interface {
	GetLongVideo(ctx context.Context, id string) (domain.LongVideo, error)
	ListLongVideos(ctx context.Context, q store.ListQuery) (store.Page[domain.LongVideo], error)
}

// Reader reads a caller's videos: the status and list routes' use case.
type Reader struct{ store VideoReader }

// NewReader reads from store.
func NewReader(store VideoReader) *Reader { return &Reader{store: store} }

// find reads a caller's video; another owner's is not found.
func (r *Reader) find(ctx context.Context, userID, id string) (domain.LongVideo, error) {
	if _, err := uuid.Parse(id); err != nil || len(id) != 36 {
		return domain.LongVideo{}, fmt.Errorf("%w: video id %q is not a UUID", domain.ErrInvalid, truncate(id, 64))
	}
	v, err := r.store.GetLongVideo(ctx, strings.ToLower(id))
	if err != nil {
		return domain.LongVideo{}, err
	}
	if err := v.Work().OwnedBy(userID); err != nil {
		return domain.LongVideo{}, err
	}
	return v, nil
}

// Lookup finds a caller's video.
func (r *Reader) Lookup(ctx context.Context, userID, id string) (domain.LongVideo, error) {
	return r.find(ctx, userID, id)
}

// List pages through a caller's videos, newest first.
func (r *Reader) List(ctx context.Context, q store.ListQuery) (store.Page[domain.LongVideo], error) {
	return r.store.ListLongVideos(ctx, q)
}
