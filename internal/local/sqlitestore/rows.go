package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// The records (generations, long videos, API keys, holds) are rows read,
// found and created alike: these helpers do it once for every record type.

// queryRows runs a read query and makes a record of each row with row,
// which scans it. A failed query or read is "<what>: …".
func queryRows[T any](ctx context.Context, s *Store, what, query string, args []any, row func(*sql.Rows) (T, error)) ([]T, error) {
	rows, err := s.rs.query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		rec, err := row(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

// firstOf is the first of the records a lookup found; none is
// domain.ErrNotFound, named what.
func firstOf[T any](recs []T, err error, what string) (T, error) {
	var zero T
	if err != nil {
		return zero, err
	}
	if len(recs) == 0 {
		return zero, fmt.Errorf("%s: %w", what, domain.ErrNotFound)
	}
	return recs[0], nil
}

// insertNew runs an INSERT … ON CONFLICT DO NOTHING: a row it did not
// insert is domain.ErrAlreadyExists. what names the write in errors
// ("create account <user_id>").
func (s *Store) insertNew(ctx context.Context, what, query string, args ...any) error {
	res, err := s.w.ExecContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%s: %w", what, domain.ErrAlreadyExists)
	}
	return nil
}

// parseRecordTimes parses a record's stored creation, update and deadline
// times.
func parseRecordTimes(created, updated, deadline string) (c, u, d time.Time, err error) {
	if c, err = parseTime(created); err != nil {
		return
	}
	if u, err = parseTime(updated); err != nil {
		return
	}
	d, err = parseTime(deadline)
	return
}
