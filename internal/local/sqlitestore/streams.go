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

// storedLease is a stream lease as the stream_leases row holds it (JSON,
// by the record the stream follows). A row written before leases had
// owners holds each lease's expiry alone: such a lease counts, has no
// owner and lapses at its expiry.
type storedLease struct {
	Owner   string    `json:"owner"`
	Expires time.Time `json:"expires"`
}

// querier is a transaction or the database.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// readStreams reads userID's stream leases (none: no row).
func readStreams(ctx context.Context, q querier, userID string) (store.StreamLeases, error) {
	leases := store.StreamLeases{}
	var raw string
	err := q.QueryRowContext(ctx, `SELECT leases FROM stream_leases WHERE user_id = ?`, userID).Scan(&raw)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return leases, nil
	case err != nil:
		return nil, fmt.Errorf("read streams of %s: %w", userID, err)
	}
	var stored map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &stored); err != nil {
		return nil, fmt.Errorf("read streams of %s: %w", userID, err)
	}
	for id, v := range stored {
		var l storedLease
		if err := json.Unmarshal(v, &l); err != nil {
			// Before owners: the expiry alone.
			if err := json.Unmarshal(v, &l.Expires); err != nil {
				return nil, fmt.Errorf("read stream lease %s of %s: %w", id, userID, err)
			}
		}
		leases[id] = store.StreamLease{Owner: l.Owner, Expires: l.Expires}
	}
	return leases, nil
}

// changeStreams applies change to userID's stream leases in one
// transaction; an account left with none loses its row.
func (s *Store) changeStreams(ctx context.Context, userID string, change func(store.StreamLeases)) error {
	return s.tx(ctx, "streams of "+userID, func(tx *sql.Tx) error {
		leases, err := readStreams(ctx, tx, userID)
		if err != nil {
			return err
		}
		change(leases)
		if len(leases) == 0 {
			_, err = tx.ExecContext(ctx, `DELETE FROM stream_leases WHERE user_id = ?`, userID)
		} else {
			stored := make(map[string]storedLease, len(leases))
			for id, l := range leases {
				stored[id] = storedLease{Owner: l.Owner, Expires: l.Expires}
			}
			b, merr := json.Marshal(stored)
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

func (s *Store) OpenStream(ctx context.Context, userID, stream, owner string, limit int, at, expires time.Time) (bool, error) {
	opened := false
	err := s.changeStreams(ctx, userID, func(l store.StreamLeases) { opened = l.Open(stream, owner, limit, at, expires) })
	return opened, err
}

func (s *Store) HoldsStream(ctx context.Context, userID, stream, owner string) (bool, error) {
	leases, err := readStreams(ctx, s.r, userID)
	if err != nil {
		return false, err
	}
	return leases.Holds(stream, owner), nil
}

func (s *Store) CloseStream(ctx context.Context, userID, stream, owner string) error {
	return s.changeStreams(ctx, userID, func(l store.StreamLeases) { l.Close(stream, owner) })
}
