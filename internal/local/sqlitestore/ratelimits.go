package sqlitestore

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/store"
)

// rateLimitTTL keeps a minute's counter a little past its minute.
const rateLimitTTL = 2 * time.Minute

// CountRequest counts in memory when this store keeps the data
// directory's counts (CountInProcess), else in the database, after taking
// the counts lock shared: a server counting in memory would not see these
// counts, so while one runs this is ErrDataDirInUse.
func (s *Store) CountRequest(ctx context.Context, userID string, at time.Time) (int, error) {
	window := store.MinuteWindow(at)
	// Expired counters go here, as DynamoDB's TTL removes them there: once a
	// minute is enough, since they expire by the minute.
	if undo, ok := s.purged.claim(window.Unix()); ok {
		if _, err := s.w.ExecContext(ctx, `DELETE FROM rate_limits WHERE expires_at < ?`, at.Unix()); err != nil {
			undo()
			return 0, fmt.Errorf("count request of %s: expire rate limits: %w", userID, err)
		}
		if s.mem != nil {
			s.mem.forget(window.Add(-time.Minute).Unix())
		}
	}
	if s.mem != nil {
		return s.countInMemory(ctx, userID, window)
	}
	if err := s.countLock.take(false); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		return 0, fmt.Errorf("count request of %s: %w", userID, err)
	}
	// One statement, atomic on its own: no BEGIN and COMMIT around it.
	var n int
	err := s.ws.queryRow(ctx, `INSERT INTO rate_limits (user_id, window, count, expires_at) VALUES (?, ?, 1, ?)
		ON CONFLICT(user_id, window) DO UPDATE SET count = count + 1 RETURNING count`,
		userID, formatTime(window), window.Add(rateLimitTTL).Unix()).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count request of %s: %w", userID, err)
	}
	return n, nil
}

// minuteMark remembers the last minute window in which a chore ran, so that
// it runs once per window however many requests come.
type minuteMark struct{ last atomic.Int64 }

// claim reports whether window (Unix seconds) is later than the last one
// claimed, and claims it; undo gives it back when the chore failed.
func (m *minuteMark) claim(window int64) (undo func(), ok bool) {
	last := m.last.Load()
	if window <= last || !m.last.CompareAndSwap(last, window) {
		return nil, false
	}
	return func() { m.last.CompareAndSwap(window, last) }, true
}
