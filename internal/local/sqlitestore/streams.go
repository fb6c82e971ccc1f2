package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/store"
)

// changeStreams applies change to userID's stream leases in one
// transaction; an account left with none loses its row.
func (s *Store) changeStreams(ctx context.Context, userID string, change func(store.StreamLeases)) error {
	return s.tx(ctx, "streams of "+userID, func(tx *sql.Tx) error {
		leases := store.StreamLeases{}
		var raw string
		err := tx.QueryRowContext(ctx, `SELECT leases FROM stream_leases WHERE user_id = ?`, userID).Scan(&raw)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return fmt.Errorf("read streams of %s: %w", userID, err)
		default:
			if err := json.Unmarshal([]byte(raw), &leases); err != nil {
				return fmt.Errorf("read streams of %s: %w", userID, err)
			}
		}
		change(leases)
		if len(leases) == 0 {
			_, err = tx.ExecContext(ctx, `DELETE FROM stream_leases WHERE user_id = ?`, userID)
		} else {
			b, merr := json.Marshal(leases)
			if merr != nil {
				return fmt.Errorf("streams of %s: %w", userID, merr)
			}
			_, err = tx.ExecContext(ctx, `INSERT INTO stream_leases (user_id, leases) VALUES (?, ?)
				ON CONFLICT(user_id) DO UPDATE SET leases = excluded.leases`, userID, string(b))
		}
		if err != nil {
			return fmt.Errorf("write streams of %s: %w", userID, err)
		}
		return nil
	})
}

func (s *Store) OpenStream(ctx context.Context, userID, stream string, limit int, at, expires time.Time) (bool, error) {
	opened := false
	err := s.changeStreams(ctx, userID, func(l store.StreamLeases) { opened = l.Open(stream, limit, at, expires) })
	return opened, err
}

func (s *Store) CloseStream(ctx context.Context, userID, stream string) error {
	return s.changeStreams(ctx, userID, func(l store.StreamLeases) { delete(l, stream) })
}
