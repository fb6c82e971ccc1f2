package sqlitestore

import (
	"context"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// The methods here list the work a stopped local runtime left in flight, so
// that its restart resumes it. They are not part of store.Store: the
// production store (DynamoDB) would answer them with a Scan, and only the
// local runtime asks.

// ProcessingGenerations lists up to limit generations still processing,
// oldest first.
func (s *Store) ProcessingGenerations(ctx context.Context, limit int) ([]domain.Generation, error) {
	return s.queryGenerations(ctx, generationColumns, `WHERE status = ? ORDER BY created_at LIMIT ?`, string(domain.StatusProcessing), limit)
}

// ProcessingLongVideos lists up to limit long videos still processing,
// oldest first.
func (s *Store) ProcessingLongVideos(ctx context.Context, limit int) ([]domain.LongVideo, error) {
	return s.queryLongVideos(ctx, `WHERE status = ? ORDER BY created_at LIMIT ?`, string(domain.StatusProcessing), limit)
}
