package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// countsLockFile names the data directory's lock on its rate-limit counts:
// held shared by every store that counts in the database, exclusively by
// the one server that counts in its memory (CountInProcess).
const countsLockFile = "counts.lock"

// ErrDataDirInUse is a data directory whose rate-limit counts another
// store keeps: a server counting in memory, or, for a server, any other
// store counting there.
var ErrDataDirInUse = errors.New("the data directory's rate-limit counts are in use by another store")

// countLock is this store's hold on countsLockFile, taken once and kept
// until Close (the kernel releases it if the process dies).
type countLock struct {
	path      string
	mu        sync.Mutex
	f         *os.File
	exclusive bool
}

// take holds the lock, shared or exclusive, unless this store already
// holds it; another process's (or store's) conflicting hold is
// ErrDataDirInUse. Where files cannot be locked (not unix) it is
// errors.ErrUnsupported.
func (l *countLock) take(exclusive bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.f != nil && (l.exclusive || !exclusive):
		return nil
	case l.f != nil:
		// flock would convert the shared hold by dropping it first.
		return errors.New("this store counts in the database already")
	}
	f, err := os.OpenFile(l.path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("open %s: %w", l.path, err)
	}
	if err := lockFile(f, exclusive); err != nil {
		f.Close()
		return err
	}
	l.f, l.exclusive = f, exclusive
	return nil
}

func (l *countLock) release() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close() // closing the file drops its lock
	l.f = nil
	return err
}

// memCounts are the rate-limit counts of a server that holds the data
// directory's counts exclusively: the answers come from memory, and the
// database keeps, for each counter, a value never below what was
// answered (see countInMemory).
type memCounts struct {
	mu sync.Mutex
	m  map[counterKey]*counter
}

type counterKey struct {
	user   string
	window int64 // Unix seconds of the minute
}

type counter struct {
	mu     sync.Mutex
	loaded bool
	// count is the requests counted; stored is the database's value.
	count, stored int
}

func newMemCounts() *memCounts { return &memCounts{m: map[counterKey]*counter{}} }

func (m *memCounts) counter(k counterKey) *counter {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.m[k]
	if !ok {
		c = &counter{}
		m.m[k] = c
	}
	return c
}

// forget drops the counters of windows before, which no request counts in
// any more. A late request for one reads the database's value again: at
// least what was answered, so never too few.
func (m *memCounts) forget(before int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.m {
		if k.window < before {
			delete(m.m, k)
		}
	}
}

// CountInProcess makes this store the data directory's one counter of
// requests, kept in memory: the server's (mediagen serve). It takes the
// directory's counts lock exclusively, so another server on the directory,
// or a store counting there already, is ErrDataDirInUse; the admin
// command, which counts nothing, opens the directory beside it as before.
// Call it before the first count. Where files cannot be locked it is
// errors.ErrUnsupported, and the store goes on counting in the database.
func (s *Store) CountInProcess() error {
	if err := s.countLock.take(true); err != nil {
		return fmt.Errorf("count requests in process: %w", err)
	}
	s.mem = newMemCounts()
	return nil
}

// countInMemory counts a request in memory. Before it answers a count, the
// database holds at least that count: when a count would pass the stored
// value, twice the count is stored first. So a restart after a crash reads
// a count never below what was answered (a client is never let past its
// limit; at worst it is refused early for the rest of that minute), while
// a busy account costs a write only each time its count doubles, not one
// per request. Close stores the exact counts.
func (s *Store) countInMemory(ctx context.Context, userID string, window time.Time) (int, error) {
	c := s.mem.counter(counterKey{user: userID, window: window.Unix()})
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.loaded {
		var n int
		err := s.ws.queryRow(ctx, `SELECT count FROM rate_limits WHERE user_id = ? AND window = ?`, userID, formatTime(window)).Scan(&n)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return 0, fmt.Errorf("count request of %s: read its count: %w", userID, err)
		}
		c.count, c.stored, c.loaded = n, n, true
	}
	n := c.count + 1
	if n > c.stored {
		if err := s.storeCount(ctx, userID, window, 2*n); err != nil {
			return 0, fmt.Errorf("count request of %s: %w", userID, err)
		}
		c.stored = 2 * n
	}
	c.count = n
	return n, nil
}

// storeCount sets a counter's row; only the exclusive holder writes them.
func (s *Store) storeCount(ctx context.Context, userID string, window time.Time, n int) error {
	_, err := s.ws.exec(ctx, `INSERT INTO rate_limits (user_id, window, count, expires_at) VALUES (?, ?, ?, ?)
		ON CONFLICT(user_id, window) DO UPDATE SET count = excluded.count`,
		userID, formatTime(window), n, window.Add(rateLimitTTL).Unix())
	return err
}

// flushCounts stores the exact counts kept in memory, so a restart goes on
// from them.
func (s *Store) flushCounts(ctx context.Context) error {
	if s.mem == nil {
		return nil
	}
	s.mem.mu.Lock()
	defer s.mem.mu.Unlock()
	var errs []error
	for k, c := range s.mem.m {
		c.mu.Lock()
		if c.loaded && c.count != c.stored {
			if err := s.storeCount(ctx, k.user, time.Unix(k.window, 0), c.count); err != nil {
				errs = append(errs, err)
			} else {
				c.stored = c.count
			}
		}
		c.mu.Unlock()
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("store the rate-limit counts: %w", err)
	}
	return nil
}

func newCountLock(dir string) *countLock {
	return &countLock{path: filepath.Join(dir, countsLockFile)}
}
