package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// formatOptionalTime stores a zero time as an empty string.
func formatOptionalTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return formatTime(t)
}

// storedFiles reads the output_expires_at, data_removal and finishing
// columns.
func storedFiles(expires, removal string, finishing bool) (domain.StoredFiles, error) {
	f := domain.StoredFiles{Removal: domain.Removal(removal), Finishing: finishing}
	if expires == "" {
		return f, nil
	}
	var err error
	f.ExpiresAt, err = parseTime(expires)
	return f, err
}

// setRemoval is SetGenerationRemoval and SetLongVideoRemoval on table: one
// conditional UPDATE, then a read to say why it changed nothing. idle, when
// set, is a further condition of the removal's start (a long video's: no
// regenerate runs).
func (s *Store) setRemoval(ctx context.Context, table, keyCol, key string, r domain.Removal, at time.Time, idle string) error {
	var cond string
	var args []any
	switch r {
	case domain.RemovalRemoving:
		cond, args = `status <> ? AND data_removal <> ?`, []any{string(domain.StatusProcessing), string(domain.RemovalRemoved)}
		if idle != "" {
			cond += " AND " + idle
		}
	case domain.RemovalRemoved:
		cond, args = `data_removal IN (?, ?)`, []any{string(domain.RemovalRemoving), string(domain.RemovalRemoved)}
	default:
		return fmt.Errorf("set removal of %s %s to %q: %w", table, key, r, domain.ErrInvalid)
	}
	res, err := s.w.ExecContext(ctx, `UPDATE `+table+` SET data_removal = ?, updated_at = ? WHERE `+keyCol+` = ? AND `+cond,
		append([]any{string(r), formatTime(at), key}, args...)...)
	if err != nil {
		return fmt.Errorf("set removal of %s %s: %w", table, key, err)
	}
	if n, _ := res.RowsAffected(); n > 0 {
		return nil
	}
	var status, removal string
	err = s.w.QueryRowContext(ctx, `SELECT status, data_removal FROM `+table+` WHERE `+keyCol+` = ?`, key).Scan(&status, &removal)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("set removal of %s %s: %w", table, key, domain.ErrNotFound)
	case err != nil:
		return fmt.Errorf("set removal of %s %s: %w", table, key, err)
	case r == domain.RemovalRemoving && domain.Removal(removal) == domain.RemovalRemoved:
		return nil
	}
	return fmt.Errorf("set removal of %s %s to %s: status %s, removal %q: %w", table, key, r, status, removal, domain.ErrConflict)
}

func (s *Store) SetOutputRetention(ctx context.Context, userID string, days int) error {
	res, err := s.w.ExecContext(ctx, `UPDATE accounts SET output_retention_days = ? WHERE user_id = ?`, days, userID)
	if err != nil {
		return fmt.Errorf("set the retention of %s: %w", userID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("account %s: %w", userID, domain.ErrNotFound)
	}
	return nil
}
