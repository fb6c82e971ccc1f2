package longstory

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/mediagen-dev/mediagen/shared/domain"
	"github.com/mediagen-dev/mediagen/shared/store"
)

// find reads a caller's video; another owner's is not found.
func (s *Service) find(ctx context.Context, userID, id string) (domain.LongVideo, error) {
	if _, err := uuid.Parse(id); err != nil || len(id) != 36 {
		return domain.LongVideo{}, fmt.Errorf("%w: video id %q is not a UUID", domain.ErrInvalid, truncate(id, 64))
	}
	v, err := s.Store.GetLongVideo(ctx, strings.ToLower(id))
	if err != nil {
		return domain.LongVideo{}, err
	}
	if v.UserID != userID {
		return domain.LongVideo{}, fmt.Errorf("long video %s: %w", id, domain.ErrNotFound)
	}
	return v, nil
}

// Lookup finds a caller's video.
func (s *Service) Lookup(ctx context.Context, userID, id string) (domain.LongVideo, error) {
	return s.find(ctx, userID, id)
}

// List pages through a caller's videos, newest first.
func (s *Service) List(ctx context.Context, q store.ListQuery) (store.Page[domain.LongVideo], error) {
	return s.Store.ListLongVideos(ctx, q)
}
