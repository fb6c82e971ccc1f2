package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

func (s *Store) ClaimPoll(ctx context.Context, uuid string, attempt int, now, until time.Time) (bool, int, error) {
	var exists int
	err := s.w.QueryRowContext(ctx, `SELECT 1 FROM generations WHERE uuid = ?`, uuid).Scan(&exists)
	if errors.Is(err, sql.ErrNoRows) {
		return false, 0, fmt.Errorf("claim poll of %s: %w", uuid, domain.ErrNotFound)
	}
	if err != nil {
		return false, 0, fmt.Errorf("claim poll of %s: %w", uuid, err)
	}
	res, err := s.w.ExecContext(ctx, `INSERT INTO poll_claims (uuid, attempt, lease_until) VALUES (?, ?, ?)
		ON CONFLICT(uuid) DO UPDATE SET attempt = excluded.attempt, lease_until = excluded.lease_until
		WHERE poll_claims.attempt < excluded.attempt
		   OR (poll_claims.attempt = excluded.attempt AND poll_claims.lease_until <= ?)`,
		uuid, attempt, formatTime(until), formatTime(now))
	if err != nil {
		return false, 0, fmt.Errorf("claim poll of %s: %w", uuid, err)
	}
	if n, _ := res.RowsAffected(); n > 0 {
		return true, attempt, nil
	}
	var holder int
	if err := s.w.QueryRowContext(ctx, `SELECT attempt FROM poll_claims WHERE uuid = ?`, uuid).Scan(&holder); err != nil {
		return false, 0, fmt.Errorf("claim poll of %s: %w", uuid, err)
	}
	return false, holder, nil
}
